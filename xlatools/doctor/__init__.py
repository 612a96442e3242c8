"""`xlatools doctor` and `xlatools explain`: environment checks (each a small function
returning a typed Check) and build-log signatures kept as data (signatures.yaml)."""
