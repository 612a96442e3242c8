"""Build-log signatures: a table kept as data (signatures.yaml beside this file, plus the
user's <config dir>/xlatools/signatures/*.yaml), and the scan that turns a log into hints."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from xlatools.errors import UsageError

SHIPPED = Path(__file__).resolve().parent / "signatures.yaml"
FIELDS = ("id", "regex", "explanation", "fix", "link")
MAX_LINE = 4000  # a log line longer than this is cut before matching (bazel prints huge command lines)


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

    def to_json(self) -> dict:
        return asdict(self)


def user_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("xlatools")) / "signatures"


def _parse(path: Path) -> list[Signature]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read signatures: {exc}", hint="fix the YAML, or remove the file") from None
    entries = data.get("signatures") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f"{path}: expected a mapping with a `signatures:` list", hint=f"see {SHIPPED} for the format")
    found = []
    for index, entry in enumerate(entries):
        where = f"{path} [signatures[{index}]]"
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry.get(k) for k in FIELDS[:4]):
            raise UsageError(f"{where}: each signature needs id, regex, explanation and fix (strings)",
                             hint=f"see {SHIPPED}")
        try:
            pattern = re.compile(entry["regex"])
        except re.error as exc:
            raise UsageError(f"{where}: bad regex {entry['regex']!r}: {exc}") from None
        found.append(Signature(entry["id"], pattern, entry["explanation"], entry["fix"], str(entry.get("link") or ""),
                               str(path)))
    return found


def load_signatures(extra_dirs: list[Path] | None = None) -> list[Signature]:
    """The shipped table, then the user's files in name order; a user id replaces a shipped one."""
    table: dict[str, Signature] = {s.id: s for s in _parse(SHIPPED)}
    for directory in extra_dirs if extra_dirs is not None else [user_dir()]:
        if directory.is_dir():
            for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
                table.update({s.id: s for s in _parse(path)})
    return list(table.values())


def scan_lines(lines, signatures: list[Signature]) -> list[Hint]:
    """The first matching line of each signature, in the order they appear in the log."""
    pending = list(signatures)
    hints: list[Hint] = []
    for number, line in enumerate(lines, start=1):
        if not pending:
            break
        text = line.rstrip("\n")[:MAX_LINE]
        for signature in [s for s in pending if s.regex.search(text)]:
            pending.remove(signature)
            hints.append(Hint(signature.id, signature.explanation, signature.fix, signature.link, number, text.strip()))
    return hints


def scan_log(path: Path, signatures: list[Signature] | None = None) -> list[Hint]:
    """Scan a log file (read as it streams: build logs reach hundreds of MB)."""
    table = load_signatures() if signatures is None else signatures
    with open(path, encoding="utf-8", errors="replace") as handle:
        return scan_lines(handle, table)


def explain_failure(log: Path) -> tuple[list[dict], str]:
    """For a failed build: the hints as manifest entries, and as text for the error message.
    A broken user signature file is reported in the text, never hides the build's own failure."""
    try:
        hints = scan_log(log)
    except (UsageError, OSError) as exc:
        return [], f"(failure signatures not scanned: {getattr(exc, 'message', exc)})"
    text = "".join(f"\n  [{h.id}] {h.explanation}\n    fix: {h.fix}" + (f"\n    see: {h.link}" if h.link else "")
                   for h in hints)
    return [h.to_json() for h in hints], (f"known failure signature(s) in the log:{text}" if hints else "")
