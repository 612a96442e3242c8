"""Replay dumped HLO modules in a target interpreter, compare with references, and
portable repro packs (see docs/replay.md).

Entry points: `xlatools.replay.execute.prepare/execute_replay` (the `replay` command)
and `xlatools.replay.repro.run_pack(pack, python, out_root) -> ReproResult`
(`repro run`, and `xlatools bisect --replay PACK`).
"""
