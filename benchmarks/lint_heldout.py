"""Held-out precision and recall of `tfdoctor lint` (issue 25): sites labelled before the linter saw them.

    python benchmarks/lint_heldout.py sample [--review FILE]   # write the sites to label, with their code
    python benchmarks/lint_heldout.py score                    # lint the held-out corpus, compare
    python benchmarks/lint_heldout.py --sample2 sample|score   # the second, fresh sample (heldout2.*)

The held-out repositories are in benchmarks/lint_corpus/heldout.toml (repository, commit, folders; read
from `fetch` snapshots like benchmarks/lint_corpus.py; nothing of them is committed). `sample` walks their
files as `tfdoctor lint DIR` would (test files skipped), finds every site of three kinds with `ast` only —
a `.map(` call, a `fit`/`evaluate` call, a `with tf.GradientTape()` block — and draws a fixed-seed random
sample of each kind. Each site was then judged from its code alone, before any linter ran on these files,
and the judgement stored in benchmarks/lint_corpus/heldout_labels.csv:

- map: `SRC103` when it is a tf.data map without parallel calls whose function does real work per element
  (reads, decodes, augments, runs Python) on a pipeline that training reads; else `ok`;
- fit: `SRC102` when fit/evaluate reads a tf.data pipeline that prepares its elements with real work and
  is not prefetched (by the script or by the loader; a parallel map runs ahead and counts); else `ok`.
  An Estimator `evaluate(input_fn=...)` whose reason starts with `input_fn:` matches a SRC102 anywhere
  in the file (the rule reports where the input_fn returns the pipeline);
- tape: `SRC107` when the tape's step runs eagerly in a training loop of that file and could be compiled;
  else `ok`.

`score` lints the same files with the working tree's linter (defaults) and counts, per kind: a site is
flagged when the rule reports at the site's line (SRC103, SRC102: the call's lines; SRC107: the line of
the function that holds the tape, or the apply_gradients of a module-level loop). Precision = labelled
positives among flagged sites; recall = flagged sites among labelled positives.
"""

from __future__ import annotations

import argparse
import ast
import csv
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import tomllib  # noqa: E402
from lint_corpus import materialise  # noqa: E402

MANIFEST = HERE / "lint_corpus" / "heldout.toml"
LABELS = HERE / "lint_corpus" / "heldout_labels.csv"
SEED = 2511
QUOTA = {"map": 110, "fit": 60, "tape": 45}
# The second sample (drawn after the first had been seen and the rules changed): new repositories, new seed.
MANIFEST2 = HERE / "lint_corpus" / "heldout2.toml"
LABELS2 = HERE / "lint_corpus" / "heldout2_labels.csv"
SEED2 = 2611
QUOTA2 = {"map": 90, "fit": 70, "tape": 45}
RULE = {"map": "SRC103", "fit": "SRC102", "tape": "SRC107"}
FIELDS = ["repository", "commit", "path", "line", "end_line", "anchor", "kind", "label", "reason"]


def code_of(path: Path) -> tuple[str, list | None]:
    """The Python text lint reads (a notebook: its code cells, as IPython reads them) and the cell map."""
    from tfdoctor.lint.notebook import notebook_source
    from tfdoctor.lint.source import decode_source

    data = path.read_bytes()
    if path.suffix == ".ipynb":
        return notebook_source(data.decode("utf-8-sig"))
    return decode_source(data), None


def where(cells: list | None, line: int) -> str:
    if cells is None or not 1 <= line <= len(cells):
        return str(line)
    return f"{cells[line - 1].cell}:{cells[line - 1].line}"


def sites_of(text: str) -> list[tuple[str, int, int, int]]:
    """(kind, first line, last line, anchor) of every site in a file that names TensorFlow or Keras; the
    anchor of a tape is the def line of its function (0 at module level)."""
    if "tensorflow" not in text and "keras" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found = []
    owner: dict[ast.AST, int] = {}  # a tape's innermost function: SRC107 is reported at its def line
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(func):
                owner[inner] = func.lineno  # inner functions come later in the walk and overwrite
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "map":
                line = node.func.end_lineno or node.lineno
                found.append(("map", line, line, 0))
            elif node.func.attr in ("fit", "evaluate"):
                found.append(("fit", node.lineno, node.end_lineno or node.lineno, 0))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                expr = item.context_expr
                name = expr.func.attr if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) else \
                    expr.func.id if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) else ""
                if name == "GradientTape":
                    found.append(("tape", node.lineno, node.end_lineno or node.lineno, owner.get(node, 0)))
    return found


def linted_files(root: Path) -> list[Path]:
    from tfdoctor.lint.files import python_files

    return sorted(python_files([str(root)]))


