"""Scripts run inside the TARGET interpreter (never imported by xlatools itself).

Each is a standalone file: the target may hold any jax/jaxlib (or none) and no
xlatools. They take a JSON request file and write a JSON answer file.
"""
