"""Build-log signatures: a table kept as data (signatures.yaml beside this file, plus the
user's <config dir>/xlatools/signatures/*.yaml), and the scan that turns a log into hints."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import REGEX_ERRORS, UsageError

SHIPPED = Path(__file__).resolve().parent / "signatures.yaml"
FIELDS = ("id", "regex", "explanation", "fix", "link")
MAX_LINE = 4000  # a matched line is kept up to this length (bazel prints huge command lines)


@dataclass(frozen=True)
class Signature:
    id: str
    regex: re.Pattern
    explanation: str
    fix: str
    link: str
    origin: str  # the file that defined it


@dataclass(frozen=True)
class Hint:
    """A signature that matched: where, and what to do."""

    id: str
    explanation: str
    fix: str
    link: str
    line_number: int
    line: str


def user_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("xlatools")) / "signatures"


@dataclass
class SignatureShape:
    """One entry of a signatures file as YAML has it (checked by the records reader)."""

    id: str
    regex: str
    explanation: str
    fix: str
    link: str | None = None


@dataclass
class SignaturesShape:
    signatures: list[SignatureShape]


def _parse(path: Path) -> list[Signature]:
    from xlatools.records.base import validate
    from xlatools.yamlfile import YamlRefused, load_file

    try:
        data = load_file(path)
    except YamlRefused as exc:
        raise UsageError(
            f"cannot read signatures: {exc.problem.render()}", hint="fix the YAML, or remove the file"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping with a `signatures:` list", hint=f"see {SHIPPED} for the format")
    shape = validate(data, SignaturesShape, path, "signatures file", hint=f"see {SHIPPED} for the format")
    found = []
    for index, entry in enumerate(shape.signatures):
        where = f"{path} [signatures[{index}]]"
        empty = [name for name in FIELDS[:4] if not getattr(entry, name).strip()]
        if empty:
            raise UsageError(f"{where}: {', '.join(empty)} must not be empty", hint=f"see {SHIPPED}")
        try:
            pattern = re.compile(entry.regex)
        except REGEX_ERRORS as exc:
            raise UsageError(f"{where}: bad regex {entry.regex!r}: {exc}") from None
        found.append(Signature(entry.id, pattern, entry.explanation, entry.fix, entry.link or "", str(path)))
    return found


def load_signatures(extra_dirs: list[Path] | None = None) -> list[Signature]:
    """The shipped table, then the user's files in name order; a user id replaces a shipped one."""
    table: dict[str, Signature] = {s.id: s for s in _parse(SHIPPED)}
    for directory in extra_dirs if extra_dirs is not None else [user_dir()]:
        if directory.is_dir():
            for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
                table.update({s.id: s for s in _parse(path)})
    return list(table.values())


def _first_in_block(signature: Signature, block: str) -> tuple[int, str] | None:
    """(offset of the line start, line) of the first line of `block` that the signature matches.
    The search runs over the whole block (fast, in C); a match is kept only if its line matches on
    its own, so a pattern like `[^]]*` cannot join two lines."""
    pos = 0
    while (match := signature.regex.search(block, pos)) is not None:
        start = block.rfind("\n", 0, match.start()) + 1
        end = block.find("\n", start)
        end = len(block) if end == -1 else end
        line = block[start:end]
        if signature.regex.search(line):
            return start, line
        pos = end + 1
    return None


def scan_blocks(blocks, signatures: list[Signature]) -> list[Hint]:
    """The first matching line of each signature, in log order. `blocks`: text ending at line ends."""
    pending = list(signatures)
    hints: list[Hint] = []
    first_line = 1
    for block in blocks:
        if not pending:
            break
        for signature in list(pending):
            found = _first_in_block(signature, block)
            if found is not None:
                pending.remove(signature)
                number = first_line + block.count("\n", 0, found[0])
                hints.append(
                    Hint(
                        signature.id,
                        signature.explanation,
                        signature.fix,
                        signature.link,
                        number,
                        found[1].strip()[:MAX_LINE],
                    )
                )
        first_line += block.count("\n")
    return sorted(hints, key=lambda h: h.line_number)


def scan_lines(lines, signatures: list[Signature]) -> list[Hint]:
    return scan_blocks(["".join(line.rstrip("\n") + "\n" for line in lines)], signatures)


def _blocks(handle, size: int = 8 << 20):
    """The file in blocks of about `size` characters, each ending at a line end (build logs reach GBs)."""
    rest = ""
    while chunk := handle.read(size):
        chunk = rest + chunk
        cut = chunk.rfind("\n") + 1
        if cut == 0:
            rest = chunk
            continue
        rest = chunk[cut:]
        yield chunk[:cut]
    if rest:
        yield rest + "\n"


def scan_log(path: Path, signatures: list[Signature] | None = None) -> list[Hint]:
    """Scan a log file block by block."""
    table = load_signatures() if signatures is None else signatures
    with open(path, encoding="utf-8", errors="replace") as handle:
        return scan_blocks(_blocks(handle), table)


def explain_failure(log: Path) -> tuple[list[dict[str, str | int]], str]:
    """For a failed build: the hints as manifest entries (Hint's fields as JSON), and as text for the
    error message. A broken user signature file is reported in the text, never hides the build's own failure."""
    from xlatools.records.base import to_json

    try:
        hints = scan_log(log)
    except (UsageError, OSError) as exc:
        return [], f"(failure signatures not scanned: {getattr(exc, 'message', exc)})"
    text = "".join(
        f"\n  [{h.id}] {h.explanation}\n    fix: {h.fix}" + (f"\n    see: {h.link}" if h.link else "") for h in hints
    )
    return [to_json(h) for h in hints], (f"known failure signature(s) in the log:{text}" if hints else "")
