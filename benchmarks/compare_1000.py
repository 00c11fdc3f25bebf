"""`tfdoctor compare` over 1,000 facts files, against json.load of the same files, in one run.

Both are measured as fresh processes of this interpreter (start-up included), median of --runs:
  compare   tfdoctor compare --format json FILES   (the target: under 5 s here)
  baseline  python -c "json.load every file"       (the floor: reading the JSON at all)
Each file looks like a real GPU node's facts (4 GPUs, NUMA, ~200 installed packages); two are odd.

    python benchmarks/compare_1000.py [--nodes 1000] [--runs 3]
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

from tfdoctor.testing.fleet import write_fleet

BASELINE = "import json,sys\nfor p in sys.argv[1:]:\n    with open(p) as f: json.load(f)\n"


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=120)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    packages = {f"package-{i:03d}": f"1.{i}.0" for i in range(200)}
    with tempfile.TemporaryDirectory() as tmp:
        odd = {"node0003": {"driver": "535.104.05"}, "node0011": {"gpus": 3}}
        for node in range(1, args.nodes + 1):
            odd.setdefault(f"node{node:04d}", {})["packages"] = packages
        paths = [str(p) for p in write_fleet(Path(tmp), args.nodes, odd)]
        size = sum(os.path.getsize(p) for p in paths)
        compare = [sys.executable, "-m", "tfdoctor", "compare", "--format", "json", *paths]
        baseline = [sys.executable, "-c", BASELINE, *paths]
        result = subprocess.run(compare, capture_output=True, text=True, check=False)
        assert result.returncode == 1 and '"node0003"' in result.stdout, result.stderr
        compare_times, baseline_times = [], []
        for _ in range(args.runs):
            compare_times.append(timed(compare))
            baseline_times.append(timed(baseline))
    c, b = statistics.median(compare_times), statistics.median(baseline_times)
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"{args.nodes} facts files, {size / 1e6:.1f} MB, median of {args.runs} runs")
    print(f"tfdoctor compare --format json: {c:.2f} s  (target < 5 s)")
    print(f"baseline json.load of the same files (fresh interpreter): {b:.2f} s")
    print(f"ratio: {c / b:.1f}x")


if __name__ == "__main__":
    main()
