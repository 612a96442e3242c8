"""`xlatools repro pack|run` on a real run bundle: deterministic packs, moved packs, verdicts, unsafe packs."""

from __future__ import annotations

import io
import json
import shutil
import tarfile

import pytest

from tests.helpers import run_cli


@pytest.fixture(scope="module")
def packed(dumped, tmp_path_factory, replay_env):
    bundle, _ = dumped
    work = tmp_path_factory.mktemp("packs")
    results = []
    for name in ("a.tar.gz", "b.tar.gz"):
        result = run_cli(
            "repro",
            "pack",
            str(bundle),
            "-o",
            name,
            "--module",
            "jit_fn",
            "--json",
            "--out",
            "out",
            cwd=work,
            env=replay_env,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        results.append(json.loads(result.stdout))
    return work, results


def test_pack_is_deterministic_and_lists_its_hashes(packed):
    work, results = packed
    assert (work / "a.tar.gz").read_bytes() == (work / "b.tar.gz").read_bytes()
    assert results[0]["expected"] == {"0000 jit_fn": "ok"}  # keyed by id and name
    with tarfile.open(work / "a.tar.gz") as tar:
        names = tar.getnames()
        files = [n for n in names if tar.getmember(n).isfile()]
        assert files == sorted(files)
        assert all(tar.getmember(n).mtime == 315532800 for n in names)
        meta = json.loads(tar.extractfile("repro/pack.json").read())
    assert "repro/SHA256SUMS" in names and "repro/program/prog.py" in names
    assert meta["versions"]["jaxlib"] and meta["modules"][0]["fingerprint"]
    assert set(meta["modules"][0]["files"]) >= {"text", "proto", "snapshot"}


def test_moved_healthy_pack_has_nothing_to_reproduce_and_replays_the_same(packed, tmp_path, replay_env):
    work, _ = packed
    shutil.copy(work / "a.tar.gz", tmp_path / "moved.tar.gz")
    result = run_cli(
        "repro",
        "run",
        "moved.tar.gz",
        "--match",
        "fingerprint",
        "--json",
        "--out",
        "elsewhere",
        cwd=tmp_path,
        env=replay_env,
        timeout=300,
    )
    assert result.returncode == 5, result.stderr  # 5: the pack records no failure (its module ran ok)
    data = json.loads(result.stdout)
    assert data["outcome"] == "nothing-to-reproduce" and data["differences"] == []
    assert (
        data["reason"].startswith("the pack records no failure") and "replayed here: the same outcome" in data["reason"]
    )
    expected, got = data["modules"][0]["expected"], data["modules"][0]["got"]
    assert got["fingerprint"] == expected["fingerprint"] and got["outputs"] == expected["outputs"]
    assert (tmp_path / "elsewhere").is_dir() and not any(
        p.name.startswith(".unpack") for p in (tmp_path / "elsewhere").iterdir()
    )


def test_another_jaxlib_names_what_differs(packed, tmp_path, replay_env, old_jax_python):
    work, _ = packed
    result = run_cli(
        "repro",
        "run",
        str(work / "a.tar.gz"),
        "--python",
        old_jax_python,
        "--match",
        "fingerprint",
        "--json",
        "--out",
        "out",
        cwd=tmp_path,
        env=replay_env,
        timeout=300,
    )
    assert result.returncode == 5, result.stderr  # a healthy pack: nothing to reproduce, what differs still listed
    data = json.loads(result.stdout)
    assert data["outcome"] == "nothing-to-reproduce" and any("fingerprint" in d for d in data["differences"])
    strict = run_cli(
        "repro",
        "run",
        str(work / "a.tar.gz"),
        "--python",
        old_jax_python,
        "--same-jaxlib",
        "--json",
        "--out",
        "out",
        cwd=tmp_path,
        env=replay_env,
        timeout=300,
    )
    assert strict.returncode == 3 and "0.4.30" in json.loads(strict.stdout)["reason"]


def test_gpu_pack_cannot_run_on_a_cpu_only_target(packed, tmp_path, replay_env):
    work, _ = packed
    with tarfile.open(work / "a.tar.gz") as tar:
        files = {m.name[len("repro/") :]: tar.extractfile(m).read() for m in tar if m.isfile()}
    meta = json.loads(files.pop("pack.json"))
    meta["replay"]["platform"] = "gpu"
    files.pop("SHA256SUMS")
    files["pack.json"] = json.dumps(meta).encode()
    from xlatools.replay.pack import write_pack

    write_pack(files, tmp_path / "gpu.tar.gz")
    result = run_cli("repro", "run", "gpu.tar.gz", "--json", "--out", "out", cwd=tmp_path, env=replay_env, timeout=300)
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout)["outcome"] == "cannot-run"


def _evil(path, name, data=b"x", kind=tarfile.REGTYPE, link=""):
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


@pytest.mark.parametrize(
    "name,kind,link,message",
    [
        ("repro/../../escaped.txt", tarfile.REGTYPE, "", "'..'"),
        ("/tmp/xlatools-escaped.txt", tarfile.REGTYPE, "", "absolute"),
        ("repro/link", tarfile.SYMTYPE, "../../escaped.txt", "link"),
    ],
)
def test_malicious_pack_is_refused_and_writes_nothing_outside(tmp_path, name, kind, link, message):
    _evil(tmp_path / "evil.tar.gz", name, kind=kind, link=link)
    result = run_cli("repro", "run", "evil.tar.gz", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar.gz"]  # refused before anything, --out included
