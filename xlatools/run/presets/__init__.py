"""Run presets: the catalog code (catalog.py) beside the shipped YAML definitions."""
