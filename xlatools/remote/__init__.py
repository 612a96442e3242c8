"""Remote build caches and executors: credentials (the one place that reads them) and the
private rc that hands them to bazel for one build, and bazel's cache statistics from a build log.
(doctor/checks_remote.py checks that a cache answers and keeps what it is given.)"""
