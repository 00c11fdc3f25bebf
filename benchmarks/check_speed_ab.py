"""`tfdoctor check` of two installed environments, interleaved, against `import tensorflow` in the same run:
what a change does to the pre-job hook's budget (issue 26: at most 3 % of the import; issue 2 had 5 %).

    python benchmarks/check_speed_ab.py BASELINE_VENV CHANGED_VENV [--runs 40] [--tf-every 4] [--nothing-kept]

Each VENV is an environment with tfdoctor installed the regular way (`pip install .`, `.pyc` files
written) and TensorFlow beside it, e.g. one with the commit before the change and one with the change.
Measure with PYTHONDONTWRITEBYTECODE unset: an editable install under it recompiles every run. This
machine's noise moves short runs far more than the 5 s import (a median and a minimum apart by half):
only figures from one run, taken turn by turn, compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _measure import run_once


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("venvs", nargs=2, metavar="VENV")
    parser.add_argument("--runs", type=int, default=40, help="checks per environment")
    parser.add_argument("--tf-every", type=int, default=4, help="one `import tensorflow` every N rounds")
    parser.add_argument("--nothing-kept", action="store_true",
                        help="checks keep nothing between runs (TFDOCTOR_CACHE_DIR empty): a node's first run")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"TF_CPP_MIN_LOG_LEVEL": "3"}
    check_env = {**env, "TFDOCTOR_CACHE_DIR": ""} if args.nothing_kept else env
    checks = {venv: [str(Path(venv) / "bin" / "tfdoctor"), "check"] for venv in args.venvs}
    tf_import = [str(Path(args.venvs[0]) / "bin" / "python"), "-c", "import tensorflow"]
    for command in checks.values():  # warm the page cache; not counted
        run_once(command, env=check_env)
    times: dict[str, list[float]] = {venv: [] for venv in args.venvs}
    tf_times: list[float] = []
    for i in range(args.runs):
        for venv, command in checks.items():  # turn by turn: a change in load hits both alike
            times[venv].append(run_once(command, env=check_env).seconds)
        if i % max(1, args.tf_every) == 0:
            tf_times.append(run_once(tf_import, env=env).seconds)
    tf = statistics.median(tf_times)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
          + ("; checks keep nothing between runs" if args.nothing_kept else ""))
    print(f'baseline python -c "import tensorflow": median {tf * 1000:.0f} ms over {len(tf_times)} runs')
    for venv in args.venvs:
        median = statistics.median(times[venv])
        print(f"{venv}: tfdoctor check median {median * 1000:.1f} ms, min {min(times[venv]) * 1000:.1f} ms "
              f"over {args.runs} runs: {median / tf * 100:.2f} % of the import (limit 3 %)")
    base, changed = (statistics.median(times[v]) for v in args.venvs)
    print(f"change: {(changed / base - 1) * 100:+.1f} % of the baseline's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
