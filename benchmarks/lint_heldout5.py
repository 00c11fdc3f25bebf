"""The fifth held-out measurement of `tfdoctor lint` (issue 39, items 3 and 4): sixteen whole repositories
nobody on the project had linted, every finding judged by the rubric in docs/lint.md, the first figure of the
input-pipeline rules (SRC102, SRC103) with the evidence each rule needs on code nobody tuned it on.

    python benchmarks/lint_heldout5.py [--show] [--mirror /work/.mirror] [--list CSV]

The split is by repository and was committed before the linter ran on any of them
(benchmarks/lint_corpus/heldout5.toml, commit 130acb0: repositories and pinned commits only). The labels,
one per finding with a one-line reason, are benchmarks/lint_corpus/heldout5_labels.csv.

Two runs, both scored: every rule as `tfdoctor lint DIR` runs it by default, and with the input-pipeline
rules and SRC113 selected (`--select SRC102,SRC103,SRC113` plus the default rules; SRC113 was on by default
when the set was judged). Each is scored per rule and per tier:
`shown` are the findings that show every kind of evidence their rule declares (warnings), `unproven` the
info findings that say which evidence they could not see, `pattern` those of a rule that declares none.
The shown/unproven split is what tfdoctor/knowledge/lint_rule_precision.toml records for a rule with
evidence, and what decides whether it is on by default (docs/lint.md, "Precision on real code").

Snapshots are read at their pinned commits from `fetch` snapshots (`fetch github:<owner>/<name>` per
repository of the manifest); when one is absent the script says which and exits 0 without a figure.
`--list CSV` writes every finding of the selected run with its tier and message (what the judges read).
SRC001/SRC002 (unparseable or unreadable files) are counted, not judged.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "lint_corpus" / "heldout5.toml"
LABELS = HERE / "lint_corpus" / "heldout5_labels.csv"
MIRROR = Path("/work/.mirror")
# The preview rules this set measured: the input-pipeline rules, and SRC113, which was on by default when
# the set was judged and is a preview rule since (its figure here is under the bar).
SELECTED = ("SRC102", "SRC103", "SRC113")
SELECTED_RUN = "measured preview rules selected (`--select SRC102,SRC103,SRC113` and the defaults)"


def tier_of(grounds: dict[str, str]) -> str:
    """`unproven`: an info finding that names evidence it could not see (`not shown: …` in its grounds);
    `shown`: every kind its rule declares was seen; `pattern`: a rule that declares no evidence."""
    if any(value.startswith("not shown") for value in grounds.values()):
        return "unproven"
    return "shown" if grounds else "pattern"


def tiered(findings: list[tuple[tuple[str, str, str, str], str]]) -> list[tuple[str, str, str, str]]:
    """(key, tier) → keys whose rule is `<rule>/<tier>`, so that heldout4's tally scores each tier apart."""
    return [(repo, path, line, f"{rule}/{tier}") for (repo, path, line, rule), tier in findings]


def findings_of(roots: dict[str, Path], rules: list) -> tuple[list[tuple[tuple[str, str, str, str], str]], Counter,
                                                            list[str], list[dict[str, str]]]:
    """Each repository linted as `tfdoctor lint DIR` lints it (prefilter on; each file for its nearest pins):
    the judged findings as (key, tier), files read per repository, rule crashes, and a listing row per finding
    (what the judges read). A key's line is `N` (`cell:N` in a notebook); where one line carries two findings
    of one rule in one tier (`fit(train, validation_data=val)`, neither prefetched), each is `N@column`, so
    that each is judged apart (a labels row says `N@column` in its `line` column)."""
    from lint_corpus import _line
    from lint_heldout4 import NOT_JUDGED

    from tfdoctor.lint.api import lint_directory

    found: list[tuple[tuple[str, str, str, str], str]] = []
    files: Counter = Counter()
    crashes: list[str] = []
    rows: list[dict[str, str]] = []
    for repo, root in roots.items():
        report = lint_directory(root, rules=rules)
        files[repo] = report.files
        crashes += [f"{repo}: {crash}" for crash in report.crashes]
        judged = [(f, (repo, Path(f.path).relative_to(root).as_posix(), _line(f), f.code), tier_of(dict(f.grounds)))
                  for f in report.findings if f.code not in NOT_JUDGED]
        shared = Counter((key, tier) for _, key, tier in judged)
        for f, key, tier in judged:
            if shared[key, tier] > 1:
                key = (*key[:2], f"{key[2]}@{f.column}", key[3])
            found.append((key, tier))
            rows.append({"repo": key[0], "path": key[1], "line": key[2], "rule": key[3], "tier": tier,
                         "message": f.message})
    return found, files, crashes, rows



