"""What finding the OpenMP runtimes costs `tfdoctor check`, against baselines measured in the same run.

    python benchmarks/openmp_probe.py [--runs 20]

1. The openmp probe on this interpreter's environment (binary wheels' RECORDs at any depth, the bounded
   walk of unclaimed folders, LD_LIBRARY_PATH, {prefix}/lib), in-process.
2. Baseline A: the scan it replaced (one listing of each package's top, lib/, .libs/, .dylibs/ and the
   `*.libs` folders, no deeper, no owners), reproduced here.
3. Baseline B: a full os.walk of the same site folders, what "any depth" costs without RECORDs.
Interleaved per round so that a change in the machine's load hits all three alike; prints the load.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.openmp import probe_openmp, site_folders
from tfdoctor.facts.rooted_fs import RootedFs

_OLD_NAME = re.compile(r"^(libiomp5|libgomp|libomp)(?:md)?(?:-[0-9A-Za-z]+)?(?:\.so(?:\.[0-9]+)*|\.dylib|\.dll)$")


def one_level_scan(sites: list[str]) -> int:
    """The previous scan (pyenv_snapshot.openmp_runtimes before the openmp probe), for the baseline."""
    folders = [os.path.join(sys.prefix, "lib")]
    for site in sites:
        folders.append(site)
        for entry in sorted(os.scandir(site), key=lambda e: e.name):
            if not entry.is_dir() or entry.name.endswith((".dist-info", ".egg-info", "__pycache__")):
                continue
            if entry.name.endswith(".libs"):
                folders.append(entry.path)
            elif "." not in entry.name:
                folders += [entry.path] + [os.path.join(entry.path, s) for s in ("lib", ".libs", ".dylibs")]
    found = 0
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found += sum(1 for n in names if _OLD_NAME.match(n))
    return found


def full_walk(sites: list[str]) -> int:
    found = 0
    for site in sites:
        for _dirpath, _dirnames, filenames in os.walk(site):
            found += sum(1 for n in filenames if _OLD_NAME.match(n))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    machine = Machine()
    sites = site_folders(machine, RootedFs(machine), sys.prefix)
    probe_openmp(machine)  # warm imports, the knowledge table and the page cache
    one_level_scan(sites)
    full_walk(sites)
    timings: dict[str, list[float]] = {"probe": [], "one-level": [], "walk": []}
    for _ in range(args.runs):
        for name, call in (("probe", lambda: probe_openmp(machine)), ("one-level", lambda: one_level_scan(sites)),
                           ("walk", lambda: full_walk(sites))):
            start = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - start)
    facts = probe_openmp(machine)
    ms = {k: statistics.median(v) * 1000 for k, v in timings.items()}
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    print(f"site folders: {sites}; scanned: {facts['scanned']}; runtimes: {len(facts['runtimes'])}; "
          f"incomplete: {facts['incomplete']}")
    print(f"openmp probe: median {ms['probe']:.1f} ms over {args.runs} runs")
    print(f"baseline A, the one-level scan it replaced: median {ms['one-level']:.1f} ms "
          f"(probe / A = {ms['probe'] / ms['one-level']:.2f})")
    print(f"baseline B, os.walk of the site folders: median {ms['walk']:.1f} ms "
          f"(probe / B = {ms['probe'] / ms['walk']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
