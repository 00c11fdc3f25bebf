"""What the Python-environment facts cost `tfdoctor check`, each against a baseline measured in the same run.

    python benchmarks/python_env_probe.py [--python PATH] [--runs 20] [--ab BEFORE_TFDOCTOR AFTER_TFDOCTOR]

1. The snapshot in-process (dist-info scan, TensorFlow metadata, build_info.py; the OpenMP scan is
   the openmp probe's, measured by benchmarks/openmp_probe.py)
   against listing every distribution's metadata with importlib.metadata, the obvious alternative.
2. The snapshot under another interpreter (`--python`), against that interpreter's bare start-up.
3. The PKG and CPU checks over the inspected environment's facts, against importing
   `packaging.specifiers`, which TensorFlow's plain numeric ranges let the checks skip.
4. Verifying this interpreter's TensorFlow against its RECORD (shared objects and __init__.py files: each
   one's existence and size, sha256 of the smallest within the hash budget; part of 1), against reading the
   same RECORD line by line, the obvious way (existence only).
5. The whole `tfdoctor check --python PATH` against `PATH -c "import tensorflow"` in that environment: the
   pre-job hook's budget (3 %, issue 26: docs/writing-a-check.md) for an inspected environment. With
   `--ab BEFORE AFTER` (two `tfdoctor` scripts, regular installs of two commits), both are measured turn by
   turn in the same run, with the import.
The processes of 2, 3 and 5 are fresh interpreters, interleaved so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _measure import median_ms, run_once

from tfdoctor.facts.probes import pyenv_snapshot

LIMIT = 0.03  # of `import tensorflow` in the inspected environment: the pre-job hook's budget (issue 26)

SETUP = """
from tfdoctor.facts import Facts
from tfdoctor.engine import run_checks
from tfdoctor.registry import load_registry, select_checks
facts = Facts.load({facts!r})
checks = select_checks(load_registry().checks, ("PKG", "CPU"))
"""
RUN_CHECKS = "run_checks(checks, facts)\n"
IMPORT_PACKAGING = "import packaging.specifiers, packaging.requirements\n"


def interleaved(first: list[str], second: list[str], runs: int) -> tuple[float, float]:
    a, b = [], []
    for _ in range(runs):
        a.append(run_once(first).seconds)
        b.append(run_once(second).seconds)
    return statistics.median(a), statistics.median(b)


def all_metadata() -> None:
    from importlib.metadata import distributions

    for dist in distributions():
        dist.metadata.get_all("Requires-Dist")


def record_line(runs: int) -> None:
    """4.: TensorFlow's RECORD verified as the snapshot does it, against splitting it into lines."""
    import glob
    import site

    found = sorted(d for folder in site.getsitepackages()  # this interpreter's (a venv's own when in one)
                   for d in glob.glob(os.path.join(folder, "tensorflow*-*.dist-info")))
    found = [d for d in found if os.path.exists(os.path.join(d, "RECORD"))]
    if not found:
        print("4. no TensorFlow RECORD in this interpreter's site-packages: not measured")
        return
    dist_dir = found[0]
    location = os.path.dirname(dist_dir)

    def by_lines() -> None:
        with open(os.path.join(dist_dir, "RECORD"), encoding="utf-8") as handle:
            for line in handle.read().splitlines():
                path = line.split(",", 1)[0]
                if path.endswith("__init__.py") or ".so" in path:
                    os.path.exists(os.path.join(location, path))

    verify = median_ms(lambda: pyenv_snapshot.verify_record(dist_dir, location), runs, warm=True)
    lines = median_ms(by_lines, runs, warm=True)
    checked = pyenv_snapshot.verify_record(dist_dir, location)
    sizes_only = median_ms(lambda: pyenv_snapshot.verify_record(dist_dir, location, hash_budget=0), runs, warm=True)
    print(f"4. RECORD of {os.path.basename(dist_dir)}: median {verify:.1f} ms ({checked['checked']} files: existence "
          f"and size; sha256 of {checked['hashed']} shared objects, {checked['hashed_bytes'] // 1024} KiB within the "
          f"{checked['hash_budget'] // (1024 * 1024)} MiB budget; {checked['missing_count']} missing, "
          f"{checked['size_mismatch_count']} resized, {checked['hash_mismatch_count']} altered); without hashing: "
          f"{sizes_only:.1f} ms; baseline reading it line by line (existence only): {lines:.1f} ms "
          f"({verify / lines:.2f}x)")
    with tempfile.TemporaryDirectory() as folder:  # what the snapshot keeps between runs (its cache folder)
        def with_kept() -> dict:
            return pyenv_snapshot.verify_record(
                dist_dir, location, hash_cache=pyenv_snapshot.HashCache(os.path.join(folder, "sums.json")),
                record_memo=pyenv_snapshot.record_memo(os.path.join(folder, "lines.json")))

        kept = median_ms(with_kept, runs, warm=True)
        cached = with_kept()["hash_cached"]
    print(f"   with the RECORD's lines and the sums an earlier run kept: median {kept:.1f} ms ({cached} sums kept; "
          f"{verify / kept:.1f}x faster than from scratch)")
    real = pyenv_snapshot.verify_record
    with_record, without = [], []
    for _ in range(runs):  # interleaved, so load hits both alike
        with_record.append(median_ms(pyenv_snapshot.snapshot, 1, warm=False))
        pyenv_snapshot.verify_record = lambda dist_dir, location, **kept: {"checked": 0, "missing_count": 0,
                                                                            "missing": []}
        try:
            without.append(median_ms(pyenv_snapshot.snapshot, 1, warm=False))
        finally:
            pyenv_snapshot.verify_record = real
    print(f"   the whole snapshot with it: median {statistics.median(with_record):.1f} ms; without it (same run): "
          f"{statistics.median(without):.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the environment to inspect")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--ab", nargs=2, metavar="TFDOCTOR", help="only 5., for two tfdoctor scripts")
    args = parser.parse_args()
    if args.ab:
        return check_python_ab(args.python, args.ab, args.runs)
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")

    snap = median_ms(pyenv_snapshot.snapshot, args.runs, warm=False)
    meta = median_ms(all_metadata, args.runs, warm=False)
    count = len(pyenv_snapshot.snapshot()["distributions"])
    print(f"1. snapshot in-process: median {snap:.1f} ms ({count} distributions); baseline "
          f"importlib.metadata over all distributions: {meta:.1f} ms ({snap / meta:.2f}x)")

    record_line(args.runs)

    source = Path(pyenv_snapshot.__file__).read_text()
    other, bare = interleaved([args.python, "-B", "-c", source], [args.python, "-c", "pass"], args.runs)
    print(f"2. snapshot under {args.python}: median {other * 1000:.0f} ms; baseline bare start-up "
          f"{bare * 1000:.0f} ms (snapshot adds {(other - bare) * 1000:.0f} ms)")

    facts_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"tfdoctor-bench-facts-{os.getpid()}.json"
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.machine import Machine
    from tfdoctor.registry import load_registry

    machine = Machine(python=None if args.python == sys.executable else args.python, timeout=30)
    facts_file.write_text(gather_facts(load_registry().probes, machine).dumps())
    try:
        setup = SETUP.format(facts=str(facts_file))
        checks, floor = interleaved([sys.executable, "-c", setup + RUN_CHECKS], [sys.executable, "-c", setup],
                                    args.runs)
        packaging, floor2 = interleaved([sys.executable, "-c", setup + IMPORT_PACKAGING],
                                        [sys.executable, "-c", setup], args.runs)
    finally:
        facts_file.unlink()
    print(f"3. running the PKG+CPU checks over those facts: median {(checks - floor) * 1000:.0f} ms; baseline "
          f"importing packaging.specifiers+requirements: {(packaging - floor2) * 1000:.0f} ms (each above the "
          "same process that loads the facts and the checks)")
    return check_python_budget(args.python, max(3, args.runs // 4))


def check_python_budget(python: str, runs: int) -> int:
    """5.: the pre-job hook with --python against importing TensorFlow in that environment, interleaved."""
    import shutil

    script = shutil.which("tfdoctor", path=str(Path(sys.executable).parent))
    check = [script, "check", "--python", python] if script else [sys.executable, "-m", "tfdoctor", "check",
                                                                   "--python", python]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    baseline = [python, "-c", "import tensorflow"]
    if run_once([python, "-c", "import tensorflow.python.platform.build_info"], env=env).returncode != 0:
        print(f"5. {python} cannot import tensorflow: no baseline, not measured")
        return 0
    run_once(check, env=env)  # warm the page cache and .pyc files; not counted
    run_once(baseline, env=env)
    hook, imports = [], []
    for _ in range(runs):
        hook.append(run_once(check, env=env).seconds)
        imports.append(run_once(baseline, env=env).seconds)
    ratio = statistics.median(hook) / statistics.median(imports)
    print(f"5. tfdoctor check --python {python}: median {statistics.median(hook) * 1000:.0f} ms over {runs} runs; "
          f"baseline `import tensorflow` there: {statistics.median(imports) * 1000:.0f} ms; ratio "
          f"{ratio * 100:.1f} % (budget {LIMIT * 100:g} %); load average {os.getloadavg()[0]:.2f}")
    return 0 if ratio <= LIMIT else 1



def _wall_and_cpu(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time, and CPU time (user + system) of the process and the children it waited for (the snapshot's
    interpreter): steadier than wall time on a loaded machine."""
    import subprocess
    import time

    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def check_python_ab(python: str, scripts: list[str], runs: int) -> int:
    """5. with two installs: `check --python` of each and `import tensorflow`, turn by turn."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    commands = [[script, "check", "--python", python] for script in scripts] + [[python, "-c", "import tensorflow"]]
    for command in commands:
        run_once(command, env=env)  # warm the page cache and .pyc files; not counted
    times: list[list[float]] = [[] for _ in commands]
    cpu: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for command, found, used in zip(commands, times, cpu, strict=True):
            seconds, cpu_seconds = _wall_and_cpu(command, env)
            found.append(seconds)
            used.append(cpu_seconds)
    medians = [statistics.median(t) for t in times]
    cpus = [statistics.median(c) for c in cpu]
    each = [f"{script}: {m * 1000:.0f} ms ({m / medians[2] * 100:.1f} %), CPU {c * 1000:.0f} ms"
            for script, m, c in zip(scripts, medians[:2], cpus[:2], strict=True)]
    print(f"5. check --python {python}, {runs} rounds turn by turn, load average {os.getloadavg()[0]:.2f}: "
          f"import tensorflow {medians[2] * 1000:.0f} ms (CPU {cpus[2] * 1000:.0f} ms); " + "; ".join(each))
    return 0 if medians[1] / medians[2] <= 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
