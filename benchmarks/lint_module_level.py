"""`tfdoctor lint` of N pipeline statements at module level against the same N inside functions (issue 40).

Each statement builds a pipeline (`ds = tf.data.TFRecordDataset(files).map(parse).batch(32)`); the module
file holds them one after another at the top level, the functions file one per function. Before issue 40
the module file was quadratic (4,000 lines ≈ 10 s, 8,000 ≈ 54 s on the issue's machine) while the
functions file was not far behind for the same reason (every value compared with every value of every
flow). Printed side by side, best of `--repeat` runs each, with `python -c "import ast"` as the floor.

With `--baseline DIR` (a checkout of an earlier tfdoctor, e.g. `git archive 65db65c | tar -x -C DIR`) the
same files are linted by it too, in the same run (PYTHONPATH=DIR), and printed below.

Usage: python benchmarks/lint_module_level.py [--lines 4000 8000] [--repeat 3] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STATEMENT = "ds = tf.data.TFRecordDataset(files).map(parse).batch(32)"


def write(folder: Path, lines: int) -> tuple[Path, Path]:
    module = folder / f"module_{lines}.py"
    module.write_text("import tensorflow as tf\n" + "".join(f"{STATEMENT}\n" for _ in range(lines)))
    functions = folder / f"functions_{lines}.py"
    functions.write_text("import tensorflow as tf\n" + "".join(f"def f{i}():\n    {STATEMENT}\n" for i in range(lines)))
    return module, functions


def best(argv: list[str], repeat: int, tree: str | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        # From the scratch folder: run from a checkout, `-m tfdoctor` would import the checkout's own tree.
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env,
                       cwd=tempfile.gettempdir())
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[4000, 8000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="DIR", help="an earlier tfdoctor tree, measured in the same run")
    args = parser.parse_args()
    floor = best([sys.executable, "-c", "import ast"], args.repeat)
    print(f"python -c 'import ast': {floor:.2f} s (best of {args.repeat})")
    with tempfile.TemporaryDirectory() as scratch:
        for lines in args.lines:
            module, functions = write(Path(scratch), lines)
            lint = [sys.executable, "-m", "tfdoctor", "lint"]
            for label, tree in (("this tree", None), ("baseline", args.baseline)):
                if label == "baseline" and not tree:
                    continue
                at_top = best([*lint, str(module)], args.repeat, tree)
                inside = best([*lint, str(functions)], args.repeat, tree)
                print(f"{label:>9}, {lines:>6} statements: module level {at_top:6.2f} s, inside functions "
                      f"{inside:6.2f} s, ratio {at_top / inside:.2f}")


if __name__ == "__main__":
    main()
