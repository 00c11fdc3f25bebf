"""`profile --compare` inside its budget on a loaded machine (issue 22, "Done when").

    python benchmarks/profile_compare_budget.py [N] [--load K] [--budget S] [--claim intra|aa|aa-cpu|all]

Starts K processes that each keep one CPU busy (`python3 -c 'while 1: pass'`, default 1) and, N times
(default 5), runs through the command line, as a user would:

  intra  tfdoctor profile --workload matmul --device cpu --compare intra2.sh intra1.sh --budget S
         (TF_NUM_INTRAOP_THREADS=2 against 1: the effect that holds on every multi-core x86 CPU)
  aa     the same with intra2.sh against itself, timed in wall time like intra (A/A): any "slower" or
         "faster" is a false verdict
  aa-cpu the same A/A timed in CPU time (what a precision or oneDNN comparison uses): the per-round
         differences show how much two processes of one environment differ (stats.PROCESS_SIGMA)

For each run it prints the figure (B/A ratio and interval), the baseline arm's own step time and the
candidate's from the same run, the budget, the load (spinners, load average, the share of the CPUs other
processes used), the verdict, rounds, chunk pairs, the metric and the seconds the command took
(start to exit, measured here). The summary counts the runs decided within the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def spinners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]


def run_compare(a: Path, b: Path, budget: float, *extra: str) -> tuple[dict[str, object], float, int]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "profile", "--workload", "matmul", "--device", "cpu",
                           "--compare", str(a), str(b), "--budget", str(budget), "--format", "json", *extra],
                          env=env, capture_output=True, text=True, timeout=budget + 120)
    seconds = time.monotonic() - started
    try:
        return json.loads(done.stdout), seconds, done.returncode
    except ValueError:
        return {"error": done.stderr[-400:]}, seconds, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=5)
    parser.add_argument("--load", type=int, default=1, help="processes each keeping one CPU busy")
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--claim", choices=("intra", "aa", "aa-cpu", "all"), default="intra")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tfdoctor-bench-"))
    two, one = folder / "intra2.sh", folder / "intra1.sh"
    two.write_text("export TF_NUM_INTRAOP_THREADS=2\n")
    one.write_text("export TF_NUM_INTRAOP_THREADS=1\n")
    claims: dict[str, tuple[Path, Path, tuple[str, ...]]] = {
        "intra": (two, one, ()), "aa": (two, two, ("--metric", "wall")), "aa-cpu": (two, two, ("--metric", "cpu"))}
    chosen = list(claims) if args.claim == "all" else [args.claim]
    counts = {name: {"decided": 0, "within": 0, "slower": 0, "faster": 0, "worst": 0.0} for name in chosen}
    # A kill of this script must not leave its busy loops behind: SIGTERM unwinds through `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = spinners(args.load)
    print(f"machine: {os.cpu_count()} CPUs; {args.load} busy-loop process(es); budget {args.budget:g} s", flush=True)
    try:
        for repetition in range(1, args.n + 1):
            for name in chosen:
                a, b, extra = claims[name]
                data, seconds, code = run_compare(a, b, args.budget, *extra)
                interval = data.get("interval") or {}
                assert isinstance(interval, dict)
                verdict = data.get("verdict")
                count = counts[name]
                count["decided"] += verdict in ("slower", "faster", "no-effect")
                count["within"] += seconds <= args.budget
                count["slower"] += verdict == "slower"
                count["faster"] += verdict == "faster"
                count["worst"] = max(float(count["worst"]), seconds)
                print(json.dumps({
                    "rep": repetition, "claim": name, "verdict": verdict, "ratio": interval.get("ratio"),
                    "low": interval.get("low"), "high": interval.get("high"),
                    "confidence": interval.get("confidence"), "baseline_step": data.get("baseline_step_seconds"),
                    "candidate_step": data.get("candidate_step_seconds"), "metric": data.get("metric"),
                    "rounds": data.get("rounds"), "pairs": data.get("pairs"), "compare_seconds": data.get("seconds"),
                    "command_seconds": round(seconds, 1), "budget": args.budget, "busy_loops": args.load,
                    "foreign_cpu": data.get("foreign_cpu"), "load1": round(os.getloadavg()[0], 2),
                    "stopped": data.get("stopped"), "error": data.get("error"), "exit": code,
                    "log_ratios": data.get("log_ratios")}), flush=True)
    finally:
        for process in load:
            process.kill()
            process.wait()
    print("summary:")
    for name, count in counts.items():
        print(f"  {name}: decided {count['decided']}/{args.n} (slower {count['slower']}, faster {count['faster']}); "
              f"within the budget {count['within']}/{args.n}; longest command {float(count['worst']):.1f} s")


if __name__ == "__main__":
    main()
