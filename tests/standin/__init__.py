"""A stand-in for a GPU's TF32 on the CPU (tests only): see tf32.py."""
