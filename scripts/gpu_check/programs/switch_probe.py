"""Times matmul_chain's `chain` compiled with each set of compile options, in one process (gpu-check perf).

argv[1]: a JSON list of {"name": ..., "options": {xla_option: value}}. For each: compile (jax's
`compiler_options`: the DebugOptions fields that XLA_FLAGS sets), one warm-up call, then GC_CALLS (5) calls,
each waited for. Prints one line per set, `GC-PROBE {"name", "min_s", "median_s"}` or with "error".
Which slowed setting a switch recovers is chosen from these numbers before `bisect flags` runs.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from matmul_chain import chain, inputs  # noqa: E402


def main():
    calls = int(os.environ.get("GC_CALLS", "5"))
    a, b = inputs()
    lowered = chain.lower(a, b)
    for config in json.loads(sys.argv[1]):
        answer = {"name": config["name"]}
        try:
            compiled = lowered.compile(compiler_options=config["options"])
            compiled(a, b).block_until_ready()
            times = []
            for _ in range(calls):
                begun = time.perf_counter()
                compiled(a, b).block_until_ready()
                times.append(time.perf_counter() - begun)
            answer.update(min_s=min(times), median_s=sorted(times)[calls // 2])
        except Exception as exc:  # an option this jaxlib does not take: said, the others still measured
            answer["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        print("GC-PROBE " + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
