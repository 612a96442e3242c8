"""Synthetic per-pass dump pairs of any size, for the diff benchmark and the memory test.

Side A numbers modules 0000, 0002, ... (jaxlib 0.10.x style), side B 0000, 0001, ...
(0.4.30 style), so matching must survive renumbering. B equals A except in one module,
where one instruction changes opcode from pass step `diverge_at` on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_LINE = '  %{op}.{i} = f32[128,128]{{1,0}} {op}(%p.{a}, %p.{b}), metadata={{op_name="jit(f)/{op}" source_file="model.py" source_line={i}}}\n'


@dataclass(frozen=True)
class SyntheticPair:
    a: Path
    b: Path
    files_per_side: int
    bytes_per_side: int
    changed_module: str
    diverge_pass: str


def _module_text(name: str, lines: int, change_from: int | None) -> str:
    body = [
        f"HloModule {name}, entry_computation_layout={{(f32[128,128]{{1,0}})->f32[128,128]{{1,0}}}}\n\n",
        "ENTRY %main.1 (p.0: f32[128,128]) -> f32[128,128] {\n",
        "  %p.0 = f32[128,128]{1,0} parameter(0)\n",
    ]
    for i in range(1, lines):
        op = "multiply" if change_from is not None and i == change_from else "add"
        body.append(_LINE.format(op=op, i=i, a=max(i - 2, 0), b=i - 1))
    body.append(f"  ROOT %r.{lines} = f32[128,128]{{1,0}} copy(%add.{lines - 1})\n}}\n")
    return "".join(body)


def _write_side(
    root: Path, modules: int, steps: int, lines: int, stride: int, changed: int | None, diverge_at: int
) -> tuple[int, int]:
    root.mkdir(parents=True)
    files = size = 0

    def put(name: str, text: str) -> None:
        nonlocal files, size
        data = text.encode()
        (root / name).write_bytes(data)
        files, size = files + 1, size + len(data)

    for m in range(modules):
        name = f"jit_step_{m}"
        prefix = f"module_{m * stride:04d}.{name}"
        put(f"{prefix}.before_optimizations.txt", _module_text(name, lines, None))
        for s in range(steps):
            # each pass "grows" the module by one instruction: the steps differ from each other
            change = 1 if changed == m and s >= diverge_at else None
            put(
                f"{prefix}.{s:04d}.pipeline.after_pass-{s}.before_pass-{s + 1}.txt",
                _module_text(name, lines + s, change),
            )
        final = 1 if changed == m else None
        put(f"{prefix}.cpu_after_optimizations.txt", _module_text(name, lines + steps, final))
    return files, size


def make_pair(
    root: Path, modules: int = 100, steps: int = 98, lines: int = 500, changed: int = 7, diverge_at: int = 40
) -> SyntheticPair:
    """Two dump folders under `root` (a/ and b/); each holds modules * (steps + 2) files of about
    `lines` * 110 bytes. Defaults: 10,000 files and about 0.55 GB per side."""
    files, size = _write_side(Path(root) / "a", modules, steps, lines, 2, None, diverge_at)
    _write_side(Path(root) / "b", modules, steps, lines, 1, changed, diverge_at)
    return SyntheticPair(Path(root) / "a", Path(root) / "b", files, size, f"jit_step_{changed}", f"pass-{diverge_at}")
