"""HLO text and XLA dump-file names, read in one place (pure: no jax, no numpy).

`grammar`: instruction lines, computations, brackets and strings, attributes.
`dump_names`: what an XLA dump file's name says (module, kind, pass step, platform, process).
"""
