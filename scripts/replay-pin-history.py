#!/usr/bin/env python3
"""Replay real jax-ml/jax pin bumps through `xlatools pin apply` and `pin verify`.

For a sample of upstream commits that changed the XLA (or TensorFlow) pin, per era:
  1. the PARENT commit's pin files are written to a temp dir;
  2. a lock is written by hand from the commit's NEW values and URL form (read here with plain
     regular expressions, not with xlatools' own readers);
  3. `xlatools pin apply` runs on the temp tree, and the result is compared byte for byte with
     the upstream commit's files (identical / differing / refused);
  4. `xlatools pin verify` runs on the upstream commit's own files with that lock
     (ok / inconsistent tree / false alarm / refused).

Needs a git clone (or bare snapshot) of jax-ml/jax: --mirror PATH or XLATOOLS_JAX_MIRROR.
Without one it prints why and exits 0 (nothing to check). Nothing from upstream is copied into
this repository: files are read with `git show` into temp dirs and deleted.

    python scripts/replay-pin-history.py --mirror ~/src/jax [--per-era 8] [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PIN_FILES = ("WORKSPACE", "third_party/xla/workspace.bzl", "third_party/xla/revision.bzl", "MODULE.bazel")
ERAS = (
    "tensorflow_workspace",
    "xla_workspace",
    "workspace_bzl",
    "revision_bzl",
    "api_tarball",
    "api_tarball_two_digests",
    "revision_bzl_module",
    "placeholder",
)
HEX40, HEX64 = r"[0-9a-f]{40}", r"[0-9a-f]{64}"


def git_dir(path: Path) -> Path | None:
    for candidate in (path / ".git", path):
        if (candidate / "objects").is_dir() and (candidate / "HEAD").is_file():
            return candidate
    return None


class Mirror:
    """Read-only access to the snapshot; file contents through one `git cat-file --batch`."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.batch = subprocess.Popen(
            ["git", f"--git-dir={directory}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.dir}", *args], check=True, capture_output=True, text=True
        ).stdout

    def show(self, spec: str) -> str | None:
        self.batch.stdin.write(spec.encode() + b"\n")
        self.batch.stdin.flush()
        header = self.batch.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            if len(header) >= 3:  # not a blob: skip its content
                self.batch.stdout.read(int(header[2]) + 1)
            return None
        data = self.batch.stdout.read(int(header[2]) + 1)[:-1]
        return data.decode("utf-8")

    def files(self, commit: str) -> dict[str, str | None]:
        return {name: self.show(f"{commit}:{name}") for name in PIN_FILES}


def _call_block(text: str | None, function: str, key: str, name: str) -> str | None:
    """The text of `function(... key = "name" ...)` up to its closing parenthesis (plain scanning)."""
    if text is None:
        return None
    for match in re.finditer(rf"\b{function}\(", text):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        block = text[match.start() : end + 1]
        if re.search(rf'\b{key}\s*=\s*"{re.escape(name)}"', block):
            return block
    return None


def _kw(block: str | None, key: str) -> str | None:
    found = re.search(rf'\b{key}\s*=\s*"([^"]*)"', block or "")
    return found.group(1) if found else None


def _urls(block: str | None) -> list[str]:
    found = re.search(r"\burls\s*=\s*\[(.*?)\]", block or "", re.S)
    return re.findall(r'"([^"]+)"', re.sub(r"#.*", "", found.group(1))) if found else []


def pins(files: dict[str, str | None]) -> dict:
    """The pinned values of one tree, and its era (by the files' shapes)."""
    revision, ws_bzl, module, workspace = (
        files["third_party/xla/revision.bzl"],
        files["third_party/xla/workspace.bzl"],
        files["MODULE.bazel"],
        files["WORKSPACE"],
    )
    holder = (
        revision if revision and "XLA_COMMIT" in revision else (ws_bzl if ws_bzl and "XLA_COMMIT =" in ws_bzl else None)
    )
    out: dict = {}
    if holder is not None:
        out["commit"] = re.search(rf'XLA_COMMIT = "({HEX40})"', holder).group(1)
        out["sha256"] = re.search(rf'XLA_SHA256 = "({HEX64})"', holder).group(1)
        api = ws_bzl is not None and "api.github.com/repos/openxla/xla/tarball" in ws_bzl
        override = _call_block(module, "archive_override", "module_name", "xla")
        if override:
            digest = base64.b64decode(_kw(override, "integrity").removeprefix("sha256-")).hex()
            out["module"] = {"urls": _urls(override), "strip_prefix": _kw(override, "strip_prefix"), "sha256": digest}
        if holder is ws_bzl:
            out["era"] = "workspace_bzl"
        elif api:
            out["era"] = "api_tarball_two_digests" if override else "api_tarball"
        elif ws_bzl and re.search(r"patch_file = \[\s*#", ws_bzl):
            out["era"] = "placeholder"
        else:
            out["era"] = "revision_bzl_module" if override else "revision_bzl"
        out["api"] = api
        return out
    for name, era in (("xla", "xla_workspace"), ("org_tensorflow", "tensorflow_workspace")):
        block = _call_block(workspace, "http_archive", "name", name)
        if block and _kw(block, "sha256"):
            urls = _urls(block)
            commit = re.search(HEX40, urls[0]) if urls else None
            return {
                "era": era,
                "commit": commit.group() if commit else None,
                "sha256": _kw(block, "sha256"),
                "strip_prefix": _kw(block, "strip_prefix"),
                "urls": urls,
            }
    return {}


