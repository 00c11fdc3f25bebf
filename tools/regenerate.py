"""Rewrite every generated file of the repository from its source, in one command:

    python tools/regenerate.py

1. tfdoctor/knowledge/compiled/*.json   from tfdoctor/knowledge/*.toml   (python -m tfdoctor.knowledge)
2. docs/checks.md                       from the checks' docstrings      (tfdoctor explain --all)
3. tests/snapshots/gpu/*.json           from tests/support/gpu_scenarios.py      (the GPU probes over fake machines)
4. tests/snapshots/checks/numa*.json    from tests/support/numa_hosts.py         (every probe over fake NUMA hosts)
   tests/snapshots/containers/*.json    from tests/support/container_fixtures.py (every probe over fake containers)
5. tests/golden/*                       from tests/snapshots/core/*.json (UPDATE_GOLDEN=1 pytest tests/test_golden.py)

Run it after adding or changing a check, a probe, a knowledge table or a renderer, then review
`git diff` like code: every changed file is listed at the end. A test whose failure names this command is
one of these files gone stale. Each step runs with this interpreter, from the repository this file is in.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the tfdoctor of this checkout, installed or not

from tfdoctor.fixes.write import WriteError, write_file  # noqa: E402

GENERATED = ("tfdoctor/knowledge/compiled", "docs/checks.md", "tests/snapshots/gpu", "tests/snapshots/checks",
             "tests/snapshots/containers", "tests/golden")


def digests() -> dict[str, str]:
    """Path -> content hash of every generated file, to say at the end which ones changed."""
    found: dict[str, str] = {}
    for name in GENERATED:
        top = REPO / name
        for path in sorted([top] if top.is_file() else top.rglob("*") if top.is_dir() else []):
            if path.is_file() and "__pycache__" not in path.parts:
                found[str(path.relative_to(REPO))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


STEP_TIMEOUT = 900  # seconds: the golden reports' pytest on a loaded 2-CPU machine takes about 30


def run(title: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    print(f"-- {title}", flush=True)
    # This checkout's package first: a script under tests/ would otherwise import whichever tfdoctor is
    # installed (another worktree's, or none).
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": path, **(env or {})}, timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        sys.exit(f"tools/regenerate.py: `{' '.join(args)}` still running after {STEP_TIMEOUT} s: stopped")
    if done.returncode != 0:
        sys.exit(f"tools/regenerate.py: `{' '.join(args)}` failed (exit {done.returncode}):\n"
                 f"{last_lines(done.stdout + done.stderr)}")
    return done


SHOWN_LINES = 200  # of a failed step's output: pytest's summary and a traceback's end are at the bottom


def last_lines(output: str, keep: int = SHOWN_LINES) -> str:
    """The end of a failed step's output, saying how much was left out (a failing golden run prints MBs)."""
    lines = output.splitlines()
    if len(lines) <= keep:
        return output
    return f"[{len(lines) - keep} earlier lines not shown]\n" + "\n".join(lines[-keep:]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/regenerate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-gpu-fixtures", action="store_true",
                        help="leave tests/snapshots/gpu/ as it is (they need ldconfig; no probe changed)")
    options = parser.parse_args(argv)
    before = digests()
    run("knowledge twins: python -m tfdoctor.knowledge", ["-m", "tfdoctor.knowledge"])
    page = run("docs/checks.md: tfdoctor explain --all", ["-m", "tfdoctor", "explain", "--all"])
    try:
        write_file(REPO / "docs" / "checks.md", page.stdout, force=True)  # the one writer: temp file + rename
    except WriteError as exc:
        sys.exit(f"tools/regenerate.py: {exc}")
    skipped = options.skip_gpu_fixtures or (shutil.which("ldconfig") is None and shutil.which("/sbin/ldconfig") is None)
    if options.skip_gpu_fixtures:
        print("-- GPU fixtures: skipped (--skip-gpu-fixtures)")
    elif shutil.which("ldconfig") is None and shutil.which("/sbin/ldconfig") is None:
        print("-- GPU fixtures: skipped, ldconfig is not installed (a fixture records a real ld.so.cache)")
    else:
        run("GPU fixtures: python tests/support/gpu_scenarios.py", ["tests/support/gpu_scenarios.py"])
    run("NUMA fixtures: python tests/support/numa_hosts.py", ["tests/support/numa_hosts.py"])
    run("container fixtures: python tests/support/container_fixtures.py", ["tests/support/container_fixtures.py"])
    run("golden reports: UPDATE_GOLDEN=1 pytest tests/test_golden.py",
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_golden.py"], env={"UPDATE_GOLDEN": "1"})
    after = digests()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    # The note on both branches: a list of changed files is not the whole story when a step was skipped.
    print(("changed" if changed else "nothing changed: every generated file was up to date")
          + (" (tests/snapshots/gpu/ not regenerated: skipped)" if skipped else "") + (":" if changed else ""))
    for name in changed:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
