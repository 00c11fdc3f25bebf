"""Lint's CPU time against a plain `ast.parse` of the same files, on large repositories of others (issue 39,
item 7: lint's CPU at most that of the parse, by not parsing what cannot hold TensorFlow input or training
code).

    python benchmarks/lint_speed_others.py [--runs 5] [--mirror /work/.mirror] [--tfdoctor DIR]

`--tfdoctor DIR`: lint with the tfdoctor package found in DIR (e.g. `git archive a98a383 tfdoctor | tar -x
-C DIR`) instead of this checkout's; a linter without the prefilter is measured "before" only. Each run's
ratios are to its own parse baseline, so runs of two linters compare.

The repositories are benchmarks/lint_corpus/speed_others.toml, read from `fetch` snapshots as
benchmarks/lint_corpus.py reads them (it names the fetch to run when one is missing). On the files
`tfdoctor lint DIR` reads by default (test files skipped, notebooks included), each round measures, in
this order, in this process and on one core (CPU seconds by getrusage, as benchmarks/lint_speed.py):

- parse: read each file, decode it, `ast.parse` it (a notebook: its JSON, its code cells joined, no
  IPython transforms — the cheapest honest floor; a cell that does not parse is skipped);
- lint before: `lint_paths` with every file parsed, as before the prefilter (what a named file gets);
- lint after: `lint_paths` as `tfdoctor lint DIR` runs it, the walked files through the prefilter;
- lint after with the worker processes `tfdoctor lint DIR` starts (their CPU counted).

Figures are medians of the rounds' ratios to the parse of the same round (interleaved: a burst of someone
else's load hits all alike). The findings of "before" and "after" are compared: the prefilter may only
drop SRC001/SRC002 of files it did not parse; any other difference is printed and fails the run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
_OTHER = sys.argv[sys.argv.index("--tfdoctor") + 1] if "--tfdoctor" in sys.argv[:-1] else None
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
if _OTHER:  # before anything imports tfdoctor
    sys.path.insert(0, str(Path(_OTHER).resolve()))

from lint_corpus import materialise  # noqa: E402

from tfdoctor.lint.files import python_files  # noqa: E402
from tfdoctor.lint.rule import load_lint_rules, select_lint_rules  # noqa: E402
from tfdoctor.lint.runner import lint_paths, usable_cpus  # noqa: E402
from tfdoctor.lint.source import SourceError, decode_source  # noqa: E402

MANIFEST = HERE / "lint_corpus" / "speed_others.toml"
RUNNER_CODES = frozenset({"SRC001", "SRC002"})  # syntax and read errors: the only findings a skipped file loses


def timed_once(func) -> tuple[float, float]:
    """(elapsed, CPU seconds of this process and of the worker processes it waited for), as lint_speed.py
    measures (not imported from it: it puts this checkout's tfdoctor first on sys.path)."""
    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    start, start_cpu = time.perf_counter(), cpu()
    func()
    return time.perf_counter() - start, cpu() - start_cpu


def parse_only(files: list[Path]) -> None:
    for path in files:
        data = path.read_bytes()
        try:
            if path.suffix == ".ipynb":
                cells = json.loads(data.decode("utf-8-sig")).get("cells", [])
                for cell in cells:
                    if cell.get("cell_type") == "code":
                        source = cell.get("source", "")
                        text = "".join(source) if isinstance(source, list) else source
                        with contextlib.suppress(SyntaxError):  # IPython syntax (%magic, !shell): skipped here
                            ast.parse(text)
                continue
            ast.parse(decode_source(data))
        except (SourceError, SyntaxError, ValueError, AttributeError):
            pass


PREFILTER = "walked" in inspect.signature(lint_paths).parameters  # False: a linter from before issue 39, item 7


def lint_walked(files: list[Path], rules: list, jobs: int | None = None):
    return lint_paths(files, rules, jobs=jobs, walked=files) if PREFILTER else lint_paths(files, rules, jobs=jobs)


def one_round(files: list[Path], rules: list) -> list[float]:
    """CPU seconds of: the parse, lint before, lint after, lint after with workers (module docstring)."""
    return [timed_once(lambda: parse_only(files))[1],
            timed_once(lambda: lint_paths(files, rules, jobs=1))[1],
            timed_once(lambda: lint_walked(files, rules, jobs=1))[1],
            timed_once(lambda: lint_walked(files, rules))[1]]


def _key(finding) -> tuple:
    return (finding.path, finding.cell, finding.line, finding.column, finding.code, finding.message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tfdoctor", type=Path, help="a directory holding the tfdoctor package to measure")
    args = parser.parse_args(argv)
    roots, _ = materialise(args.mirror, args.cache, tomllib.loads(MANIFEST.read_text())["repos"])
    rules = select_lint_rules(load_lint_rules().rules)
    import tfdoctor

    print(f"tfdoctor from {Path(tfdoctor.__file__).parent}; prefilter: {'yes' if PREFILTER else 'no (after = before)'}")
    print(f"machine: {os.cpu_count()} CPUs, {usable_cpus()} usable; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'repository':<36}{'files':>6}{'parsed':>8}  {'parse s':>8}  {'before':>15}  {'after':>15}  "
          f"{'after, workers':>15}")
    totals = [[] for _ in range(4)]
    failed = False
    for repo, root in roots.items():
        files = list(python_files([str(root)]))
        before = lint_paths(files, rules, jobs=1)
        after = lint_walked(files, rules, jobs=1)  # warm: imports, page cache
        lost = {_key(f) for f in before.findings if f.code not in RUNNER_CODES} - {_key(f) for f in after.findings}
        added = {_key(f) for f in after.findings} - {_key(f) for f in before.findings}
        if lost or added:
            failed = True
            print(f"{repo}: the prefilter changed the findings: lost {sorted(lost)}, added {sorted(added)}")
        rounds = [one_round(files, rules) for _ in range(args.runs)]
        for i in range(4):
            totals[i].append([r[i] for r in rounds])

        def ratio(i: int, rounds: list = rounds) -> str:
            values = [r[i] / r[0] for r in rounds]
            return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"

        dropped = sum(1 for f in before.findings if f.code in RUNNER_CODES) - \
            sum(1 for f in after.findings if f.code in RUNNER_CODES)
        print(f"{repo:<36}{len(files):>6}{len(files) - getattr(after, 'prefiltered', 0):>8}  "
              f"{statistics.median(r[0] for r in rounds):>8.2f}  {ratio(1):>15}  {ratio(2):>15}  {ratio(3):>15}"
              f"   findings {len(after.findings)} (SRC001/SRC002 of unparsed files: {dropped})")
    # All repositories together: per round, the sums over repositories.
    summed = [[sum(repo_rounds[k] for repo_rounds in totals[i]) for k in range(args.runs)] for i in range(4)]
    values = {i: [summed[i][k] / summed[0][k] for k in range(args.runs)] for i in (1, 2, 3)}
    shown = [f"{statistics.median(values[i]):.2f}x ({min(values[i]):.2f}-{max(values[i]):.2f})" for i in (1, 2, 3)]
    print(f"{'all':<36}{'':>6}{'':>8}  {statistics.median(summed[0]):>8.2f}  " + "  ".join(s.rjust(15) for s in shown))
    print("ratios: CPU seconds of lint / CPU seconds of the parse in the same round; median (lowest-highest) of "
          f"{args.runs} rounds; before = every file parsed, after = the prefilter (tfdoctor lint DIR)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