class HeldOutSet:
    """A later held-out set scored exactly as this one: its manifest, its labels, and `main(argv)` running
    them (benchmarks/lint_heldout6.py to lint_heldout9.py are one line each over this)."""

    def __init__(self, name: str) -> None:
        self.manifest = HERE / "lint_corpus" / f"{name}.toml"
        self.labels = HERE / "lint_corpus" / f"{name}_labels.csv"

    def main(self, argv: list[str] | None = None) -> int:
        return main(argv, self.manifest, self.labels)


def main(argv: list[str] | None = None, manifest: Path = MANIFEST, labels_file: Path = LABELS) -> int:
    """Lint, score and print one held-out set (the fifth by default; HeldOutSet passes a later one)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list unjudged and gone findings")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="where the fetch snapshots are")
    parser.add_argument("--list", type=Path, help="write every finding of the selected run to this CSV")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from lint_corpus import materialise
    from lint_heldout4 import label_of, labels_gone, read_labels, snapshots_or_skip, table, tfdoctor_commit

    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules

    repos = snapshots_or_skip(manifest, args.mirror)
    if repos is None:
        return 0
    labels = read_labels(labels_file) if labels_file.exists() else {}
    registry = load_lint_rules()
    runs = {
        "default settings (`tfdoctor lint DIR`)": select_lint_rules(registry.rules),
        SELECTED_RUN:
            select_lint_rules(registry.rules, [*SELECTED, *(r.code for r in select_lint_rules(registry.rules))]),
    }
    print(f"run of {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, tfdoctor at {tfdoctor_commit()}")
    listing: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory() as cache:
        roots, absent = materialise(args.mirror, Path(cache), repos)
        for title, rules in runs.items():
            found, files, crashes, rows = findings_of(roots, rules)
            per_repo = Counter(key[0] for key, _ in found)
            if args.list and title == SELECTED_RUN:
                listing += rows
            print(f"\n== {title}")
            for entry in repos:
                note = f", {absent[entry['repo']]} files absent" if absent[entry["repo"]] else ""
                print(f"  {entry['repo']}@{entry['commit'][:10]}: {files[entry['repo']]} files, "
                      f"{per_repo[entry['repo']]} findings{note}")
            print(f"rule crashes: {len(crashes)}" + "".join(f"\n  {crash}" for crash in crashes))
            judged = [(key, tier, label_of(labels, key, tier)) for key, tier in found]
            unjudged = sorted({key for key, _, label in judged if label == "unjudged"})
            print("by rule (all tiers):")
            for line in table(Counter((key[3], label) for key, _, label in judged), Counter()):
                print("  " + line.split(" | ")[0])
            print("by rule and tier (shown: every kind of evidence seen; unproven: info, evidence not visible):")
            for line in table(Counter((f"{key[3]}/{tier}", label) for key, tier, label in judged), Counter()):
                print("  " + line.split(" | ")[0])
            print(f"unjudged findings (judge them before quoting a figure): {len(unjudged)}")
            if args.show:
                for key in unjudged:
                    print("unjudged:", *key)
    if labels:
        gone = labels_gone(labels, found)
        print(f"\nlabelled findings no longer made by the selected run: {len(gone)} "
              f"(of them true: {sum(labels[g] == 'true' for g in gone)})")
        if args.show:
            for key in gone:
                print(f"gone ({labels[key]}):", *key)
    if args.list:
        with args.list.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["repo", "path", "line", "rule", "tier", "message"])
            writer.writeheader()
            writer.writerows(listing)
        print(f"wrote {len(listing)} findings to {args.list}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
