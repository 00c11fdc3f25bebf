"""How long `tfdoctor check` takes on this machine, against `python -c "import tensorflow"` measured
in the same run (issue 26: at most 3 %; issue 2 had 5 %; peak RSS under 60 MB).

    python benchmarks/check_speed.py [--runs 10] [--tf-runs 5] [--tf-python PATH] [--nothing-kept]

The TensorFlow baseline needs an interpreter with TensorFlow installed (this one by default).
--nothing-kept runs every check with TFDOCTOR_CACHE_DIR set empty: nothing is kept from one run to the next,
as on a node's first run after an install or in a job without HOME (the RECORD verified from scratch).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _measure import Run, median_of, run_once

from tfdoctor.facts.probes.pyenv_snapshot import cache_folder

LIMIT = 0.03  # of the import's time (issue 26)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tf-runs", type=int, default=5)
    parser.add_argument("--tf-python", default=sys.executable)
    parser.add_argument("--nothing-kept", action="store_true", help="checks keep nothing between runs")
    args = parser.parse_args()

    script = shutil.which("tfdoctor", path=str(Path(sys.executable).parent)) or shutil.which("tfdoctor")
    check = [script, "check"] if script else [sys.executable, "-m", "tfdoctor", "check"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    check_env = {**env, "TFDOCTOR_CACHE_DIR": ""} if args.nothing_kept else env
    has_tf = subprocess.run([args.tf_python, "-c", "import importlib.util as u; "
                             "raise SystemExit(u.find_spec('tensorflow') is None)"], check=False).returncode == 0
    tf_import = [args.tf_python, "-c", "import tensorflow"]
    median_of(check, 2, env=check_env)  # warm the page cache and .pyc files; not counted
    if has_tf:
        median_of(tf_import, 1, env=env)
    # Interleaved, so that a change in the machine's load during the run hits both figures alike.
    check_runs: list[Run] = []
    tf_runs: list[Run] = []
    for i in range(args.runs):
        check_runs.append(run_once(check, env=check_env))
        if has_tf and len(tf_runs) < args.tf_runs and i % max(1, args.runs // args.tf_runs) == 0:
            tf_runs.append(run_once(tf_import, env=env))
    check_s = statistics.median(r.seconds for r in check_runs)
    check_rss = max(r.peak_rss_mb for r in check_runs)
    codes = sorted({r.returncode for r in check_runs})
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.2f}")
    kept = "nothing kept between runs" if args.nothing_kept else kept_where(check_env)
    print(f"tfdoctor check: median {check_s * 1000:.0f} ms over {args.runs} runs "
          f"(exit codes {codes}), peak RSS {check_rss:.1f} MB; {kept}")
    if not has_tf:
        print(f"baseline: {args.tf_python} has no TensorFlow; pass --tf-python PATH")
        return 2
    tf_s = statistics.median(r.seconds for r in tf_runs)
    tf_rss = max(r.peak_rss_mb for r in tf_runs)
    ratio = check_s / tf_s
    print(f'baseline python -c "import tensorflow": median {tf_s * 1000:.0f} ms over {len(tf_runs)} runs, '
          f"peak RSS {tf_rss:.0f} MB")
    print(f"ratio: {ratio * 100:.1f} % of the TensorFlow import (limit {LIMIT * 100:g} %); "
          f"RSS {check_rss:.1f} MB (limit 60 MB)")
    return 0 if ratio <= LIMIT and check_rss < 60 else 1


def kept_where(env: dict[str, str]) -> str:
    """Where the checks keep what RECORD verification learns, by the probe's own rule (cache_folder)."""
    folder = cache_folder(env)
    return f"kept in {folder}" if folder else "nothing kept between runs (no absolute cache folder in the environment)"


if __name__ == "__main__":
    raise SystemExit(main())
