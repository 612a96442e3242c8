"""Runs that stopped moving: every process's stacks, where each one is, the odd one out (docs/hangs.md)."""
