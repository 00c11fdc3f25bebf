"""What recording every distribution's Requires-Dist costs the snapshot (issue 36): the snapshot of this
interpreter in-process, 30 rounds turn by turn with and without that reading (the rest identical).

    python benchmarks/snapshot_requires_cost.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import tfdoctor.facts.probes.pyenv_snapshot as pyenv_snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    reading = pyenv_snapshot._requires_of
    variants = {"with": reading, "without": lambda dist_dir: None}
    times: dict[str, list[float]] = {name: [] for name in variants}
    listed = 0
    for round_ in range(args.rounds):
        order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in order:
            pyenv_snapshot._requires_of = variants[name]
            started = time.perf_counter()
            listed = len(pyenv_snapshot.snapshot(cache="")["distributions"])
            times[name].append(time.perf_counter() - started)
    pyenv_snapshot._requires_of = reading
    print(f"distributions: {listed}, load average {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        print(f"{name} the Requires-Dist of every distribution: median {1000 * statistics.median(values):.1f} ms, "
              f"min {1000 * min(values):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
