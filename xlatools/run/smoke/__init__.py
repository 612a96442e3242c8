"""Built-in smoke programs, run as files in the target interpreter (see main.py)."""
