"""The third held-out measurement of `tfdoctor lint` (issue 39): every finding of the default settings on
whole repositories nobody tuned the rules on, judged by the rubric in docs/lint.md.

    python benchmarks/lint_heldout3.py [--show]

Reads the repositories of benchmarks/lint_corpus/heldout3.toml from `fetch` snapshots
(/work/.mirror/<owner>+<name>/repo, as benchmarks/lint_corpus.py does; it names the fetch to run when one
is missing), lints them with the working tree's linter as `tfdoctor lint DIR` runs by default, and joins
the findings with benchmarks/lint_corpus/heldout3_labels.csv. Prints, per rule and in all, the strict
precision (debatable counted false) and the lenient one (debatable counted true), beside the baseline of
the same run: the labels themselves, i.e. the figure as it was judged. A finding the labels do not hold
(the rules changed since) is counted apart as unjudged and listed with --show: judge it by the rubric
before quoting a new figure; a labelled finding no longer reported is listed as gone.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tomllib  # noqa: E402
from lint_corpus import lint_new, materialise  # noqa: E402

MANIFEST = HERE / "lint_corpus" / "heldout3.toml"
LABELS = HERE / "lint_corpus" / "heldout3_labels.csv"
MIRROR = Path("/work/.mirror")


def read_labels() -> dict[tuple[str, str, str, str], str]:
    labels = {}
    with LABELS.open(newline="") as handle:
        for row in csv.DictReader(handle):
            line = f"{row['cell']}:{row['line']}" if row["cell"] else row["line"]
            labels[(row["repo"], row["path"], line, row["rule"])] = row["label"]
    return labels


def precision(counts: Counter, rule: str | None) -> tuple[int, str, str]:
    keys = [k for k in counts if rule is None or k[0] == rule]
    total = sum(counts[k] for k in keys if k[1] != "unjudged")
    true = sum(counts[k] for k in keys if k[1] == "true")
    debatable = sum(counts[k] for k in keys if k[1] == "debatable")
    if not total:
        return 0, "-", "-"
    return total, f"{100 * true / total:.1f} %", f"{100 * (true + debatable) / total:.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list unjudged and gone findings")
    args = parser.parse_args(argv)
    repos = tomllib.loads(MANIFEST.read_text())["repos"]
    labels = read_labels()
    with tempfile.TemporaryDirectory() as cache:
        roots, _ = materialise(MIRROR, Path(cache), repos)
        found = lint_new(roots)
    now: Counter = Counter()
    seen = set()
    unjudged = []
    for repo, findings in found.items():
        for path, line, code in findings:
            if code in ("SRC001", "SRC002"):
                continue  # syntax and reading errors: not performance rules, not judged
            key = (repo, path, line, code)
            seen.add(key)
            label = labels.get(key, "unjudged")
            now[(code, label)] += 1
            if label == "unjudged":
                unjudged.append(key)
    judged: Counter = Counter((k[3], v) for k, v in labels.items())
    print("rule     findings  strict    lenient   | as judged: findings  strict    lenient")
    for rule in [*sorted({k[0] for k in now | judged}), None]:
        n, strict, lenient = precision(now, rule)
        b, bstrict, blenient = precision(judged, rule)
        print(f"{rule or 'all':8} {n:8}  {strict:8}  {lenient:8}  | {b:19}  {bstrict:8}  {blenient:8}")
    gone = sorted(set(labels) - seen)
    print(f"unjudged findings (judge them before quoting a figure): {len(unjudged)}; labelled findings gone: "
          f"{len(gone)} (of them true: {sum(labels[g] == 'true' for g in gone)})")
    if args.show:
        for key in unjudged:
            print("unjudged:", *key)
        for key in gone:
            print(f"gone ({labels[key]}):", *key)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
