"""The standalone Python-environment snapshot: fake site-packages trees, and real other interpreters."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.command_line import assert_no_traceback, run_cli
from support.fake_site_packages import BUILD_INFO_CUDA, TF_2_21_REQUIRES, TF_WHEEL_TAG, FakeSitePackages

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
    """Interpreters of other versions than the one running the tests, found in pyenv's versions
    ($PYENV_ROOT, else ~/.pyenv) or as `python3.N` on PATH (not a pyenv shim, which runs whatever version
    pyenv selects): the oldest the snapshot supports (3.8+, its docstring) and the newest, so the source
    is run under more than the version it was written with."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = []
    for minor in range(8, 15):
        if (3, minor) == sys.version_info[:2]:
            continue
        name = f"python3.{minor}"
        on_path = shutil.which(name)
        candidates = [*sorted(glob.glob(str(pyenv / "versions" / f"3.{minor}.*" / "bin" / name))),
                      on_path if on_path and Path(on_path).parent.name != "shims" else None]
        found += [c for c in candidates if c][:1]
    return sorted(set(found[:1] + found[-1:]), key=found.index)


@pytest.mark.parametrize("python", _other_pythons() or [pytest.param("", marks=pytest.mark.skip(
    f"no python3.8 to 3.14 other than {sys.version_info[0]}.{sys.version_info[1]} on PATH or in pyenv"))])
def test_snapshot_under_another_python_version(python, tmp_path):
    """As `--python` runs it: the bootstrap loads the snapshot's file as a module, on 3.8 as on 3.13."""
    from tfdoctor.facts.probes.python_env import BOOTSTRAP

    done = subprocess.run([python, "-B", "-c", BOOTSTRAP, pyenv_snapshot.__file__], capture_output=True, timeout=60,
                          cwd=tmp_path, check=True)
    data = json.loads(done.stdout)
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert data["version"] == version
    assert data["marker_environment"]["python_full_version"] == version


def test_another_interpreters_snapshot_imports_nothing_from_the_jobs_folder(tmp_path, monkeypatch):
    """A json.py in the folder tfdoctor runs from (the job's) must not stand in for the standard library's in the
    snapshot's interpreter, which `-c` would otherwise put first on its path; the path it reports is the job's."""
    from tfdoctor.facts.machine import Machine
    from tfdoctor.facts.probes.python_env import snapshot_other_interpreter

    (tmp_path / "json.py").write_text("raise SystemExit('the job folder\\'s json.py was imported')\n")
    monkeypatch.chdir(tmp_path)
    snapshot = snapshot_other_interpreter(sys.executable, Machine(environ=dict(os.environ), timeout=60))
    assert isinstance(snapshot, dict), snapshot
    assert snapshot["executable"] == sys.executable
    plain = subprocess.run([sys.executable, "-c", "import sys; print(repr(sys.path[1:]))"], capture_output=True,
                           text=True, timeout=60, check=True)
    assert snapshot["path"] == ast.literal_eval(plain.stdout)  # what `python -c` sees, less the current folder


@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is Python 3.11's")
def test_under_pythonsafepath_the_first_path_entry_is_the_jobs_own(tmp_path, monkeypatch):
    """PYTHONSAFEPATH keeps the current folder off the path: sys.path[0] is then the standard library's zip, which
    the snapshot must report, not replace."""
    from tfdoctor.facts.machine import Machine
    from tfdoctor.facts.probes.python_env import snapshot_other_interpreter

    monkeypatch.chdir(tmp_path)
    environ = {**os.environ, "PYTHONSAFEPATH": "1"}
    snapshot = snapshot_other_interpreter(sys.executable, Machine(environ=environ, timeout=60))
    assert isinstance(snapshot, dict), snapshot
    plain = subprocess.run([sys.executable, "-c", "import sys; print(repr(sys.path))"], capture_output=True,
                           text=True, timeout=60, check=True, env=environ)
    assert snapshot["path"] == ast.literal_eval(plain.stdout)  # the whole path: no current folder to leave out
    assert "/nonexistent/tfdoctor-snapshot" not in snapshot["path"]


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