def archive(urls, sha256, strip_prefix) -> dict:
    sri = "sha256-" + base64.b64encode(bytes.fromhex(sha256)).decode()
    return {"urls": list(urls), "sha256": sha256, "integrity": sri, "strip_prefix": strip_prefix}


def hand_written_lock(new: dict) -> dict:
    """The lock a developer would write for the commit: its values, in the URL form its tree uses."""
    commit = new["commit"]
    if new["era"] in ("xla_workspace", "tensorflow_workspace"):
        name = "xla" if new["era"] == "xla_workspace" else "tensorflow"
        main, others = archive(new["urls"], new["sha256"], new["strip_prefix"]), []
    else:
        name = "xla"
        if new["api"]:
            main = archive(
                [f"https://api.github.com/repos/openxla/xla/tarball/{commit}"],
                new["sha256"],
                f"openxla-xla-{commit[:7]}",
            )
        else:
            main = archive([f"https://github.com/openxla/xla/archive/{commit}.tar.gz"], new["sha256"], f"xla-{commit}")
        module = new.get("module")
        others = []
        if module and commit in (module["strip_prefix"] or "") and module["urls"] != main["urls"]:
            others.append(archive(module["urls"], module["sha256"], module["strip_prefix"]))
    entry = {"name": name, "kind": "archive", "commit": commit, **main, "patches": [], "other_archives": others}
    return {"lock_version": 2, "profile": None, "dependencies": {name: entry}}


def is_pure_bump(mirror: Mirror, commit: str) -> bool:
    """Every changed line of the pin files carries a pin value (a digest, a commit, a URL)."""
    diff = mirror.git("diff", "-U0", f"{commit}^", commit, "--", *PIN_FILES)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return bool(changed) and all(re.search(rf"{HEX40}|{HEX64}|sha256-", line) for line in changed)


def bumps(mirror: Mirror) -> dict[str, list[tuple[str, str, bool]]]:
    """era -> [(commit, date, pure)] of commits whose pin values differ from their parent's."""
    listing = mirror.git("log", "--no-merges", "--format=%H %cs", "--", *PIN_FILES).split("\n")
    found: dict[str, list] = defaultdict(list)
    for line in filter(None, listing):
        commit, date = line.split()
        try:
            new, old = pins(mirror.files(commit)), pins(mirror.files(f"{commit}^"))
        except (subprocess.CalledProcessError, AttributeError):
            continue
        keys = ("commit", "sha256", "module")
        if new and old and new["era"] and any(new.get(k) != old.get(k) for k in keys) and new.get("commit"):
            found[new["era"]].append((commit, date, None))
    return found


def spread(items: list, count: int) -> list:
    if count <= 0:
        return []
    if len(items) <= count:
        return items
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)] if count > 1 else items[:1]


def write_tree(root: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        if text is not None:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "xlatools", *args], capture_output=True, text=True, env=env, timeout=120
    )


