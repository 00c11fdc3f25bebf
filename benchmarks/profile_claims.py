"""The micro-profile's claims on this machine, N times each (issue 6, "Done when").

    python benchmarks/profile_claims.py [N [WORD]]     (WORD: only the claims whose name contains it)

For each of N repetitions: three A/B comparisons (mixed_float16 vs float32; TF_ENABLE_ONEDNN_OPTS=0
vs the default; TF_NUM_INTRAOP_THREADS=1 vs 2), each must report "slower" within 60 s; and two
profiles: the slow py_function pipeline must show an input share above 0.7, the synthetic one below 0.1.
Prints every figure, the machine's load, and the count of repetitions in which each claim held.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tfdoctor.profile.compare import Arm, compare
from tfdoctor.profile.runner import run_workload

MIXED = "tf.keras.mixed_precision.set_global_policy('mixed_float16')"


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    base = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    comparisons = {
        "mixed_float16 slower than float32": (Arm("float32", base), Arm("mixed_float16", base, MIXED)),
        "TF_ENABLE_ONEDNN_OPTS=0 slower": (Arm("default", base),
                                           Arm("TF_ENABLE_ONEDNN_OPTS=0", dict(base, TF_ENABLE_ONEDNN_OPTS="0"))),
        "TF_NUM_INTRAOP_THREADS=1 slower than 2": (Arm("intra=2", dict(base, TF_NUM_INTRAOP_THREADS="2")),
                                                   Arm("intra=1", dict(base, TF_NUM_INTRAOP_THREADS="1"))),
        "TF_NUM_INTRAOP_THREADS=1 slower than 2 (matmul)": (
            Arm("intra=2", dict(base, TF_NUM_INTRAOP_THREADS="2")),
            Arm("intra=1", dict(base, TF_NUM_INTRAOP_THREADS="1"))),
    }
    comparisons = {k: v for k, v in comparisons.items() if only in k}
    shares = [(w, n, t) for w, n, t in (
        ("pyfunc", "py_function pipeline input share > 0.7", lambda s: s > 0.7),
        ("cnn", "synthetic pipeline input share < 0.1", lambda s: s < 0.1)) if only in n]
    held = {name: 0 for name in [*comparisons, *(n for _w, n, _t in shares)]}
    for repetition in range(1, repetitions + 1):
        for name, (a, b) in comparisons.items():
            started = time.monotonic()
            result = compare(a, b, "matmul" if "(matmul)" in name else "cnn", device="cpu")
            seconds = time.monotonic() - started
            ok = result.verdict == "slower" and seconds <= 60.0
            held[name] += ok
            print(json.dumps({"rep": repetition, "claim": name, "held": ok, "seconds": round(seconds, 1),
                              "result": result.describe(), "load1": os.getloadavg()[0]}), flush=True)
        for workload, name, test in shares:
            run = run_workload(workload, base, steps=20, warmup=3, timeout=120, device="cpu")
            share = run.input_share
            ok = bool(run.ok and share is not None and test(share))
            held[name] += ok
            print(json.dumps({"rep": repetition, "claim": name, "held": ok, "input_share": share,
                              "error": run.error, "load1": os.getloadavg()[0]}), flush=True)
    print(f"summary (machine: {os.cpu_count()} CPUs):")
    for name, count in held.items():
        print(f"  {count}/{repetitions}  {name}")


if __name__ == "__main__":
    main()
