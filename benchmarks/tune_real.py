"""A real `tfdoctor tune` of the built-in micro-benchmark on this machine, with a time budget.

Runs the command exactly as a user would (a subprocess: `tfdoctor tune --time 180 --write env.sh`), then
prints the winner, its gain over the rule-based defaults and the current settings (medians of the
re-measured runs, with spread), and whether the winner is no worse than the rule-based defaults within
the measured noise — the baseline comes from the same run.

    python benchmarks/tune_real.py [--time 180] [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tfdoctor.tune.results import load_results  # noqa: E402
from tfdoctor.tune.search import Stats  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", type=float, default=180.0)
    parser.add_argument("--out", default=None, help="folder for results, env.sh and heatmap (default: a temp dir)")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="tfdoctor-tune-"))
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "tune", "--time", f"{args.time:g}", "--results",
                           "results.jsonl", "--write", "env.sh", "--plot", "heatmap.html", "--force"],
                          cwd=out, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr[-2000:])
        return 1
    _header, records = load_results(out / "results.jsonl")
    print(f"wall time {elapsed:.0f} s for a --time {args.time:g} budget; {len(records)} runs "
          f"({sum(r.phase in ('current', 'rule', 'search') for r in records)} search trials, "
          f"{sum(r.phase == 'confirm' for r in records)} confirmation runs, {sum(not r.ok for r in records)} failed)")
    text = done.stdout
    winner_line = next((line for line in text.splitlines() if line.startswith("winner:")), "")
    print(winner_line)
    rule_values = [r.value for r in records if r.ok and (r.phase == "rule" or r.role == "rule")]
    rule = Stats(tuple(rule_values))
    print(f"rule-based defaults (baseline, same run): median {rule.median:.4g} over {rule.n} runs, "
          f"spread {rule.spread * 100:.1f} %")
    gain_line = next((line for line in text.splitlines() if "vs rule-based defaults" in line), "")
    print(gain_line.strip())
    print(f"env.sh written: {(out / 'env.sh').exists()} ({out / 'env.sh'}); heatmap: {out / 'heatmap.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
