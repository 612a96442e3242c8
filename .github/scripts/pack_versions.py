"""Print GITHUB_OUTPUT lines for a repro pack's pack.json: `python=X.Y`, `requirements=jax==A jaxlib==B [plugins]`
and `references=V ...`, the jaxlib of each reference interpreter its outcomes were judged against (`repro run` needs
one interpreter of each, in order)."""

import json
import re
import sys

VERSION = r"[0-9][0-9A-Za-z.+!-]*"
meta = json.load(open(sys.argv[1]))
versions = meta.get("versions") or {}
# packs name the Python version `python_version` (older ones `python`)
python = ".".join((versions.get("python_version") or versions.get("python") or "3.11").split(".")[:2])
requirements = []
for name in ("jax", "jaxlib"):
    value = versions.get(name)
    if value and re.fullmatch(VERSION, value):
        requirements.append(f"{name}=={value}")
jaxlib = versions.get("jaxlib")
for plugin in versions.get("plugins") or []:
    if re.fullmatch(r"jax-(cuda|rocm)[0-9]+-plugin", plugin) and jaxlib:
        requirements.append(f"{plugin}=={jaxlib}")
if not re.fullmatch(r"3\.[0-9]+", python):
    python = "3.11"
references = [str(r.get("jaxlib") or "") for r in meta.get("reference_pythons") or []]
if not all(re.fullmatch(VERSION, v) for v in references):
    sys.exit(f"pack.json names a reference interpreter without a jaxlib version: {references}")
print(f"python={python}")
print(f"requirements={' '.join(requirements)}")
print(f"references={' '.join(references)}")
