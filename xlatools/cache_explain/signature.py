"""Two argument signatures of one jitted function, part by part (pure)."""

from __future__ import annotations

from xlatools.records.cache_report import Cause
from xlatools.records.compiles import ArgPart

_FIELDS = (("shape", "shape"), ("dtype", "dtype"), ("weak_type", "weak type"), ("sharding", "sharding"))


def signature_causes(before: list[ArgPart], after: list[ArgPart]) -> list[Cause]:
    """Every argument leaf or static argument that differs, in the order of `after`'s arguments."""
    old, new = {p.path: p for p in before}, {p.path: p for p in after}
    causes = []
    for path in [*new, *(p for p in old if p not in new)]:
        a, b = old.get(path), new.get(path)
        if a is None or b is None:
            causes.append(_added_or_removed(path, a, b))
        elif a.static is not None or b.static is not None:
            if (a.static, a.static_type) != (b.static, b.static_type):
                causes.append(
                    Cause(
                        part="static argument",
                        detail=f"static argument {path}: {a.describe()} -> {b.describe()}",
                        before=a.static,
                        after=b.static,
                    )
                )
        else:
            causes += _leaf_causes(path, a, b)
    return causes


def _added_or_removed(path: str, a: ArgPart | None, b: ArgPart | None) -> Cause:
    if a is None:
        assert b is not None
        return Cause(part="arguments", detail=f"argument {path} is new: {b.describe()}", after=b.describe())
    return Cause(part="arguments", detail=f"argument {path} is gone (was {a.describe()})", before=a.describe())


def _leaf_causes(path: str, a: ArgPart, b: ArgPart) -> list[Cause]:
    causes = []
    for key, word in _FIELDS:
        x, y = getattr(a, key), getattr(b, key)
        if key == "sharding" and None in (x, y):
            continue  # a host value (numpy, Python) has none: jax places it, it is not part of the signature
        if x != y:
            causes.append(Cause(part=word, detail=f"argument {path}: {word} {x} -> {y}", before=str(x), after=str(y)))
    return causes
