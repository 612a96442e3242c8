"""A replay is the run's own module (issue 29 item 2), on a real flax program: the gradient of a multi-head
attention block. On jaxlib 0.10.2 its dumped text (and proto) go through jaxlib's HLO -> StableHLO import and
compile 274 instructions against the run's 279 (the softmax backward's multiply is folded differently), and differ
from the snapshot; `module.mlir` (its StableHLO) compiles the run's module. `--from auto` must try that form first
and agree with the snapshot bit for bit; `--from text` must say what differs, and its snapshot mismatch is no verdict
(exit 3, naming the module.mlir to replay instead).
Cost: one dumping run and two replays on the corpus venv (about 40 s, the flax import most of it).
"""

from __future__ import annotations

import json

from tests.helpers import bundles, run_cli
from tests.integration.corpus.conftest import corpus_python

PROGRAM = """import flax.linen as nn
import jax
import jax.numpy as jnp


class Attention(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)(x)


model = Attention()


@jax.jit
def grads(params, x):
    return jax.grad(lambda p: jnp.sum(model.apply(p, x) ** 2))(params)


x = jax.random.normal(jax.random.PRNGKey(0), (2, 6, 8))
params = model.init(jax.random.PRNGKey(1), x)
print(jax.tree_util.tree_reduce(lambda a, b: a + jnp.sum(b), grads(params, x), 0.0))
"""


def test_auto_replays_the_runs_own_module_bit_for_bit(tmp_path, corpus_env):
    python = corpus_python("0.10.2")
    (tmp_path / "prog.py").write_text(PROGRAM)
    ran = run_cli(
        "run",
        "prog.py",
        "--python",
        python,
        "--preset",
        "dump:hlo",
        "--preset",
        "dump:snapshots",
        "--out",
        "runs",
        cwd=tmp_path,
        env=corpus_env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    bundle = str(bundles(tmp_path / "runs")[0])

    def replay(*extra: str) -> tuple[int, dict]:
        done = run_cli(
            "replay",
            bundle,
            "--module",
            "jit_grads",
            "--python",
            python,
            "--atol",
            "0",
            "--rtol",
            "0",
            "--json",
            "--out",
            "replays",
            *extra,
            cwd=tmp_path,
            env=corpus_env,
            timeout=300,
        )
        return done.returncode, json.loads(done.stdout)["modules"][0]

    code, auto = replay()
    assert code == 0 and auto["outcome"] == "ok" and auto["compiled_as_run"] is True, auto
    assert [c["against"] for c in auto["comparisons"]] == ["snapshot"] and auto["comparisons"][0]["ok"]
    assert auto["runs"][0]["loaded_from"]["kind"] == "mlir"  # its StableHLO, tried first
    assert not any(n.startswith("from its ") for n in auto["notes"]), auto["notes"]  # and no other form was needed
    assert auto["runs"][0]["compile_options"] == {"xla_cpu_enable_fast_min_max": "false"}  # the run's .debug_options

    code, text = replay("--from", "text")
    assert code == 3 and text["outcome"] == "cannot-run" and text["compiled_as_run"] is False
    said = " ".join(text["notes"])
    assert "the replay compiled a different module than the run" in said and "not a verdict" in said
    assert "replay the module's StableHLO: `xlatools replay " in said and "jit_grads/module.mlir`" in said, said
