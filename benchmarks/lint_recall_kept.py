"""Recall kept (issue 39, item 5): every true finding the baseline linter makes on the project's corpora is
still made by this tree's linter; and which false ones are gone.

    python benchmarks/lint_recall_kept.py --baseline 6d9b27f [--show]

Both linters run the same way, each in its own subprocess, as `tfdoctor lint DIR` runs by default
(preview rules off, test files skipped): the baseline from a `git archive` of REF, this tree from its
checkout. The corpora and their labels (nothing of the repositories is committed; they are read from
`fetch` snapshots, /work/.mirror/<owner>+<name>/repo, as benchmarks/lint_corpus.py does):

- the development corpus (manifest.toml, labels.csv: TP / FP per finding);
- the first and second held-out samples (heldout.toml / heldout2.toml, heldout*_labels.csv: sites labelled
  SRC102 / SRC103 / SRC107 or ok before any linter ran; a finding at a site is true when the site's
  label is its rule, false when the site is ok, unlabelled off the sampled sites);
- the third held-out measurement (heldout3.toml, heldout3_labels.csv: true / debatable / false);
- tests/lint_fixtures: a finding on a `# expect: SRCnnn` line of a *_bad.py fixture is true, any finding
  in a *_good.py fixture false.

A true finding counts as kept when this tree reports the same rule at the same place (severity may have
changed: each change is listed). The exit status is 1 when a true finding is lost.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "lint_corpus"
FIXTURES = ROOT / "tests" / "lint_fixtures"
sys.path.insert(0, str(HERE))

import tomllib  # noqa: E402
from lint_corpus import materialise  # noqa: E402

# Run with one tfdoctor first on sys.path: lint each root as `tfdoctor lint DIR` does (fixtures: named files).
_LINT = r"""
import inspect, json, sys
from pathlib import Path
import tfdoctor
assert tfdoctor.__file__.startswith(sys.argv[1]), tfdoctor.__file__
from tfdoctor.lint.api import lint_directory
from tfdoctor.lint.files import python_files
from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import lint_paths
select = json.loads(sys.argv[2])
registry = load_lint_rules().rules
rules = select_lint_rules(registry)
if select:  # the defaults and these exact codes, as `tfdoctor lint --select <defaults>,<codes>` runs
    rules = select_lint_rules(registry, [*select, *(r.code for r in rules)])
roots = json.loads(sys.stdin.read())
out = []
for name, root, named in roots:
    root = Path(root)
    if named:
        report = lint_paths(sorted(root.glob("*.py")), rules)
    elif select:
        walked = list(python_files([str(root)], include_tests=False))
        report = lint_paths(walked, rules, walked=walked)
    else:
        report = lint_directory(root)
    for f in report.findings:
        where = f"{f.cell}:{f.line}" if f.cell is not None else str(f.line)
        path = Path(f.path).name if named else Path(f.path).relative_to(root).as_posix()
        out.append([name, path, where, f.code, f.severity.label])
