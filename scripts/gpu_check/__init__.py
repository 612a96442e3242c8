"""GPU checks of xlatools (run through scripts/gpu-check.sh)."""
