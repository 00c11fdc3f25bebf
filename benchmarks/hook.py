"""The pre-job hook's wall time on this machine, against the interpreter's own start-up, in one run.

  hook      tfdoctor check --fail-on error --quiet   (the target: under 0.5 s)
  baseline  python -c pass                           (same interpreter: the floor any Python tool pays)

Both as fresh processes, alternated, median of --runs. The hook runs with the caller's environment, from
an empty folder (no project configuration), through the installed `tfdoctor` script when there is one.

    python benchmarks/hook.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(argv: list[str], cwd: str) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                          timeout=60)
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    script = Path(sys.executable).parent / "tfdoctor"
    hook = [str(script)] if script.exists() else [sys.executable, "-m", "tfdoctor"]
    hook += ["check", "--fail-on", "error", "--quiet"]
    baseline = [sys.executable, "-c", "pass"]
    hook_times, base_times, codes = [], [], set()
    with tempfile.TemporaryDirectory() as cwd:
        timed(hook, cwd)  # warm the page cache and byte-code once
        for _ in range(args.runs):
            seconds, code = timed(hook, cwd)
            hook_times.append(seconds)
            codes.add(code)
            base_times.append(timed(baseline, cwd)[0])
    h, b = statistics.median(hook_times), statistics.median(base_times)
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"{' '.join(hook[-4:])}: median {h * 1000:.0f} ms over {args.runs} runs "
          f"(min {min(hook_times) * 1000:.0f}, max {max(hook_times) * 1000:.0f}), exit codes {sorted(codes)}"
          f"  (target < 500 ms)")
    print(f"baseline python -c pass: median {b * 1000:.0f} ms")
    print(f"hook minus interpreter start-up: {(h - b) * 1000:.0f} ms; ratio {h / b:.1f}x")


if __name__ == "__main__":
    main()
