"""The standalone Python-environment snapshot: fake site-packages trees, and real other interpreters."""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.fake_site_packages import BUILD_INFO_CUDA, TF_2_21_REQUIRES, TF_WHEEL_TAG, FakeSitePackages
from test_cli import assert_no_traceback, run_cli

from tfdoctor.facts.probes import pyenv_snapshot
from tfdoctor.facts.probes.pyenv_snapshot import read_build_info, snapshot

SNAPSHOT_SOURCE = Path(pyenv_snapshot.__file__).read_text()


def test_tensorflow_wheel_facts(tmp_path):
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow(installed_at=1_700_000_000).healthy_dependencies()
    snap = snapshot(paths=[str(site)], environ={}, prefix=str(tmp_path / "prefix"))
    tf = snap["watched"]["tensorflow-cpu"]
    assert tf["version"] == "2.21.0"
    assert tf["requires_dist"] == list(TF_2_21_REQUIRES)  # the long description's lines are not headers
    assert tf["requires_python"] == ">=3.10"
    assert tf["wheel_tags"] == [TF_WHEEL_TAG]
    assert tf["top_level"] == ["tensorflow"]
    assert tf["installed_at"] == 1_700_000_000
    assert tf["installer"] == "pip"
    assert snap["tensorflow"] == {
        "package_dir": str(site.path / "tensorflow"),
        "build_info": {"is_cuda_build": False, "is_rocm_build": False, "is_tensorrt_build": False},
        "protobuf_gencode": None,  # the fake wheel has no _pb2 module
    }
    assert snap["distributions"]["ml-dtypes"] == {"version": "0.6.0", "location": str(site)}
    assert "top_level" not in snap["watched"]["numpy"]  # only TensorFlow distributions carry it
    assert snap["marker_environment"]["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert snap["marker_environment"]["sys_platform"] == sys.platform


def test_marker_environment_is_packagings_and_the_platform_modules_without_importing_it():
    """The snapshot rebuilds PEP 508's environment from os.uname() and sys (importing `platform` costs
    the hook a few ms): the values must be exactly those packaging and `platform` give."""
    import platform

    from packaging.markers import default_environment

    snap = snapshot(paths=[])
    assert snap["marker_environment"] == default_environment()
    assert (snap["version"], snap["implementation"], snap["machine"]) == (
        platform.python_version(), platform.python_implementation(), platform.machine())


def test_build_info_of_a_cuda_wheel_and_of_old_wheels(tmp_path):
    cuda = tmp_path / "cuda_build_info.py"
    cuda.write_text(BUILD_INFO_CUDA)
    assert read_build_info(str(cuda)) == {
        "cpu_compiler": "/usr/lib/llvm-18/bin/clang",
        "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "cuda_version": "12.5.1", "cudnn_version": "9", "is_cuda_build": True, "is_rocm_build": False,
        "is_tensorrt_build": False,
    }
    old = tmp_path / "old_build_info.py"
    old.write_text("is_cuda_build = True\ncuda_version_number = '10.0'\n_private = 1\nx = compute()\n")
    assert read_build_info(str(old)) == {"is_cuda_build": True, "cuda_version_number": "10.0"}
    broken = tmp_path / "broken.py"
    broken.write_text("build_info = (\n")
    assert list(read_build_info(str(broken))) == ["$unknown"]


def test_top_level_from_record_when_top_level_txt_is_missing(tmp_path):
    site = FakeSitePackages(tmp_path / "site-packages")
    site.dist("tensorflow", "2.15.0", record=("tensorflow/__init__.py", "tensorflow/python/x.so",
                                              "tensorflow-2.15.0.dist-info/METADATA", "../../bin/toco"))
    site.dist("tensorflow-intel", "2.15.0", record=("tensorflow_intel-2.15.0.dist-info/METADATA",))
    watched = snapshot(paths=[str(site)], environ={})["watched"]
    assert watched["tensorflow"]["top_level"] == ["tensorflow"]
    assert watched["tensorflow-intel"]["top_level"] == []  # a shim: ships no package
    assert watched["tensorflow"]["installer"] == "pip"


def test_snapshot_source_runs_standalone_with_isolated_path(tmp_path):
    """The source is run with `python -c` under other interpreters: it must import nothing of tfdoctor."""
    done = subprocess.run([sys.executable, "-B", "-I", "-c", SNAPSHOT_SOURCE], capture_output=True, timeout=60,
                          cwd=tmp_path, check=True)
    data = json.loads(done.stdout)
    assert data["executable"] == sys.executable
    assert "openmp_runtimes" not in data  # the openmp probe's, read under --root too


def _other_pythons() -> list[str]:
    found = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8"))[:1]
    found += sorted(glob.glob("/usr/bin/python3.1[0-9]"))[:1]
    return found


@pytest.mark.parametrize("python", _other_pythons() or [pytest.param("", marks=pytest.mark.skip("none found"))])
def test_snapshot_under_another_python_version(python, tmp_path):
    done = subprocess.run([python, "-B", "-c", SNAPSHOT_SOURCE], capture_output=True, timeout=60, cwd=tmp_path,
                          check=True)
    data = json.loads(done.stdout)
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert data["version"] == version
    assert data["marker_environment"]["python_full_version"] == version


@pytest.fixture
def other_venv(tmp_path: Path) -> tuple[Path, FakeSitePackages]:
    """A real virtual environment of another interpreter, with a fake TensorFlow 2.21 and an ml_dtypes too old."""
    venv = tmp_path / "job-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site_dir = next(venv.glob("lib/python3*/site-packages"))
    site = FakeSitePackages(site_dir).tensorflow().healthy_dependencies(ml_dtypes="0.4.1")
    site.file("numpy.libs/libgomp-a34b3233.so.1.0.0")
    return venv, site


def test_check_python_of_another_venv(other_venv, tmp_path):
    venv, _site = other_venv
    python = venv / "bin" / "python"
    done = run_cli(["check", "--python", str(python), "--select", "PKG", "--format", "json"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    failed = [r for r in report["results"] if r["status"] == "failed"]
    assert [r["code"] for r in failed] == ["PKG005"]
    finding = failed[0]["findings"][0]
    assert finding["severity"] == "error"
    assert finding["evidence"] == {"python.distributions.ml-dtypes.version": "0.4.1",
                                   "python.watched.tensorflow-cpu.requires_dist": "ml_dtypes<1.0.0,>=0.5.1"}
    assert finding["fixes"][0]["steps"] == [
        f"{python} -m pip install 'ml-dtypes<1.0.0,>=0.5.1' 'tensorflow-cpu==2.21.0'"]


def test_collect_python_of_another_venv_sees_its_libraries(other_venv, tmp_path):
    venv, site = other_venv
    done = run_cli(["collect", "--python", str(venv / "bin" / "python")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    python = json.loads(done.stdout)["sections"]["python"]
    assert python["executable"] == str(venv / "bin" / "python")
    assert python["prefix"] == str(venv)
    runtimes = json.loads(done.stdout)["sections"]["openmp"]["runtimes"]
    assert [(r["runtime"], r["path"]) for r in runtimes] == [
        ("libgomp", f"{site}/numpy.libs/libgomp-a34b3233.so.1.0.0")]
    assert python["watched"]["tensorflow-cpu"]["top_level"] == ["tensorflow"]


def test_check_python_that_does_not_exist(tmp_path):
    done = run_cli(["check", "--python", str(tmp_path / "venv/bin/python"), "--select", "PKG"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert f"--python {tmp_path}/venv/bin/python: no such file" in done.stderr


def test_current_directory_is_not_part_of_the_environment(tmp_path):
    """`python -m tfdoctor` puts the current directory first on sys.path; a checkout there is not the
    job's environment (and `python -c`, for --python, puts '' there)."""
    FakeSitePackages(tmp_path).tensorflow(name="tensorflow-gpu", version="2.11.0").file("numpy.libs/libgomp.so.1")
    done = run_cli(["collect"], cwd=tmp_path, env={"LD_LIBRARY_PATH": ""})
    assert done.returncode == 0, done.stderr
    python = json.loads(done.stdout)["sections"]["python"]
    assert str(tmp_path) not in python["path"]
    assert "tensorflow-gpu" not in python["distributions"]
    runtimes = json.loads(done.stdout)["sections"]["openmp"]["runtimes"]
    assert [r for r in runtimes if str(tmp_path) in r["path"]] == []


def test_python_option_without_tensorflow_says_install_it_there(tmp_path):
    venv = tmp_path / "empty-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    done = run_cli(["check", "--python", str(venv / "bin/python"), "--select", "PKG001"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 0
    assert f"PKG001 tensorflow-not-installed: TensorFlow is not installed for {venv}/bin/python\n" in done.stdout
    assert "--python PATH" not in done.stdout


def test_record_hash_is_spelled_as_pip_writes_it(tmp_path):
    """sha256 through OpenSSL's _hashlib and binascii (cheaper imports), the RECORD's urlsafe base64."""
    import base64
    import hashlib

    from tfdoctor.facts.probes.pyenv_snapshot import _sha256_record

    for data in (b"", b"\x7fELF", bytes(range(256)) * 9000):
        path = tmp_path / "lib.so"
        path.write_bytes(data)
        expected = b"sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        assert _sha256_record(str(path), len(data)) == expected


def test_the_installed_tensorflow_verifies_against_its_own_record():
    """The test environment's real wheel: every size matches, the hashed shared objects match."""
    import site

    from tfdoctor.facts.probes.pyenv_snapshot import verify_record

    found = [d for folder in site.getsitepackages() for d in glob.glob(f"{folder}/tensorflow*-*.dist-info")]
    if not found:
        pytest.skip("no TensorFlow installed in the test environment")
    record = verify_record(found[0], str(Path(found[0]).parent))
    assert record["checked"] > 100 and record["hashed"] > 0
    assert (record["missing_count"], record["size_mismatch_count"], record["hash_mismatch_count"]) == (0, 0, 0)


def test_a_fifo_listed_as_a_shared_object_of_size_zero_is_never_opened(tmp_path):
    """A hostile RECORD line `x.so,sha256=…,0` over a FIFO: its size matches, but it is not hashed (opening a
    FIFO for reading would wait for a writer)."""
    import os

    from tfdoctor.facts.probes.pyenv_snapshot import verify_record

    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    os.mkfifo(site.path / "tensorflow/planted.so")
    dist_dir = site.path / "tensorflow_cpu-2.21.0.dist-info"
    with open(dist_dir / "RECORD", "a", encoding="utf-8") as handle:
        handle.write("tensorflow/planted.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n")
    record = verify_record(str(dist_dir), str(site))
    assert (record["checked"], record["missing_count"], record["size_mismatch_count"]) == (8, 0, 0)
    assert record["hashed"] == 4  # the four real shared objects, not the FIFO
