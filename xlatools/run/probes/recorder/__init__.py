"""The argument recorder: its sitecustomize.py runs in the TARGET interpreter; this file only makes the folder a package,
so that a built wheel ships it (setuptools finds packages by their __init__.py)."""
