"""What a whole default `tfdoctor profile` costs, against `python -c "import tensorflow"` (issue 6:
at most 2.5× the import, both measured in the same run).

    python benchmarks/profile_cost.py [REPEATS]

Runs the two commands alternately REPEATS times (default 3), both with the same environment and a
throw-away HOME, and prints the wall times, their medians and the ratio of the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time


def wall(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: the profile had findings
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-500:]}")
    return seconds


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    home = tempfile.mkdtemp(prefix="tfdoctor-bench-home-")
    env = dict(os.environ, HOME=home, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("KERAS_HOME", None)
    imports, profiles = [], []
    for _ in range(repeats):
        imports.append(wall([sys.executable, "-c", "import tensorflow"], env))
        profiles.append(wall([sys.executable, "-m", "tfdoctor", "profile"], env))
    base, cost = statistics.median(imports), statistics.median(profiles)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"python -c 'import tensorflow': {', '.join(f'{s:.2f}' for s in imports)} s  median {base:.2f} s")
    print(f"tfdoctor profile (default):    {', '.join(f'{s:.2f}' for s in profiles)} s  median {cost:.2f} s")
    print(f"ratio {cost / base:.2f}x (target <= 2.5x)")


if __name__ == "__main__":
    main()