def test_a_file_larger_than_its_stat_said_is_read_no_further_than_one_byte_past(tmp_path):
    """_sha256_record(path, size) hashes at most size + 1 bytes: a shared object that grew (or was swapped
    for /dev/zero's worth of data) after its stat costs one byte more than it should, never a read to EOF."""
    import base64
    import hashlib

    from tfdoctor.facts.probes.pyenv_snapshot import _hash_file, _sha256_record

    data = bytes(range(256)) * 8192  # 2 MiB
    path = tmp_path / "lib.so"
    path.write_bytes(data)
    expected = b"sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data[:11]).digest()).rstrip(b"=")
    assert _sha256_record(str(path), 10) == expected
    assert _hash_file(str(path), 10)[1] is None  # not the size it was hashed for: never remembered
    _, key = _hash_file(str(path), len(data))
    status = path.stat()
    assert key == [status.st_ino, len(data), status.st_mtime_ns, status.st_ctime_ns]


def test_a_kept_sum_serves_every_node_of_a_shared_home():
    """The same file seen from two NFS clients differs only in st_dev: the key, and so the kept sum, is
    the same on both; another inode, size, mtime or ctime is another key."""
    from types import SimpleNamespace

    from tfdoctor.facts.probes.pyenv_snapshot import stat_key

    seen = dict(st_ino=4711, st_size=2 << 20, st_mtime_ns=1_700_000_000_123_456_789,
                st_ctime_ns=1_700_000_100_987_654_321)
    node_a, node_b = SimpleNamespace(st_dev=53, **seen), SimpleNamespace(st_dev=48, **seen)
    assert stat_key(node_a) == stat_key(node_b) == [4711, 2 << 20, seen["st_mtime_ns"], seen["st_ctime_ns"]]
    for field in seen:
        changed = SimpleNamespace(st_dev=53, **{**seen, field: seen[field] + 1})
        assert stat_key(changed) != stat_key(node_a), field


def _old_enough(monkeypatch):
    """Files this test has just written count as settled (pyenv_snapshot.RACY_NS)."""
    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 0)


def _verify(site, cache_file):
    dist_dir = str(site.path / "tensorflow_cpu-2.21.0.dist-info")
    return pyenv_snapshot.verify_record(dist_dir, str(site), hash_cache=pyenv_snapshot.HashCache(str(cache_file)))


def test_sums_are_kept_for_unchanged_files_and_not_read_again(tmp_path, monkeypatch):
    import os

    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    cache_file = tmp_path / "cache" / "record-sha256.json"
    first = _verify(site, cache_file)
    assert (first["hashed"], first["hash_cached"], first["hash_mismatch_count"]) == (4, 0, 0)
    assert oct(cache_file.stat().st_mode & 0o777) == "0o600"
    assert oct(cache_file.parent.stat().st_mode & 0o777) == "0o700"
    kept = json.loads(cache_file.read_text())["entries"]
    so = str(site.path / "tensorflow/python/_pywrap_tensorflow_internal.so")
    status = os.stat(so)
    assert kept[so][0] == [status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]

    def no_read(path, size):
        raise AssertionError(f"{path} was read again")

    monkeypatch.setattr(pyenv_snapshot, "_hash_file", no_read)
    again = _verify(site, cache_file)
    assert (again["hashed"], again["hash_cached"], again["hashed_bytes"]) == (4, 4, first["hashed_bytes"])
    assert {k: v for k, v in again.items() if k != "hash_cached"} == {k: v for k, v in first.items()
                                                                       if k != "hash_cached"}


