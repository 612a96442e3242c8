"""xlatools: build-and-debug orchestration for XLA-based projects."""

__version__ = "0.1.0"
