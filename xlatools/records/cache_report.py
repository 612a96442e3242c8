"""What `xlatools explain-cache RUN_A [RUN_B]` found (docs/cache.md): each recompile of a run, and each compile
of run B that missed jax's persistent cache although run A had compiled it, with the parts that differ.

Every cause is a difference xlatools saw in what the two compiles recorded (or a fact of one of them: the
entry was not written, and jax's reason); `source` says whether the part is one jax itself hashed into its key
(`jax`) or one xlatools compared (`xlatools`: the argument signature, the function object, the HLO text, the
process index, the cache folder). When nothing recorded differs, the explanation says so (`known` false).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(kw_only=True)
class Cause:
    """One part that differs between the compile explained and the one it is compared with."""

    part: str  # shape, dtype, weak type, sharding, static argument, arguments, function object, constant,
    # program, jaxlib version, backend version, XLA flags, compile options, devices, process index,
    # cache directory, not written, entry gone, no new trace, jax caches, ...
    detail: str  # in words, with both values
    before: str | None = None  # the value in the compile compared with (run A's, or the earlier compile's)
    after: str | None = None  # the value in the compile explained
    source: Literal["jax", "xlatools"] = "xlatools"  # jax: a part of jax's own cache key differs


@dataclass(kw_only=True)
class Explanation:
    """Why one compile happened (a recompile), or missed the persistent cache (a miss)."""

    kind: Literal["recompile", "miss"]
    function: str
    where: str | None = None  # file:line of the function's definition
    process: int | None = None
    module: int  # the compile explained (the observer's module number in its process)
    compared_with: int | None = None  # the compile it is compared with (run A's, or an earlier one of the run)
    site: str | None = None  # file:line of the program's call
    seconds: float | None = None  # of the compile explained
    cache: str | None = None  # its persistent-cache state: hit, miss, off
    causes: list[Cause] = field(default_factory=list)
    known: bool = True  # False: nothing xlatools recorded differs (the explanation says what was compared)


@dataclass(kw_only=True)
class CacheReport:
    """The whole answer, for people (the command's text) and for CI (--json)."""

    run_a: str
    run_b: str | None = None
    recompiles: int = 0  # compiles of a function its process had compiled before (run B's, with two runs)
    misses: int = 0  # run B's persistent-cache misses of functions run A compiled
    explanations: list[Explanation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""  # one line: "nothing recompiled", "2 recompiles, 1 miss explained", ...
