"""Every shipped build-failure signature against a realistic log line, user signature files,
and the scan itself."""

from __future__ import annotations

import pytest

from xlatools.doctor.signatures import SHIPPED, explain_failure, load_signatures, scan_lines, scan_log
from xlatools.errors import UsageError

# One realistic line per shipped signature (as bazel, gcc/clang, the loader or XLA print them).
LOG_LINES = {
    "nccl-header-missing": "external/xla/xla/service/gpu/nccl_api.cc:38:10: fatal error: "
    "third_party/nccl/nccl.h: No such file or directory",
    "glibcxx-not-found": "ImportError: /opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.29' not found "
    "(required by /usr/lib/python3.11/site-packages/jaxlib/libjax_common.so)",
    "glibc-not-found": "/usr/bin/bazel-real: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by bazel)",
    "compiler-killed-oom": "gcc: fatal error: Killed signal terminated program cc1plus",
    "bazel-version-mismatch": "ERROR: The project you're trying to build requires Bazel 7.4.1 (specified in "
    "/xlatools/src/.bazelversion), but it wasn't found in /usr/local/lib/bazel/bin.",
    "archive-checksum-mismatch": "ERROR: An error occurred during the fetch of repository 'xla': Traceback: "
    "java.io.IOException: Error downloading [https://github.com/openxla/xla/archive/"
    "0123.tar.gz] to /root/.cache/bazel/xla/temp.tar.gz: Checksum was " + "a" * 64 + " but wanted " + "b" * 64,
    "cuda-download-failed": "ERROR: java.io.IOException: Error downloading [https://developer.download.nvidia.com/"
    "compute/cuda/redist/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.9.41-archive.tar.xz]"
    " to /root/.cache/bazel/external/cuda_nvcc/file.tar.xz: Connect timed out",
    "cxx-standard-mismatch": "ld.lld: error: undefined reference to jax::PjitFunctionCache::kDefaultCapacity",
    "bazel-config-undefined": "ERROR: Config value 'dbg' is not defined in any .rc file",
    "disk-full": "ERROR: /xlatools/src/jaxlib/BUILD:12:1: output 'jaxlib/_jax.so' was not created: "
    "write failed: No space left on device",
    "tls-certificate": "javax.net.ssl.SSLHandshakeException: PKIX path building failed: "
    "sun.security.provider.certpath.SunCertPathBuilderException",
    "xla-unknown-flag": "F0000 00:00:1700000000.000000   12 parse_flags_from_env.cc:234] Unknown flags in XLA_FLAGS: "
    "--xla_jf_conv_full_precision=true",
}


def test_every_shipped_signature_has_a_test_line():
    assert {s.id for s in load_signatures([])} == set(LOG_LINES)


@pytest.mark.parametrize("sig_id", sorted(LOG_LINES))
def test_shipped_signature_matches_its_line_and_only_it(sig_id):
    table = load_signatures([])
    hints = scan_lines(
        ["INFO: Analyzed target //jaxlib/tools:jaxlib_wheel", LOG_LINES[sig_id], "FAILED: Build did NOT complete"],
        table,
    )
    assert [h.id for h in hints] == [sig_id]
    assert hints[0].line_number == 2 and hints[0].fix and hints[0].explanation


def test_variants_of_the_issue_list():
    table = load_signatures([])
    more = {
        "compiler-killed-oom": "clang: error: unable to execute command: Killed",
        "bazel-version-mismatch": "ERROR: Current Bazel version is 4.2.3- (@non-git); expected at least 6.5.0",
        "cuda-download-failed": 'The supported CUDA versions are ["12.1.1", "12.9.1"]. Please provide a supported '
        "version in HERMETIC_CUDA_VERSION environment variable",
        "cxx-standard-mismatch": "error: no member named 'optional' in namespace 'std'",
        "nccl-header-missing": "xla/stream_executor/cuda/cuda_driver.cc:30:10: fatal error: 'third_party/nccl/nccl.h' "
        "file not found",
    }
    for sig_id, line in more.items():
        assert [h.id for h in scan_lines([line], table)] == [sig_id], line


def test_a_clean_log_matches_nothing():
    lines = ["INFO: Build completed successfully, 4123 total actions", "Wheel written to dist/jaxlib-0.10.2.whl"]
    assert scan_lines(lines, load_signatures([])) == []


def test_user_signatures_add_and_replace(tmp_path):
    user = tmp_path / "signatures"
    user.mkdir()
    (user / "mine.yaml").write_text(
        "signatures:\n"
        "  - id: my-proxy\n    regex: 'corp-proxy refused'\n    explanation: our proxy\n    fix: use the VPN\n"
        "  - id: disk-full\n    regex: 'quota exceeded'\n    explanation: team quota\n    fix: ask ops\n"
    )
    table = {s.id: s for s in load_signatures([user])}
    assert table["my-proxy"].origin.endswith("mine.yaml")
    log = tmp_path / "build.log"
    log.write_text("a\ncorp-proxy refused the connection\nNo space left on device\nuser quota exceeded\n")
    hints = scan_log(log, list(table.values()))
    assert [(h.id, h.line_number) for h in hints] == [("my-proxy", 2), ("disk-full", 4)]
    assert hints[1].fix == "ask ops" and hints[0].link == ""


def test_bad_user_files_are_bad_input(tmp_path):
    user = tmp_path / "signatures"
    user.mkdir()
    bad = user / "bad.yaml"
    bad.write_text("signatures:\n  - id: x\n    regex: '('\n    explanation: e\n    fix: f\n")
    with pytest.raises(UsageError, match="bad regex"):
        load_signatures([user])
    bad.write_text("signatures:\n  - id: x\n")
    with pytest.raises(UsageError, match="does not have the expected shape") as caught:
        load_signatures([user])  # each missing field named by its key path, as every input file's are
    assert [p.key for p in caught.value.problems] == [
        "signatures[0].regex",
        "signatures[0].explanation",
        "signatures[0].fix",
    ]
    bad.write_text("signatures:\n  - {id: x, regex: a, explanation: ' ', fix: f}\n")
    with pytest.raises(UsageError, match=r"signatures\[0\]\]: explanation must not be empty"):
        load_signatures([user])


def test_explain_failure_for_the_build_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    log = tmp_path / "build.log"
    log.write_text("step 1\n" + LOG_LINES["compiler-killed-oom"] + "\n")
    hints, text = explain_failure(log)
    assert hints[0]["id"] == "compiler-killed-oom" and hints[0]["line_number"] == 2
    assert "--jobs" in text
    (tmp_path / "config" / "xlatools" / "signatures").mkdir(parents=True)
    (tmp_path / "config" / "xlatools" / "signatures" / "broken.yaml").write_text("nope: [")
    hints, text = explain_failure(log)
    assert hints == [] and "not scanned" in text


def test_shipped_file_is_package_data():
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "doctor/signatures.yaml" in pyproject["tool"]["setuptools"]["package-data"]["xlatools"]
    assert SHIPPED.is_file()