def sample(review: Path, manifest: Path, labels: Path, seed: int, quotas: dict) -> None:
    repos = tomllib.loads(manifest.read_text())["repos"]
    roots, _ = materialise(Path("/work/.mirror"), Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus", repos)
    commits = {r["repo"]: r["commit"] for r in repos}
    every: dict[str, list] = {kind: [] for kind in quotas}
    for repo, root in sorted(roots.items()):
        for path in linted_files(root):
            try:
                text, cells = code_of(path)
            except Exception:  # not decodable, not a notebook: lint says SRC001/SRC002 there
                continue
            lines = text.splitlines()
            for kind, line, end, anchor in sites_of(text):
                every[kind].append((repo, path.relative_to(root).as_posix(), line, end, anchor, cells, lines))
    chosen = []
    rng = random.Random(seed)
    for kind, quota in quotas.items():
        pool = sorted(every[kind], key=lambda s: (s[0], s[1], s[2]))
        picked = rng.sample(pool, min(quota, len(pool)))
        chosen += [(kind, *site) for site in sorted(picked, key=lambda s: (s[0], s[1], s[2]))]
        print(f"{kind}: {len(pool)} sites, {len(picked)} sampled")
    with labels.open("w", newline="", encoding="utf-8") as handle, review.open("w", encoding="utf-8") as out:
        writer = csv.writer(handle)
        writer.writerow(FIELDS)
        for number, (kind, repo, path, line, end, anchor, cells, lines) in enumerate(chosen, 1):
            writer.writerow([repo, commits[repo], path, where(cells, line), where(cells, end),
                             where(cells, anchor) if anchor else "", kind, "", ""])
            out.write(f"=== {number} {kind} {repo} {path}:{where(cells, line)}\n")
            for at in range(max(1, line - 14), min(len(lines), end + 6) + 1):
                out.write(f"{'>' if line <= at <= end else ' '}{at:5d} {lines[at - 1][:150]}\n")
    print(f"wrote {labels} and {review}")


def score(manifest: Path, labels: Path, show: bool = False) -> None:
    from tfdoctor.lint.api import lint_directory

    repos = tomllib.loads(manifest.read_text())["repos"]
    roots, _ = materialise(Path("/work/.mirror"), Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus", repos)
    findings: set[tuple[str, str, str, str]] = set()
    for repo, root in roots.items():
        for f in lint_directory(root).findings:
            line = f"{f.cell}:{f.line}" if f.cell is not None else str(f.line)
            findings.add((repo, Path(f.path).relative_to(root).as_posix(), line, f.code))
    with labels.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    unlabelled = [r for r in rows if r["label"] not in ("ok", "SRC102", "SRC103", "SRC107")]
    if unlabelled:
        sys.exit(f"{len(unlabelled)} sites are not labelled yet")
    totals = {}
    for kind, rule in RULE.items():
        tp = fp = fn = 0
        for row in (r for r in rows if r["kind"] == kind):
            flagged = any((row["repository"], row["path"], line, rule) in findings
                          for line in _lines(row, findings, rule))
            positive = row["label"] == rule
            tp += flagged and positive
            if show and flagged != positive:
                print(f"  {'FP' if flagged else 'FN'} {row['repository']} {row['path']}:{row['line']} {row['reason']}")
            fp += flagged and not positive
            fn += positive and not flagged
        totals[kind] = (tp, fp, fn)
        print(f"{rule} at {kind} sites: {sum(r['kind'] == kind for r in rows)} sites, {tp + fn} positive; "
              f"flagged {tp + fp}: {tp} TP, {fp} FP, {fn} missed; precision {_pct(tp, tp + fp)}, "
              f"recall {_pct(tp, tp + fn)}")
    tp, fp, fn = (sum(t[i] for t in totals.values()) for i in range(3))
    print(f"all: {len(rows)} sites; precision {_pct(tp, tp + fp)} ({tp}/{tp + fp}), recall {_pct(tp, tp + fn)} "
          f"({tp}/{tp + fn})")


def _lines(row: dict, findings: set, rule: str) -> list[str]:
    """The lines a finding for this site may be reported on."""
    prefix, _, first = row["line"].rpartition(":")
    last = row["end_line"].rpartition(":")[2]
    lines = [f"{prefix}:{n}" if prefix else str(n) for n in range(int(first), int(last) + 1)]
    if rule == "SRC102" and row["reason"].startswith("input_fn:"):  # reported where the input_fn returns
        lines += [line for repo, path, line, code in findings if code == rule and (repo, path) ==
                  (row["repository"], row["path"])]
    if rule == "SRC107":  # at the def of the function holding the tape; at apply_gradients after a module's
        lines = [row["anchor"]] if row["anchor"] else \
            lines + [f"{prefix}:{n}" if prefix else str(n) for n in range(int(last) + 1, int(last) + 4)]
    return lines


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f} %" if den else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["sample", "score"])
    parser.add_argument("--review", type=Path, default=Path(tempfile.gettempdir()) / "heldout_review.txt")
    parser.add_argument("--show", action="store_true", help="score: list the sites where linter and label disagree")
    parser.add_argument("--sample2", action="store_true", help="the second, fresh sample (heldout2.toml)")
    args = parser.parse_args()
    manifest, labels, seed, quotas = (MANIFEST2, LABELS2, SEED2, QUOTA2) if args.sample2 else \
        (MANIFEST, LABELS, SEED, QUOTA)
    if args.command == "sample":
        sample(args.review, manifest, labels, seed, quotas)
    else:
        score(manifest, labels, args.show)


if __name__ == "__main__":
    main()
