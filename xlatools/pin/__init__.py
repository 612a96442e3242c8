"""Pinning XLA (and TensorFlow for old JAX trees) by commit and verified sha256.

resolve: profile -> lock (commit, archive sha256) ; apply: lock -> JAX tree ;
verify: tree and archives agree with the lock. See docs/pinning.md.
"""