def test_a_file_rewritten_with_its_size_and_mtime_restored_is_hashed_again(tmp_path, monkeypatch):
    """The attack a (size, mtime) key would miss: same size, mtime set back. The ctime moves all the same."""
    import os
    import time

    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    cache_file = tmp_path / "record-sha256.json"
    assert _verify(site, cache_file)["hash_mismatch_count"] == 0
    so = site.path / "tensorflow/python/_pywrap_tensorflow_internal.so"
    before = so.stat()
    time.sleep(0.05)  # past the tick of the clock that stamps ctime
    with open(so, "r+b") as handle:  # in place: the same inode
        handle.write(b"\x00" * before.st_size)
    os.utime(so, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = so.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    record = _verify(site, cache_file)
    assert (record["hash_cached"], record["hash_mismatch"]) == (3, ["tensorflow/python/_pywrap_tensorflow_internal.so"])
    # The mismatch is remembered as a sum, not as a verdict: the next run finds it again from the cache.
    assert _verify(site, cache_file)[("hash_mismatch")] == ["tensorflow/python/_pywrap_tensorflow_internal.so"]


def test_a_file_changed_in_the_last_two_seconds_is_hashed_but_not_remembered(tmp_path, monkeypatch):
    # "Recent" made an hour wide: a loaded machine may take seconds between writing the files and reading them.
    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 3600 * 10**9)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()  # just written
    cache_file = tmp_path / "record-sha256.json"
    assert _verify(site, cache_file)["hash_cached"] == 0
    assert not cache_file.exists()
    assert _verify(site, cache_file)["hash_cached"] == 0


@pytest.mark.parametrize("damage", ["group-writable", "malformed", "wrong-shape", "directory", "too-large",
                                    "deeply-nested"])
def test_a_cache_file_that_cannot_be_trusted_is_ignored_and_replaced(tmp_path, monkeypatch, damage):
    """A planted sum (another's file, one others may write) would hide an altered shared object: ignored."""
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    so = str(site.path / "tensorflow/python/_pywrap_tensorflow_internal.so")
    cache_file = tmp_path / "record-sha256.json"
    _verify(site, cache_file)
    planted = json.loads(cache_file.read_text())
    planted["entries"][so][1] = "sha256=planted"
    text = json.dumps(planted)
    if damage == "malformed":
        text = text[:-5]
    elif damage == "wrong-shape":
        text = json.dumps({"version": 1, "entries": {so: [["1", 2, 3, 4, 5], "sha256=planted"]}})
    elif damage == "too-large":
        text += " " * pyenv_snapshot.STAT_MEMO_LIMIT
    elif damage == "deeply-nested":
        text = "[" * 100_000 + "]" * 100_000
    cache_file.write_text(text)
    if damage == "group-writable":
        cache_file.chmod(0o620)
    elif damage == "directory":
        cache_file.unlink()
        cache_file.mkdir()
    record = _verify(site, cache_file)
    assert (record["hashed"], record["hash_mismatch_count"]) == (4, 0)
    if damage != "directory":
        assert "sha256=planted" not in cache_file.read_text()  # written anew, as the tests' user's own


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_sums(tmp_path, monkeypatch):
    """A read-only cache folder, or another's file where the temporary one goes: the run goes on, every
    sum made, and a file it did not create is never removed."""
    import os

    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    record = _verify(site, blocked / "record-sha256.json")
    assert (record["hashed"], record["hash_cached"], record["hash_mismatch_count"]) == (4, 0, 0)
    cache_file = tmp_path / "cache" / "record-sha256.json"
    cache_file.parent.mkdir()
    theirs = cache_file.parent / f"record-sha256.json.{os.getpid()}.tmp"
    theirs.write_text("someone else's")
    assert _verify(site, cache_file)["hashed"] == 4
    assert theirs.read_text() == "someone else's" and not cache_file.exists()


