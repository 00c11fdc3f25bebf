"""The XLA toolchain probe reads ptxas's version from the toolkit's version.json: a version.json that is
there but cannot be read is an unknown with its reason, never a silent fall-back to another figure."""

from __future__ import annotations

import json
import os

import pytest
from conftest import check_facts
from support import gpu_scenarios as g

from tfdoctor.facts import Unknown
from tfdoctor.facts.probes.xla_toolchain import probe_xla_toolchain

BASE = "/usr/local/cuda-12.3"
VERSION_JSON = "/usr/local/cuda/version.json"  # the candidate is named by the link XLA follows


def _toolkit(make_root, version_json: str | bytes | None, version_txt: str | None = None):
    root = make_root()
    g.driver(root)
    root.write(f"{BASE}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    root.write(f"{BASE}/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
    if version_json is not None:
        root.write(f"{BASE}/version.json", version_json)
    if version_txt is not None:
        root.write(f"{BASE}/version.txt", version_txt)
    g.link(root, "/usr/local/cuda", BASE)
    return root


def _ptxas_version(root):
    facts = probe_xla_toolchain(root.machine({"PATH": "/usr/bin:/bin"}))
    (cuda,) = [c for c in facts["candidates"] if c["dir"] == "/usr/local/cuda"]
    assert facts["ptxas"]["version"] == cuda["ptxas_version"]  # the first ptxas XLA runs is this one
    return cuda["ptxas_version"]


@pytest.mark.parametrize("text, reason", [
    ('{"cuda": {"version": "12.3.1"}, "cuda_nvcc": ', f"{VERSION_JSON} is not JSON (Expecting value: line 1"),
    ("", f"{VERSION_JSON} is not JSON (Expecting value: line 1 column 1"),
    ("[" * 100_000 + "]" * 100_000, f"{VERSION_JSON} is not JSON a toolkit writes (nested too deep)"),
    ('["12.3.103"]', f"{VERSION_JSON} holds a list, not the object of components a toolkit writes"),
])
def test_a_malformed_version_json_is_unknown_with_its_reason(make_root, text, reason):
    # version.txt names the release: it must not stand in for the nvcc version version.json failed to give.
    version = _ptxas_version(_toolkit(make_root, text, version_txt="CUDA Version 12.3.1\n"))
    assert isinstance(version, Unknown)
    assert version.reason.startswith(reason)
    assert version.reason.endswith(", and ptxas is not run under --root")


def test_an_unreadable_version_json_is_unknown_with_its_reason(make_root):
    root = _toolkit(make_root, None)
    os.mkdir(root.path / BASE.lstrip("/") / "version.json")  # there, but not a file anyone can read JSON from
    version = _ptxas_version(root)
    assert isinstance(version, Unknown)
    assert version.reason == (f"{VERSION_JSON} could not be read (no permission, not a regular file, or over "
                              "1 MiB), and ptxas is not run under --root")


def test_a_readable_version_json_still_gives_the_nvcc_version_or_the_release(make_root):
    both = json.dumps({"cuda": {"version": "12.3.1"}, "cuda_nvcc": {"version": "12.3.103"}})
    assert _ptxas_version(_toolkit(make_root, both)) == "12.3.103"
    # No nvcc component: the toolkit's release is the best figure there is (unchanged).
    assert _ptxas_version(_toolkit(make_root, json.dumps({"cuda": {"version": "12.3.1"}}))) == "12.3.1"
    # No version.json at all (CUDA 11.0 and older): version.txt.
    assert _ptxas_version(_toolkit(make_root, None, version_txt="CUDA Version 11.0.221\n")) == "11.0.221"


def test_the_xla_check_says_why_it_could_not_compare(tmp_path):
    scenario = g.by_name("xla004-ptxas-version-refused")
    root = g.build_root(scenario, tmp_path / "machine")
    root.write(f"{BASE}/version.json", "{not json")
    result = check_facts(g.collect(scenario, root), select=["XLA002", "XLA004"])
    assert result.codes() == []
    for code in ("XLA002", "XLA004"):
        assert result.result(code).status.value == "not-checked"
        # TensorFlow 2.17's XLA tries the toolkit it was built against, /usr/local/cuda-12.3, before the link.
        assert result.result(code).reason.startswith(
            f"version of {BASE}/bin/ptxas unknown: {BASE}/version.json is not JSON (")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '["12.3.103"]', "{not json"])
def test_the_toolkit_release_skips_a_malformed_version_json(make_root, text):
    # The toolkit listing (cuda_libs) reads the same file for the release: it used to crash on the first two.
    from tfdoctor.facts.probes.cuda_libs import toolkit_version
    from tfdoctor.facts.rooted_fs import RootedFs

    root = _toolkit(make_root, text, version_txt="CUDA Version 12.3.1\n")
    assert toolkit_version(RootedFs(root.machine({})), BASE) == "12.3.1"
