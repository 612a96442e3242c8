"""Scripts run in the TARGET interpreter (standalone: jax + numpy only, no xlatools)."""