def test_where_the_sums_are_kept():
    path = pyenv_snapshot.hash_cache_path
    assert path({"TFDOCTOR_CACHE_DIR": "/c", "HOME": "/h"}) == "/c/record-sha256.json"
    assert path({"TFDOCTOR_CACHE_DIR": "", "HOME": "/h"}) is None  # set empty: nothing kept
    assert path({"TFDOCTOR_CACHE_DIR": "cache", "HOME": "/h"}) is None  # relative: not the job's folder
    assert path({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == "/x/tfdoctor/record-sha256.json"
    assert path({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == "/h/.cache/tfdoctor/record-sha256.json"
    assert path({}) is None and path({"HOME": "relative"}) is None


def test_the_snapshot_keeps_its_sums_where_its_own_process_says(tmp_path, monkeypatch):
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(tmp_path / "kept"))
    first = snapshot(paths=[str(site)], environ={"HOME": str(tmp_path / "job-home")}, prefix=str(tmp_path))
    again = snapshot(paths=[str(site)], environ={}, prefix=str(tmp_path))
    assert first["watched"]["tensorflow-cpu"]["record"]["hash_cached"] == 0
    assert again["watched"]["tensorflow-cpu"]["record"]["hash_cached"] == 4
    assert (tmp_path / "kept" / "record-sha256.json").is_file() and not (tmp_path / "job-home").exists()
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", "")
    off = snapshot(paths=[str(site)], environ={}, prefix=str(tmp_path))
    assert off["watched"]["tensorflow-cpu"]["record"]["hash_cached"] == 0


def _verify_with_memo(site, folder):
    dist_dir = str(site.path / "tensorflow_cpu-2.21.0.dist-info")
    memo = pyenv_snapshot.record_memo(str(folder / pyenv_snapshot.RECORD_MEMO_NAME))
    return pyenv_snapshot.verify_record(dist_dir, str(site), record_memo=memo)


def test_an_unchanged_record_is_not_read_again(tmp_path, monkeypatch):
    """The RECORD's verified lines are kept with its stat: the next run stats every listed file as before,
    without reading the RECORD (TensorFlow's is 1.8 MB, searched twice)."""
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    first = _verify_with_memo(site, tmp_path / "cache")
    record = str(site.path / "tensorflow_cpu-2.21.0.dist-info" / "RECORD")
    kept = json.loads((tmp_path / "cache" / "record-lines.json").read_text())["entries"][record][1]
    lines = {line.split(",")[0]: line.split(",") for line in Path(record).read_text().splitlines()}
    so = "tensorflow/libtensorflow_cc.so.2"
    assert [so, lines[so][1], int(lines[so][2]), True] in kept
    init = "tensorflow/__init__.py"
    assert [init, lines[init][1], int(lines[init][2]), False] in kept
    assert (len(kept), sum(row[3] for row in kept)) == (7, 4)  # the four shared objects, marked as such

    def no_read(path, limit):
        raise AssertionError(f"{path} was read again")

    monkeypatch.setattr(pyenv_snapshot, "_read_bytes", no_read)
    again = _verify_with_memo(site, tmp_path / "cache")
    assert again == first and (first["checked"], first["hashed"]) == (7, 4)
    (site.path / "tensorflow/libtensorflow_cc.so.2").unlink()  # the files are still looked at, every one
    assert _verify_with_memo(site, tmp_path / "cache")["missing"] == ["tensorflow/libtensorflow_cc.so.2"]


def test_a_rewritten_record_is_read_again(tmp_path, monkeypatch):
    """A reinstall (or an edit) rewrites the RECORD: another ctime, often another inode; its new lines count."""
    import time

    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    assert _verify_with_memo(site, tmp_path / "cache")["missing_count"] == 0
    time.sleep(0.05)  # past the tick of the clock that stamps ctime
    record = site.path / "tensorflow_cpu-2.21.0.dist-info" / "RECORD"
    with open(record, "a", encoding="utf-8") as handle:
        handle.write("tensorflow/python/_pywrap_new.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n")
    again = _verify_with_memo(site, tmp_path / "cache")
    assert (again["checked"], again["missing"]) == (8, ["tensorflow/python/_pywrap_new.so"])


@pytest.mark.parametrize("row", [["tensorflow/x.so", 5, 1, True], ["tensorflow/x.so", "", "1", True],
                                 ["tensorflow/x.so", "", 1, 1], ["tensorflow/x.so", "", 1], "tensorflow/x.so"])
def test_kept_record_lines_of_another_shape_are_not_trusted(tmp_path, monkeypatch, row):
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    first = _verify_with_memo(site, tmp_path / "cache")
    memo_file = tmp_path / "cache" / "record-lines.json"
    data = json.loads(memo_file.read_text())
    (entry,) = data["entries"].values()
    entry[1] = [row]  # would say the RECORD lists one file only
    memo_file.write_text(json.dumps(data))
    assert _verify_with_memo(site, tmp_path / "cache") == first


def test_the_snapshot_keeps_record_lines_and_sums_in_its_cache_folder(tmp_path, monkeypatch):
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    snapshot(paths=[str(site)], environ={}, prefix=str(tmp_path), cache=str(tmp_path / "here"))
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["record-lines.json", "record-sha256.json"]
    none = snapshot(paths=[str(site)], environ={}, prefix=str(tmp_path / "p"), cache="")
    assert none["watched"]["tensorflow-cpu"]["record"]["hash_cached"] == 0


def test_record_lines_kept_by_another_format_are_not_used(tmp_path, monkeypatch):
    """Lines kept by a tfdoctor that selected them otherwise (another RECORD_LINES_FORMAT) are read anew."""
    _old_enough(monkeypatch)
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow()
    first = _verify_with_memo(site, tmp_path / "cache")
    memo_file = tmp_path / "cache" / "record-lines.json"
    data = json.loads(memo_file.read_text())
    assert data["tag"] == f"record-lines/{pyenv_snapshot.RECORD_LINES_FORMAT}:.so"
    (entry,) = data["entries"].values()
    entry[1] = [["tensorflow/__init__.py", "", 0, False]]
    memo_file.write_text(json.dumps(data))
    assert _verify_with_memo(site, tmp_path / "cache")["checked"] == 1  # the same tag: used as kept
    monkeypatch.setattr(pyenv_snapshot, "RECORD_LINES_FORMAT", pyenv_snapshot.RECORD_LINES_FORMAT + 1)
    assert _verify_with_memo(site, tmp_path / "cache") == first


def test_headers_cut_at_the_limit_are_not_recorded_as_the_requirements(tmp_path):
    line = b"Requires-Dist: numpy>=1.26.4\n"
    count = pyenv_snapshot.HEADER_LIMIT // len(line) + 10
    (tmp_path / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: big\n" + line * count + b"\nlong text\n")
    assert pyenv_snapshot._requires_of(str(tmp_path)) is None


def test_headers_within_the_limit_give_the_requirements_without_extras(tmp_path):
    (tmp_path / "METADATA").write_bytes(b"Name: small\nRequires-Dist: numpy>=1.26.4\n"
                                        b"Requires-Dist: pytest; extra == \"test\"\n\nRequires-Dist: no\n")
    assert pyenv_snapshot._requires_of(str(tmp_path)) == ["numpy>=1.26.4"]


# -- every file read under site-packages is bounded: a FIFO is refused, a gigabyte costs its limit -------------

_PROBE = """
import json, resource, sys
from tfdoctor.facts.probes.pyenv_snapshot import snapshot
site = sys.argv[1]
snap = snapshot(paths=[site], environ={}, prefix=sys.argv[2], site_dirs=[site], user_site=None, cache="")
print(json.dumps({"snapshot": snap, "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _hostile_site(folder: Path, damage: str | None) -> FakeSitePackages:
    """A TensorFlow wheel beside a dependency and a .pth file, each file the snapshot reads replaced by a FIFO
    or by a (sparse) gigabyte; None: the healthy twin."""
    site = FakeSitePackages(folder).tensorflow(gencode="5.28.3").healthy_dependencies()
    site.file("extra.pth", "../extra\n")
    info = site.path / "tensorflow_cpu-2.21.0.dist-info"
    targets = [info / n for n in ("METADATA", "WHEEL", "top_level.txt", "INSTALLER", "RECORD")] + [
        site.path / "absl_py-2.5.1.dist-info/METADATA", site.path / "extra.pth",
        site.path / "tensorflow/python/platform/build_info.py",
        site.path / "tensorflow/core/framework/attr_value_pb2.py"]
    for target in targets if damage else ():
        assert target.exists(), target
        target.unlink()
        if damage == "fifo":
            os.mkfifo(target)
        else:
            with open(target, "wb") as handle:
                handle.truncate(1 << 30)
    return site


def _snapshot_in_a_child(site: FakeSitePackages, prefix: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(site.path), str(prefix)], capture_output=True,
                          text=True, timeout=60)  # a read that waits on a FIFO fails here, not the suite
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("damage", ["fifo", "gigabyte"])
def test_fifos_and_gigabyte_files_in_site_packages_cost_neither_a_wait_nor_their_size(tmp_path, damage):
    healthy = _snapshot_in_a_child(_hostile_site(tmp_path / "healthy", None), tmp_path)
    hostile = _snapshot_in_a_child(_hostile_site(tmp_path / damage, damage), tmp_path)
    tf = hostile["snapshot"]["watched"]["tensorflow-cpu"]
    assert "requires_dist" not in tf and tf["version"] == "2.21.0"  # the folder's name still says the version
    assert (tf["wheel_tags"], tf["installer"], tf["top_level"]) == ([], None, None)
    assert "record" not in tf  # no top-level names: nothing to verify
    assert hostile["snapshot"]["distributions"]["absl-py"] == {"version": "2.5.1",
                                                               "location": str(tmp_path / damage)}
    assert hostile["snapshot"]["tensorflow"]["build_info"]["$unknown"].startswith("build_info.py unreadable: ")
    assert "path_origins" in hostile["snapshot"]
    gencode = hostile["snapshot"]["tensorflow"]["protobuf_gencode"]
    assert gencode is None if damage == "gigabyte" else gencode["$unknown"].endswith("is not a regular file")
    # The healthy twin read every one of them; the gigabytes cost at most a few of their limits (8 MB each).
    assert healthy["snapshot"]["watched"]["tensorflow-cpu"]["installer"] == "pip"
    assert healthy["snapshot"]["tensorflow"]["protobuf_gencode"]["version"] == "5.28.3"
    assert hostile["max_rss_kb"] < healthy["max_rss_kb"] + 64 * 1024, (hostile["max_rss_kb"], healthy["max_rss_kb"])


def test_tfdoctors_own_direct_url_json_is_read_bounded(tmp_path, monkeypatch):
    """tfdoctor.installed reads its own install record (PEP 610) through the bounded reader: a FIFO there is
    refused at once, a gigabyte is not loaded, and a real one names the folder."""
    import threading
    from importlib import metadata

    from tfdoctor import installed

    info = tmp_path / "tfdoctor-0.1.0.dist-info"
    info.mkdir()
    monkeypatch.setattr(metadata, "distributions", lambda name: [metadata.PathDistribution(info)])
    found: list[object] = []
    os.mkfifo(info / "direct_url.json")
    reader = threading.Thread(target=lambda: found.append(installed._direct_url()), daemon=True)
    reader.start()
    reader.join(10)
    assert found == [None]
    (info / "direct_url.json").unlink()
    with open(info / "direct_url.json", "wb") as handle:
        handle.write(b'{"url": "file:///src/tfdoctor", "dir_info": {}}')
        handle.truncate(1 << 30)
    assert installed._direct_url() is None
    (info / "direct_url.json").write_text('{"url": "file:///src/tfdoctor", "dir_info": {"editable": true}}')
    assert installed._direct_url() == {"url": "file:///src/tfdoctor", "dir_info": {"editable": True}}
