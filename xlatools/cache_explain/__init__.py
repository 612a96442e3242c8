"""Why did it compile again: recompiles within a run and persistent-cache misses between runs, part by part
(`xlatools explain-cache`, docs/cache.md). Reads what the run's observer recorded (run/compile_events.py)."""