def replay_one(mirror: Mirror, commit: str) -> dict:
    new_files, old_files = mirror.files(commit), mirror.files(f"{commit}^")
    new = pins(new_files)
    record = {
        "commit": commit,
        "era": new["era"],
        "parent_era": pins(old_files).get("era"),
        "pure": is_pure_bump(mirror, commit),
    }
    with tempfile.TemporaryDirectory(prefix="replay-pin-") as tmp:
        tmp = Path(tmp)
        lock = tmp / "xlatools.lock"
        lock.write_text(json.dumps(hand_written_lock(new), indent=2) + "\n")
        tree, own = tmp / "parent", tmp / "upstream"
        write_tree(tree, old_files)
        write_tree(own, new_files)
        done = cli("pin", "apply", "--source", str(tree), "--lock", str(lock), "--json")
        if done.returncode != 0:
            record["apply"], record["why"] = "refused", _error(done)
        else:
            differing = [n for n in PIN_FILES if _read(tree / n) != new_files[n]]
            record["apply"] = "differing" if differing else "identical"
            record["differing_files"] = differing
            record["warnings"] = json.loads(done.stdout)["warnings"]
        checked = cli("pin", "verify", "--source", str(own), "--lock", str(lock), "--json")
        findings = json.loads(checked.stdout).get("disagreements", []) if checked.returncode in (0, 1) else []
        if checked.returncode == 0:
            record["verify"] = "ok"
        elif checked.returncode == 1 and any("the tree itself is inconsistent" in f for f in findings):
            record["verify"], record["verify_findings"] = "inconsistent_tree", findings
        elif checked.returncode == 1:
            record["verify"], record["verify_findings"] = "false_alarm", findings
        else:
            record["verify"], record["verify_why"] = "refused", _error(checked)
    return record


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _error(done: subprocess.CompletedProcess) -> str:
    try:
        return json.loads(done.stdout)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return (done.stderr.strip().splitlines() or ["?"])[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--mirror",
        type=Path,
        default=os.environ.get("XLATOOLS_JAX_MIRROR"),
        help="a jax-ml/jax clone or git dir (default: $XLATOOLS_JAX_MIRROR)",
    )
    parser.add_argument("--per-era", type=int, default=8, help="commits sampled per era (pure bumps first)")
    parser.add_argument("--json", action="store_true", help="print every record as JSON on stdout")
    parser.add_argument("--verbose", action="store_true", help="print each commit's outcome")
    args = parser.parse_args(argv)
    directory = git_dir(Path(args.mirror).expanduser()) if args.mirror else None
    if directory is None:
        print(
            f"skipped: no jax-ml/jax snapshot at hand (pass --mirror PATH or set XLATOOLS_JAX_MIRROR)"
            f"{'; ' + str(args.mirror) + ' is not a git directory' if args.mirror else ''}",
            file=sys.stderr,
        )
        return 0
    mirror = Mirror(directory)
    found = bumps(mirror)
    records = []
    for era in ERAS:
        commits = [c for c, _, _ in found.get(era, [])]
        pure = [c for c in commits if is_pure_bump(mirror, c)]
        mixed = [c for c in commits if c not in set(pure)]
        # Mostly pure bumps (only pin values changed); a few where upstream edited more in the same commit.
        sample = spread(pure, args.per_era) + spread(mixed, max(1, args.per_era // 4))
        for commit in sample:
            record = replay_one(mirror, commit)
            record["differing_reason"] = differing_reason(record) if record["apply"] == "differing" else None
            record["bumps_in_era"], record["pure_in_era"] = len(commits), len(pure)
            records.append(record)
            if args.verbose:
                print(
                    f"{era:24} {commit[:10]} pure={record['pure']!s:5} apply={record['apply']:9} "
                    f"verify={record['verify']} {record.get('why', '')}{record.get('differing_files', '')}",
                    file=sys.stderr,
                )
    if args.json:
        print(json.dumps(records, indent=2))
    print(summary(records, found), file=sys.stderr if args.json else sys.stdout)
    return 0


def differing_reason(record: dict) -> str:
    if record["parent_era"] != record["era"]:
        return "era changed in the commit"
    if record["verify"] == "inconsistent_tree" and record["differing_files"] == ["MODULE.bazel"]:
        return "upstream left MODULE.bazel behind"
    if not record["pure"]:
        return "upstream edited more in the commit"
    return "unexplained"


def summary(records: list[dict], found: dict) -> str:
    lines = [
        f"{'era':24} {'bumps':>5} {'pure':>5} {'sample':>6} {'identical':>9} {'differing':>9} {'refused':>7}"
        "   verify on upstream's own tree"
    ]
    for era in ERAS:
        mine = [r for r in records if r["era"] == era]
        apply = Counter(r["apply"] for r in mine)
        verify = Counter(r["verify"] for r in mine)
        pure = mine[0]["pure_in_era"] if mine else 0
        lines.append(
            f"{era:24} {len(found.get(era, [])):5} {pure:5} {len(mine):6} {apply['identical']:9} "
            f"{apply['differing']:9} {apply['refused']:7}   " + ", ".join(f"{k} {v}" for k, v in sorted(verify.items()))
        )
    reasons = Counter(r["differing_reason"] for r in records if r["apply"] == "differing")
    lines.append("differing: " + (", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "none"))
    refused = Counter(
        "era changed in the commit (the parent tree fetches another form)"
        if r["parent_era"] != r["era"]
        else "unexplained"
        for r in records
        if r["apply"] == "refused"
    )
    lines.append("refused: " + (", ".join(f"{k}: {v}" for k, v in sorted(refused.items())) or "none"))
    lines.append(f"verify false alarms: {sum(r['verify'] == 'false_alarm' for r in records)}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
