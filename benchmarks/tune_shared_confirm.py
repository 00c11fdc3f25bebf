"""Wall time of a shared tune from its first trial to its written verdict: three workers against one worker on
the same budget, in the same run (issue 37: the confirmation and verification runs are shared out among the
live workers, as the search is, tfdoctor/tune/shared_pool.py).

The measured command is the fake job of tests/support/tune_fakes.py with a fixed run time (FAKE_JOB_SECONDS),
so the figure counts runs, not the machine's load: every run sleeps, and the CPUs stay free. Each setting is a
fresh journal-file study (`--storage`), the workers started at once; the clock starts when the first trial of
any worker starts (its counter file appears) and stops when the env script is written.

    python benchmarks/tune_shared_confirm.py [--seconds 1.0] [--budget 12] [--repeats 3] [--leaders 3] [--rounds 1]

Prints each setting's seconds and runs, and the ratio three workers / one worker (the issue asks ≤ 0.5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "support" / "tune_fakes.py"
METRIC = r"throughput: ([0-9.]+)"
SPACE = "".join(f"[parameters.{n}]\nlow = 1\nhigh = 4\n"
                for n in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"))
CLEARED = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY",
           "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")


def one_setting(workers: int, args: argparse.Namespace) -> tuple[float, int]:
    """(seconds from the first trial to the written env script, runs measured in all)."""
    with tempfile.TemporaryDirectory(prefix="tfdoctor-bench-") as folder:
        base = Path(folder)
        (base / "space.toml").write_text(SPACE)
        env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        env.update(PYTHONPATH=str(REPO), FAKE_JOB_DEPENDS="TF_NUM_INTRAOP_THREADS",
                   FAKE_JOB_SECONDS=str(args.seconds))
        processes = []
        for index in range(workers):
            argv = [sys.executable, "-m", "tfdoctor", "tune", "--storage", "study.journal", "--study", "b",
                    "--budget", str(args.budget), "--repeats", str(args.repeats), "--leaders", str(args.leaders),
                    "--space", "space.toml", "--seed", str(index + 1), "--results", f"r{index}.jsonl",
                    "--write", "env.sh", "--metric", METRIC, "--", sys.executable, str(FAKE)]
            processes.append(subprocess.Popen(argv, cwd=base, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                              text=True, env={**env, "FAKE_JOB_STATE": str(base / f"runs-{index}"),
                                                              "FAKE_JOB_SEED": str(index + 1)}))
        started = None
        while any(p.poll() is None for p in processes):
            if started is None and any((base / f"runs-{i}").exists() for i in range(workers)):
                started = time.time()
            time.sleep(0.01)
        failed = [p.stderr.read() for p in processes if p.returncode != 0]  # type: ignore[union-attr]
        if failed or started is None or not (base / "env.sh").exists():
            raise SystemExit(f"a worker failed: {failed[:1]}")
        for p in processes:
            p.stderr.close()  # type: ignore[union-attr]
        runs = sum(int((base / f"runs-{i}").read_text() or 0) for i in range(workers)
                   if (base / f"runs-{i}").exists())
        return (base / "env.sh").stat().st_mtime - started, runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="each run's fixed time")
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--leaders", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="repetitions of each setting (medians printed)")
    args = parser.parse_args()
    figures: dict[int, list[tuple[float, int]]] = {1: [], 3: []}
    for _round in range(args.rounds):
        for workers in (1, 3):  # the one-worker baseline in the same run, alternating
            figures[workers].append(one_setting(workers, args))
    print(f"fixed run time {args.seconds:g} s, budget {args.budget}, --repeats {args.repeats}, "
          f"--leaders {args.leaders}, {args.rounds} round(s)")
    medians = {}
    for workers, values in figures.items():
        medians[workers] = statistics.median(s for s, _ in values)
        print(f"{workers} worker(s): {medians[workers]:.1f} s from the first trial to the written verdict "
              f"({', '.join(f'{s:.1f} s/{n} runs' for s, n in values)})")
    print(f"ratio three workers / one worker: {medians[3] / medians[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
