"""How long `tfdoctor lint` takes over a directory of 500 training scripts (target: under 5 s).

The scripts are the six lint fixtures, each written ~83 times with its names varied so no two files
are identical. Printed next to two baselines measured in the same run, best of 3 each:
  - `python -c "import ast"`: what starting Python costs at all;
  - a Python that reads and `ast.parse`s the same 500 files: the floor for any ast-based linter.

Usage: python benchmarks/lint_500.py [--files 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "lint_fixtures"

PARSE_ONLY = """
import ast, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    ast.parse(path.read_bytes(), filename=str(path))
"""


def write_scripts(folder: Path, count: int) -> int:
    sources = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))]
    lines = 0
    for i in range(count):
        text = sources[i % len(sources)].replace("def main(", f"def main_{i}(").replace("main()", f"main_{i}()")
        sub = folder / f"project{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"train_{i:03d}.py").write_text(text, encoding="utf-8")
        lines += text.count("\n")
    return lines


def best_of(command: list[str], repeat: int) -> tuple[float, subprocess.CompletedProcess]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lines = write_scripts(folder, args.files)
        startup, _ = best_of([sys.executable, "-c", "import ast"], args.repeat)
        parse, _ = best_of([sys.executable, "-c", PARSE_ONLY, str(folder)], args.repeat)
        lint, result = best_of([sys.executable, "-m", "tfdoctor", "lint", "--fail-on", "never", str(folder)],
                               args.repeat)
        if result.returncode != 0:
            sys.exit(f"tfdoctor lint failed ({result.returncode}): {result.stderr.strip()}")
        findings = len(result.stdout.splitlines())
    print(f"{args.files} scripts, {lines} lines; {findings} findings; best of {args.repeat}")
    print(f"  python -c 'import ast'           {startup:6.3f} s")
    print(f"  python + ast.parse of all files  {parse:6.3f} s")
    print(f"  tfdoctor lint DIR                {lint:6.3f} s   (target < 5 s; "
          f"{lint / parse:.1f}x the parse-only baseline, {lint - parse:.3f} s for rules and output)")


if __name__ == "__main__":
    main()
