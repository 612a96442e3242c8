"""CLI command groups. Modules here import only typer and the standard library
at import time, so `xlatools --help` stays fast."""
