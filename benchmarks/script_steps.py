"""`tfdoctor profile --script` on the test scripts (tests/data/scripts/), N times each (issue 22).

    python benchmarks/script_steps.py [N [WORD]]     (WORD: only the scripts whose name contains it)

For each run: the steps found (count, where from, warm-up left out), the input share and the PROF
verdict, the run's wall time and the machine's load average; and, from the same trace, the baseline —
what the profile reported before steps were found without markers (only the script's own markers, each
marker's window as the step, no warm-up left out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfdoctor.profile.xspace import load_xspace, summarize_xspace

SCRIPTS = Path(__file__).resolve().parent.parent / "tests" / "data" / "scripts"
EXPECTED = {"fit_input_bound": True, "fit_compute_bound": False, "loop_input_bound": True,
            "loop_compute_bound": False, "loop_input_bound_marked": True, "eager_no_steps": None}


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def run(script: Path) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tfdoctor", "profile", "--script", str(script), "--device",
                               "cpu", "--logdir", logdir, "--format", "json"],
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), capture_output=True, text=True,
                              timeout=600)
        wall = time.perf_counter() - started
        data = json.loads(done.stdout)
        profile = data["profile"]
        before = summarize_xspace(load_xspace(profile["xspace_file"])) if profile.get("xspace_file") else {}
    return {"wall": wall, "exit": done.returncode, "profile": profile, "before": before,
            "codes": [f["code"] for f in data["findings"]]}


def share(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "unknown"


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    print(f"{os.cpu_count()} CPUs; load average {load()} at the start")
    held: dict[str, int] = {}
    for name, bound in EXPECTED.items():
        if only not in name:
            continue
        held[name] = 0
        for _ in range(repetitions):
            result = run(SCRIPTS / f"{name}.py")
            profile, before = result["profile"], result["before"]
            steps = profile["steps"]
            right = ("PROF001" in result["codes"]) == bool(bound) and (bound is not None or steps["count"] == 0)
            held[name] += right
            earlier = before.get("steps", {}).get("count")
            print(f"{name:<26} steps {steps['count']:>2} from {profile.get('step_source')} "
                  f"({steps.get('excluded_warmup')} warm-up left out), input share {share(profile['input_share'])}, "
                  f"findings {','.join(result['codes']) or '-'} | before: steps {earlier}, "
                  f"input share {share(before.get('input_share'))} | {result['wall']:.1f} s, load {load()}")
    for name, count in held.items():
        print(f"{name}: the verdict was right in {count} of {repetitions}")


if __name__ == "__main__":
    main()