print(json.dumps(out))
"""


def run_lint(source: Path, roots: list[tuple[str, str, bool]], select: list[str] | None = None
             ) -> set[tuple[str, str, str, str, str]]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    done = subprocess.run([sys.executable, "-c", _LINT, str(source), json.dumps(select or [])],
                          input=json.dumps(roots), capture_output=True,
                          text=True, env=env, cwd=str(source))
    if done.returncode:
        sys.exit(f"lint from {source} failed:\n{done.stderr[-3000:]}")
    return {tuple(item) for item in json.loads(done.stdout)}  # type: ignore[misc]


class Labels:
    """What each corpus says a finding is: true, false, debatable, or None (not labelled)."""

    def __init__(self) -> None:
        self.by_finding: dict[tuple[str, str, str, str], str] = {}
        self.same_as: dict[tuple[str, str, str, str], str] = {}
        self.sites: list[tuple[str, str, list[str], str, str]] = []  # repo, path, lines, rule, label
        with (CORPUS / "labels.csv").open(newline="") as handle:
            for row in csv.DictReader(handle):
                key = (row["repository"], row["path"], row["line"], row["rule"])
                self.by_finding[key] = {"TP": "true", "FP": "false"}[row["label"]]
                if row.get("same_as"):
                    self.same_as[key] = row["same_as"]
        with (CORPUS / "heldout3_labels.csv").open(newline="") as handle:
            for row in csv.DictReader(handle):
                line = f"{row['cell']}:{row['line']}" if row["cell"] else row["line"]
                self.by_finding[(row["repo"], row["path"], line, row["rule"])] = row["label"]
        rule_of = {"map": "SRC103", "fit": "SRC102", "tape": "SRC107"}
        for name in ("heldout_labels.csv", "heldout2_labels.csv"):
            with (CORPUS / name).open(newline="") as handle:
                for row in csv.DictReader(handle):
                    rule = rule_of[row["kind"]]
                    self.sites.append((row["repository"], row["path"], _site_lines(row, rule), rule,
                                       "true" if row["label"] == rule else "false"))
        for path in sorted(FIXTURES.glob("*.py")):
            for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for code in re.findall(r"SRC\d{3}", text.partition("expect:")[2]) if "expect:" in text else []:
                    self.by_finding[("fixtures", path.name, str(number), code)] = "true"

    def label(self, repo: str, path: str, line: str, code: str) -> str | None:
        found = self.by_finding.get((repo, path, line, code))
        if found is not None:
            return found
        if repo == "fixtures":
            return "false" if path.endswith("_good.py") else None
        for site_repo, site_path, lines, rule, label in self.sites:
            if (site_repo, site_path, rule) == (repo, path, code) and line in lines:
                return label
        return None


def _site_lines(row: dict, rule: str) -> list[str]:
    """The lines a finding for a labelled site may be reported on (as benchmarks/lint_heldout.py matches)."""
    prefix, _, first = row["line"].rpartition(":")
    last = row["end_line"].rpartition(":")[2]
    lines = [f"{prefix}:{n}" if prefix else str(n) for n in range(int(first), int(last) + 1)]
    if rule == "SRC107":
        lines = [row["anchor"]] if row["anchor"] else \
            lines + [f"{prefix}:{n}" if prefix else str(n) for n in range(int(last) + 1, int(last) + 4)]
    return lines


def kept(finding: tuple[str, str, str, str, str], now: dict[tuple[str, str, str, str], str],
         labels: Labels) -> str | None:
    """This tree's severity for the same finding (same rule at the same place), or None when it is gone."""
    repo, path, line, code, _ = finding
    for where in (line, labels.same_as.get((repo, path, line, code), "")):
        if (repo, path, where, code) in now:
            return now[(repo, path, where, code)]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the linter to compare with (e.g. 6d9b27f)")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    parser.add_argument("--show", action="store_true", help="list every false or unlabelled finding dropped or added")
    parser.add_argument("--select", default="", help="this tree also runs these codes (e.g. SRC102,SRC103: rules "
                        "the baseline ran by default and the tree keeps in preview, or with a tier held back)")
    args = parser.parse_args(argv)
    select = [c.strip().upper() for c in args.select.split(",") if c.strip()]
    repos: list[dict] = []
    for manifest in ("manifest.toml", "heldout.toml", "heldout2.toml", "heldout3.toml"):
        for entry in tomllib.loads((CORPUS / manifest).read_text())["repos"]:
            if entry["repo"] not in {r["repo"] for r in repos}:
                repos.append(entry)
    roots, _ = materialise(args.mirror, args.cache, repos)
    targets = [(repo, str(root), False) for repo, root in sorted(roots.items())] + [("fixtures", str(FIXTURES), True)]
    labels = Labels()
    with tempfile.TemporaryDirectory(prefix="tfdoctor-baseline-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "tfdoctor"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        before = run_lint(Path(tmp), targets)
    after = run_lint(ROOT, targets, select)
    now = {f[:4]: f[4] for f in after}
    counts: Counter = Counter()
    lost, changed, dropped, still_false = [], [], [], []
    for finding in sorted(before):
        if finding[3] in ("SRC001", "SRC002"):
            continue  # unparseable files: not performance findings, not labelled
        label = labels.label(*finding[:4]) or "unlabelled"
        severity = kept(finding, now, labels)
        group = "fixtures" if finding[0] == "fixtures" else "repositories"
        counts[(group, label, "before")] += 1
        counts[(group, label, "kept")] += severity is not None
        counts[(group, label, "info")] += severity is not None and severity != finding[4]
        if severity is None:
            (lost if label == "true" else dropped).append((label, finding))
        elif label == "false":
            still_false.append(finding)
        elif severity != finding[4]:
            changed.append((label, finding, severity))
    before_keys = {f[:4] for f in before}
    added = sorted(f for f in after if f[:4] not in before_keys and f[3] not in ("SRC001", "SRC002")
                   and not any(labels.same_as.get(k) == f[2] and k[:2] == f[:2] and k[3] == f[3] for k in before_keys))
    print(f"baseline {args.baseline} and this tree on {len(roots)} repositories and {len(list(FIXTURES.glob('*.py')))} "
          "fixtures, default settings" + (f" (this tree also selecting {','.join(select)})" if select else ""))
    for group in ("repositories", "fixtures"):
        print(f" {group}:")
        for label in ("true", "debatable", "false", "unlabelled"):
            total, still = counts[(group, label, "before")], counts[(group, label, "kept")]
            verb = "still found" if label == "true" else "dropped"
            figure = still if label == "true" else total - still
            print(f"  {label:10} findings of the baseline: {total:4}; {verb}: {figure} of {total}"
                  f" (kept at another severity: {counts[(group, label, 'info')]})")
    print(f"  findings this tree adds (not in the baseline): {len(added)}")
    print(f"  findings kept at another severity: {len(changed)}")
    for label, finding, severity in changed:
        print(f"    {label:10} {finding[3]} {finding[4]} -> {severity}: {finding[0]} {finding[1]}:{finding[2]}")
    for label, finding in lost:
        print(f"  LOST {label}: {finding[3]} {finding[0]} {finding[1]}:{finding[2]}")
    if args.show:
        for label, finding in dropped:
            print(f"  dropped {label}: {finding[3]} {finding[0]} {finding[1]}:{finding[2]}")
        for finding in still_false:
            print(f"  still found false: {finding[3]} {finding[0]} {finding[1]}:{finding[2]}")
        for finding in added:
            print(f"  added ({labels.label(*finding[:4]) or 'unlabelled'}): {finding[3]} {finding[4]} "
                  f"{finding[0]} {finding[1]}:{finding[2]}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
