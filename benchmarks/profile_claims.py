"""The micro-profile's claims on this machine, N times each: reported here, not asserted in tests.

    python benchmarks/profile_claims.py [N [WORD]]     (WORD: only the claims whose name contains it)

For each of N repetitions, A/B comparisons within the 60 s budget, each printed with its verdict, ratio,
interval, metric, rounds and seconds, the machine's load average and the share of the CPUs other
processes used:

  claims (expected on every 2-core x86 CPU; counted as held when decided "slower" within the budget)
    TF_NUM_INTRAOP_THREADS=1 slower than 2 (matmul)
  measurements (their direction depends on the CPU; the verdicts are counted, nothing is expected)
    the mixed policy check recommends here against float32 (cnn), mixed_float16 against float32 (cnn),
    TF_ENABLE_ONEDNN_OPTS=0 against the default (cnn), TF_NUM_INTRAOP_THREADS=1 against 2 (cnn)

and two profiles: the slow py_function pipeline must show an input share above 0.7, the synthetic one
below 0.1. The summary gives, per line, how often a claim held or how often each verdict came out.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter

from tfdoctor.derive.precision import set_policy_code
from tfdoctor.engine import gather_facts
from tfdoctor.facts.machine import Machine
from tfdoctor.profile.cli import policy_to_measure
from tfdoctor.profile.compare import Arm, compare
from tfdoctor.profile.runner import run_workload
from tfdoctor.registry import load_registry


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    base = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    policy, why = policy_to_measure(gather_facts(load_registry().probes, Machine(environ=base)), "cpu")
    print(f"machine: {os.cpu_count()} CPUs; the mixed policy check recommends here: {policy} ({why})", flush=True)
    intra = (Arm("intra=2", dict(base, TF_NUM_INTRAOP_THREADS="2")),
             Arm("intra=1", dict(base, TF_NUM_INTRAOP_THREADS="1")))
    # name: (arms, workload, expected verdict or None for a measurement reported as it comes out)
    comparisons = {
        "TF_NUM_INTRAOP_THREADS=1 slower than 2 (matmul)": (intra, "matmul", "slower"),
        "TF_NUM_INTRAOP_THREADS=1 against 2 (cnn)": (intra, "cnn", None),
        "mixed_float16 against float32 (cnn)": (
            (Arm("float32", base), Arm("mixed_float16", base, set_policy_code("mixed_float16"))), "cnn", None),
        "TF_ENABLE_ONEDNN_OPTS=0 against the default (cnn)": (
            (Arm("default", base), Arm("TF_ENABLE_ONEDNN_OPTS=0", dict(base, TF_ENABLE_ONEDNN_OPTS="0"))), "cnn", None),
    }
    if policy is not None and policy != "mixed_float16":
        comparisons[f"{policy} (recommended here) against float32 (cnn)"] = (
            (Arm("float32", base), Arm(policy, base, set_policy_code(policy))), "cnn", None)
    comparisons = {k: v for k, v in comparisons.items() if only in k}
    shares = [(w, n, t) for w, n, t in (
        ("pyfunc", "py_function pipeline input share > 0.7", lambda s: s > 0.7),
        ("cnn", "synthetic pipeline input share < 0.1", lambda s: s < 0.1)) if only in n]
    held = {name: 0 for name, (_a, _w, expected) in comparisons.items() if expected}
    held.update({n: 0 for _w, n, _t in shares})
    verdicts: dict[str, Counter[str]] = {name: Counter() for name, (_a, _w, expected) in comparisons.items()
                                         if not expected}
    for repetition in range(1, repetitions + 1):
        for name, ((a, b), workload, expected) in comparisons.items():
            started = time.monotonic()
            result = compare(a, b, workload, device="cpu")
            seconds = time.monotonic() - started
            if expected:
                held[name] += result.verdict == expected and seconds <= result.budget
            else:
                verdicts[name][result.verdict] += 1
            print(json.dumps({"rep": repetition, "claim": name, "verdict": result.verdict, "seconds": round(seconds, 1),
                              "budget": result.budget, "metric": result.metric, "rounds": result.rounds,
                              "pairs": result.pairs, "result": result.describe(), "foreign_cpu": result.foreign_cpu,
                              "load1": round(os.getloadavg()[0], 2)}), flush=True)
        for workload, name, test in shares:
            run = run_workload(workload, base, steps=20, warmup=3, timeout=120, device="cpu")
            share = run.input_share
            ok = bool(run.ok and share is not None and test(share))
            held[name] += ok
            print(json.dumps({"rep": repetition, "claim": name, "held": ok, "input_share": share,
                              "error": run.error, "load1": round(os.getloadavg()[0], 2)}), flush=True)
    print(f"summary (machine: {os.cpu_count()} CPUs):")
    for name, count in held.items():
        print(f"  {count}/{repetitions}  {name}")
    for name, counts in verdicts.items():
        print(f"  {dict(sorted(counts.items()))}  {name}")


if __name__ == "__main__":
    main()
