"""Print `python=X.Y` and `requirements=jax==A jaxlib==B [plugins]` for a repro pack's pack.json (GITHUB_OUTPUT lines)."""

import json
import re
import sys

meta = json.load(open(sys.argv[1]))
versions = meta.get("versions") or {}
python = ".".join((versions.get("python") or "3.11").split(".")[:2])
requirements = []
for name in ("jax", "jaxlib"):
    value = versions.get(name)
    if value and re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", value):
        requirements.append(f"{name}=={value}")
jaxlib = versions.get("jaxlib")
for plugin in versions.get("plugins") or []:
    if re.fullmatch(r"jax-(cuda|rocm)[0-9]+-plugin", plugin) and jaxlib:
        requirements.append(f"{plugin}=={jaxlib}")
if not re.fullmatch(r"3\.[0-9]+", python):
    python = "3.11"
print(f"python={python}")
print(f"requirements={' '.join(requirements)}")
