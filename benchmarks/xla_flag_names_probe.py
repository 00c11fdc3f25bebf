"""What reading the installed XLA's flag list costs (the xla_flag_names probe), against `import tensorflow`
measured in the same run.

    python benchmarks/xla_flag_names_probe.py --python /path/to/venv/bin/python [--runs 5]

The interpreter given must have TensorFlow installed (`pip install tensorflow-cpu==2.20.0` in a scratch
venv). Measured, in this process, on that environment's library (the page cache warm after the first read;
nothing is dropped):
1. the probe with XLA_FLAGS unset (what the pre-job hook pays on a job without XLA_FLAGS);
2. the probe with XLA_FLAGS whose names the 2.x table settles (no library read);
3. the library's .rodata read and scanned, nothing cached (the probe's first run), with the library's pages in
   the page cache and evicted first (posix_fadvise DONTNEED on that one file: a first run after the install);
4. the same with the list kept in a cache folder (every later run on an unchanged library);
5. the whole file scanned, what the maintainer's command does on a wheel (the cost the section read avoids);
and, in a child, `python -c "import tensorflow"` with that interpreter. Rounds are interleaved so that a change
in the machine's load hits every figure alike; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from _measure import run_once

from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.xla_flag_names import _installed, probe_xla_flag_names, read_library_names


def timed(func: object) -> float:
    start = time.perf_counter()
    func()  # type: ignore[operator]
    return (time.perf_counter() - start) * 1000


def evict(path: str) -> None:
    """Drop one file's pages from the page cache (no other file's): the next read comes from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="an interpreter whose environment has TensorFlow")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "TF_XLA_FLAGS")}
    unset = Machine(environ=base, python=args.python, timeout=5.0)
    settled = Machine(environ={**base, "XLA_FLAGS": "--xla_dump_to=/tmp/xla"}, python=args.python, timeout=5.0)
    installed = _installed(unset)
    if not isinstance(installed, tuple):
        print(f"no TensorFlow for {args.python}: {installed.reason}")
        return 2
    _folder, version, library = installed
    from tfdoctor.facts.flag_strings import XLA_NAME
    from tfdoctor.knowledge.xla_flag_list import flag_names

    keys = ("unset", "settled", "uncached", "cold", "cached", "whole", "import")
    figures: dict[str, list[float]] = {k: [] for k in keys}
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        read_library_names(library, cache)  # fills the cache (and warms the page cache)
        for _ in range(args.runs):
            figures["unset"].append(timed(lambda: probe_xla_flag_names(unset)))
            figures["settled"].append(timed(lambda: probe_xla_flag_names(settled)))
            figures["uncached"].append(timed(lambda: read_library_names(library, None)))
            evict(library)
            figures["cold"].append(timed(lambda: read_library_names(library, None)))
            figures["cached"].append(timed(lambda: read_library_names(library, cache)))
            with open(library, "rb") as handle:
                figures["whole"].append(timed(lambda: flag_names(handle, XLA_NAME)))
            figures["import"].append(run_once([args.python, "-c", "import tensorflow"]).seconds * 1000)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; TensorFlow "
          f"{version}: {library} ({os.path.getsize(library) / 1e6:.0f} MB); median of {args.runs} interleaved runs")
    labels = {"unset": "probe, XLA_FLAGS unset", "settled": "probe, names settled by xla_flags.toml",
              "uncached": ".rodata read and scanned, no cache", "cold": "the same, its pages evicted first",
              "cached": "list from the cache folder",
              "whole": "whole file scanned (maintainer's command)", "import": 'python -c "import tensorflow"'}
    for key, label in labels.items():
        values = figures[key]
        print(f"  {label:45s} {statistics.median(values):10.2f} ms  (min {min(values):.2f}, max {max(values):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
