"""A real `tfdoctor tune` of the built-in micro-benchmark on this machine, with a time budget.

Runs the command exactly as a user would (a subprocess: `tfdoctor tune --time 180 --write env.sh`), then
prints the verdict (the change written, with its paired interval against the current settings, or "keep
the current settings") and the medians of the best configuration searched and of both baselines — the
baselines come from the same run.

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

from tfdoctor.tune.results import load_results
from tfdoctor.tune.search import Tuner, TuneSettings
from tfdoctor.tune.space import Space


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", type=float, default=180.0)
    parser.add_argument("--out", default=None, help="folder for results, env.sh and plots (default: a temp dir)")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="tfdoctor-tune-"))
    out.mkdir(parents=True, exist_ok=True)
    results = out / time.strftime("results-%Y%m%d-%H%M%S.jsonl")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "tune", "--time", f"{args.time:g}", "--results",
                           str(results), "--write", "env.sh", "--html", "tune.html", "--force"],
                          cwd=out, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr[-2000:])
        return 1
    _header, records = load_results(results)
    print(f"wall time {elapsed:.0f} s for a --time {args.time:g} budget; {len(records)} runs "
          f"({sum(r.phase in ('current', 'rule', 'screen', 'search') for r in records)} search trials, "
          f"{sum(r.phase == 'confirm' for r in records)} confirmation runs, "
          f"{sum(r.phase == 'verify' for r in records)} verdict runs, {sum(not r.ok for r in records)} failed)")
    # The verdict from the tune's own statistics, recomputed from the results file (nothing is measured).
    header, _records = load_results(results)
    result = Tuner(Space.from_json(header["space"]), None, None,  # type: ignore[arg-type]
                   TuneSettings(maximize=header["maximize"]), header["seeds"], records,
                   current_env=header.get("current_env")).replay()
    assert result.verdict is not None
    print(f"verdict: {'apply ' + str(result.verdict.changes) if result.verdict.apply else 'keep the current settings'}"
          f" ({result.verdict.reason})")
    if result.candidate_stats is not None:
        print(f"best configuration searched: median {result.candidate_stats.median:.4g} over "
              f"{result.candidate_stats.n} runs (spread {result.candidate_stats.spread * 100:.1f} %)")
    if result.winner_stats is not None:
        print(f"written change: median {result.winner_stats.median:.4g} over {result.winner_stats.n} runs")
    for name, label in (("rule", "rule-based defaults"), ("current", "current settings")):
        if name in result.baselines:
            base, gain = result.baselines[name], result.gains[name]
            print(f"baseline (same run) {label}: median {base.median:.4g} over {base.n} runs "
                  f"(spread {base.spread * 100:.1f} %); written change {gain.describe()}")
    print(f"env.sh written: {(out / 'env.sh').exists()} ({out / 'env.sh'}); plots: {out / 'tune.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
