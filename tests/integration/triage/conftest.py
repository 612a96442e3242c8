"""The triage tests share the bisect tests' release environments (made once, reused as for a user)."""

from tests.integration.bisect.conftest import bisect_cache, bx  # noqa: F401  (fixtures)
