"""Remote build caches and executors: credentials (the one place that reads them), the
write-and-read-back check of a cache (doctor), and bazel's cache statistics from a build log."""
