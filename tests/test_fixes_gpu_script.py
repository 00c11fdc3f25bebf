"""`tfdoctor fix --write env.sh` on the library and CUPTI machines: the exports, sourced in a shell, make
the missing libraries resolvable — checked with the probe's own resolution function over the fake tree."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import gpu_scenarios as g

from tfdoctor.derive.tf_build import tensorflow_build, wanted_sonames
from tfdoctor.facts.probes.cuda_libs import STUB_LOADED, probe_cuda_libs, resolve_library
from tfdoctor.facts.rooted_fs import RootedFs
from tfdoctor.testing import facts_from

CASES = {
    "cuda001-library-not-on-loader-path": ("cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver", "cusparse",
                                           "cupti"),
    "cupti001-cupti-not-on-loader-path": ("cupti",),
    # TensorFlow 2.16.1's RUNPATH reaches only cuda_runtime: env.sh must put the other wheel folders on
    # LD_LIBRARY_PATH (CUPTI and NCCL are found through libtensorflow_cc.so.2's RUNPATH, NCCL is compiled in).
    "cuda001-tf216-wheels-off-runpath": ("cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver", "cusparse"),
    "cuda001-tf2161-runpath-misses-wheels": ("cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver",
                                             "cusparse", "cupti"),
    "cuda001-conda-lib-not-on-loader-path": ("cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver", "cusparse",
                                             "cupti"),
}


def _unresolved(root, env: dict[str, str], keys) -> list[str]:
    """Library names of `keys` that the loader would not find on this fake machine with `env`."""
    machine = root.machine(env)
    facts = probe_cuda_libs(machine)
    build = tensorflow_build(facts_from({"cuda_libs": facts}))
    wanted = wanted_sonames(build)
    fs = RootedFs(machine)
    cache = [] if not isinstance(facts["ld_cache"], dict) else [(e["soname"], e["path"])
                                                                 for e in facts["ld_cache"]["entries"]]
    lib_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    def runpath(key: str) -> list[str]:  # CUPTI and NCCL are opened by their users: every library's RUNPATH
        return facts["stub_runpath"] if key in STUB_LOADED else facts["runpath"]

    return [wanted[k] for k in keys if resolve_library(wanted[k], lib_path, runpath(k), cache,
                                                       facts["default_dirs"], fs.exists) is None]


def _sourced_ld_library_path(script, env: dict[str, str]) -> str:
    shell = subprocess.run(["sh", "-c", '. "$1" && printf %s "${LD_LIBRARY_PATH-}"', "sh", str(script)],
                           env=env, capture_output=True, text=True, timeout=30, check=True)
    return shell.stdout


@pytest.mark.parametrize("source", ["root", "facts"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_sourced_fix_script_makes_missing_libraries_resolvable(tmp_path, name, source):
    scenario = g.by_name(name)
    root = g.build_root(scenario, tmp_path / "machine")
    env = scenario.environment()
    keys = CASES[name]
    assert _unresolved(root, env, keys), "the fixture should start broken"

    script = tmp_path / "env.sh"
    where = ["--root", str(root.path)] if source == "root" else ["--facts", str(g.SNAPSHOTS / f"{name}.json")]
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "fix", "--write", str(script), *where,
                           "--select", "CUDA,CUPTI"], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "export LD_LIBRARY_PATH" in script.read_text()

    fixed = {**env, "LD_LIBRARY_PATH": _sourced_ld_library_path(script, env)}
    assert _unresolved(root, fixed, keys) == []
    assert fixed["LD_LIBRARY_PATH"].endswith(env.get("LD_LIBRARY_PATH", "")) or not env.get("LD_LIBRARY_PATH")


def test_sourcing_twice_adds_nothing(tmp_path):
    scenario = g.by_name("cupti001-cupti-not-on-loader-path")
    script = tmp_path / "env.sh"
    subprocess.run([sys.executable, "-m", "tfdoctor", "fix", "--write", str(script), "--facts",
                    str(g.SNAPSHOTS / f"{scenario.name}.json"), "--select", "CUPTI"], check=True,
                   capture_output=True, timeout=120)
    env = scenario.environment()
    twice = subprocess.run(["sh", "-c", '. "$1"; . "$1"; printf %s "$LD_LIBRARY_PATH"', "sh", str(script)],
                           env=env, capture_output=True, text=True, timeout=30, check=True).stdout
    assert twice == "/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
