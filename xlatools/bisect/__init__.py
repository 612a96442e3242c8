"""Localize a regression: one search engine (good/bad/skip, resumable state file) over
jax releases, over XLA/JAX commits and over HLO passes. See docs/bisect.md."""
