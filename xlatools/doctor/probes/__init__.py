"""Scripts run inside the TARGET interpreter (never imported by xlatools itself)."""
