"""The profile's remote cache and executor: credentials present, the cache answers AND keeps
what it is given (a test object written and read back), the executor executes."""

from __future__ import annotations

from typing import Mapping

from xlatools.doctor.model import Check, fail


def remote_checks(profile, plan, env: Mapping[str, str]) -> list[Check]:
    if not plan.remote_cache and not plan.remote_executor:
        return []
    from xlatools.builder.plan import C_CA_BUNDLE
    from xlatools.errors import XlaToolsError
    from xlatools.remote.cachecheck import check_cache
    from xlatools.remote.credentials import resolve_credentials

    try:
        credentials = resolve_credentials(plan.credentials, plan.remote_cache, env)
    except XlaToolsError as exc:
        return [fail("remote credentials", exc.message, exc.hint or "fix bazel.remote_credentials")]
    ca = next((m.source for m in plan.mounts if m.target == C_CA_BUNDLE), None) or plan.env.get("SSL_CERT_FILE")
    instance = profile.bazel.remote_instance_name
    checks = []
    for name, url, executor in (("remote cache", plan.remote_cache, False),
                                ("remote executor", plan.remote_executor, True)):
        if url:
            found = check_cache(url, credentials, instance, ca, executor=executor)
            checks.append(Check(name, found.verdict, found.evidence, found.fix))
    return checks
