"""The hostile harness: the real `xlatools` CLI, as a subprocess, against bad input and faults.

    python -m scripts.hostile [--only CLASS ...] [--filter TEXT] [--jobs N] [--out DIR]

Each case names the command line, how to prepare its files, and what counts as handled
cleanly: the exit code, no traceback, a message, nothing half-written, no orphan process,
no secret in any file or output. See docs/hostile.md.
"""
