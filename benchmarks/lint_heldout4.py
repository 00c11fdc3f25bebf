"""The fourth held-out measurement of `tfdoctor lint` (issue 39, item 4): every finding of the default settings
on nine whole repositories nobody on the project had linted, judged by the rubric in docs/lint.md.

    python benchmarks/lint_heldout4.py [--show] [--mirror /work/.mirror]

The split is by repository and was committed before the linter ran on any of them
(benchmarks/lint_corpus/heldout4.toml, commit 85cf8b0: repositories and pinned commits only). The labels,
one per finding with a one-line reason, are benchmarks/lint_corpus/heldout4_labels.csv.

Snapshots: the repositories are read at their pinned commits from `fetch` snapshots, bare git directories
`<mirror>/<owner>+<name>/repo`. To get them, call the `fetch` tool once per repository of the manifest
(`fetch github:google/uncertainty-baselines`, `fetch github:tensorflow/nmt`, ...). When one is absent
(or lacks its commit) the script says which and exits 0 without a figure ("skipped"): nothing of the
repositories is committed here.

It lints them with the working tree's linter as `tfdoctor lint DIR` runs by default, joins the findings
with the labels and prints, per rule and in all, the strict precision (debatable counted false) and the
lenient one (debatable counted true), with the date and the tfdoctor commit of the run, beside the
figure as judged (the labels alone). A finding the labels do not hold (the rules changed since) is
counted apart as unjudged and listed with --show: judge it by the rubric before quoting a new figure; a
labelled finding no longer reported is counted as gone. SRC001/SRC002 (unparseable or unreadable files)
are not performance rules: counted, not judged.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "lint_corpus" / "heldout4.toml"
LABELS = HERE / "lint_corpus" / "heldout4_labels.csv"
MIRROR = Path("/work/.mirror")
LABEL_VALUES = ("true", "debatable", "false")
NOT_JUDGED = ("SRC001", "SRC002")

Key = tuple[str, str, str, str]  # repository, path, line (`cell:line` in a notebook), rule


def read_labels(path: Path = LABELS) -> dict[Key, str]:
    """(repository, path, line, rule) → true / debatable / false; a bad label or a duplicate row is an error.

    One line may carry two findings of one rule in different tiers (two `.map` calls on it, one mapping a
    stateless function): rows of one key whose `tier` columns differ are judged apart, and each is kept under
    the key whose rule is `<rule>/<tier>` (`label_of` reads either)."""
    rows: dict[Key, list[tuple[int, str, str]]] = {}
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            line = f"{row['cell']}:{row['line']}" if row["cell"] else row["line"]
            key = (row["repo"], row["path"], line, row["rule"])
            if row["label"] not in LABEL_VALUES:
                raise ValueError(f"{path}:{number}: label {row['label']!r} is not one of {LABEL_VALUES}")
            if not row["reason"].strip():
                raise ValueError(f"{path}:{number}: a label without its reason")
            tier = (row.get("tier") or "").strip()
            if key in rows and (not tier or any(t in ("", tier) for _, t, _ in rows[key])):
                raise ValueError(f"{path}:{number}: a second label for {key}")
            rows.setdefault(key, []).append((number, tier, row["label"]))
    labels: dict[Key, str] = {}
    for key, judged in rows.items():
        if len(judged) == 1:
            labels[key] = judged[0][2]
        else:
            labels.update({(*key[:3], f"{key[3]}/{tier}"): label for _, tier, label in judged})
    return labels


def label_of(labels: Mapping[Key, str], key: Key, tier: str) -> str:
    """The label of the finding `key` in `tier`: its tier's own where its line was judged per tier."""
    return labels.get((*key[:3], f"{key[3]}/{tier}")) or labels.get(key, "unjudged")


def labels_gone(labels: Mapping[Key, str], found: Iterable[tuple[Key, str]]) -> list[Key]:
    """The labels no finding of `found` ((key, tier) pairs) takes, sorted."""
    made = {key for key, _ in found} | {(*key[:3], f"{key[3]}/{tier}") for key, tier in found}
    return sorted(set(labels) - made)


def judged_findings(found: Mapping[str, Iterable[tuple[str, str, str]]]) -> list[Key]:
    """The findings the rubric judges: every default finding but SRC001/SRC002."""
    return [(repo, path, line, code) for repo, items in found.items() for path, line, code in items
            if code not in NOT_JUDGED]


def coverage(findings: Iterable[Key], labels: Mapping[Key, str]) -> tuple[list[Key], list[Key]]:
    """(findings without a label, labels without a finding), each sorted."""
    findings = set(findings)
    return sorted(findings - set(labels)), sorted(set(labels) - findings)


def tally(findings: Iterable[Key], labels: Mapping[Key, str]) -> Counter:
    """(rule, label) → count; a finding with no label counts as `unjudged`."""
    return Counter((key[3], labels.get(key, "unjudged")) for key in findings)


def precision(counts: Counter, rule: str | None = None) -> dict[str, object]:
    """Judged findings, true/debatable/false counts and the strict and lenient precision (None: nothing judged)."""
    keys = [k for k in counts if rule is None or k[0] == rule]
    by = Counter()
    for key in keys:
        by[key[1]] += counts[key]
    judged = by["true"] + by["debatable"] + by["false"]
    return {
        "findings": judged, "true": by["true"], "debatable": by["debatable"], "false": by["false"],
        "unjudged": by["unjudged"],
        "strict": by["true"] / judged if judged else None,
        "lenient": (by["true"] + by["debatable"]) / judged if judged else None,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def table(counts: Counter, baseline: Counter) -> list[str]:
    """Per rule then all: this run's figure beside the figure as judged."""
    lines = ["rule     findings  true  debatable  false  strict    lenient   | as judged: findings  strict    lenient"]
    for rule in [*sorted({k[0] for k in counts | baseline}), None]:
        now, then = precision(counts, rule), precision(baseline, rule)
        lines.append(f"{rule or 'all':8} {now['findings']:8}  {now['true']:4}  {now['debatable']:9}  {now['false']:5}  "
                     f"{_pct(now['strict']):8}  {_pct(now['lenient']):8}  | {then['findings']:19}  "
                     f"{_pct(then['strict']):8}  {_pct(then['lenient']):8}")
    return lines


def missing_snapshots(mirror: Path, repos: list[dict]) -> list[str]:
    """What to fetch before the figure can be measured (empty when every snapshot holds its commit)."""
    sys.path.insert(0, str(HERE))
    from lint_corpus import snapshot_git_dir

    problems = []
    for entry in repos:
        git_dir = snapshot_git_dir(mirror, entry["repo"])
        if not git_dir.is_dir():
            problems.append(f"{entry['repo']}: no snapshot at {git_dir}: run the fetch tool with "
                            f"github:{entry['repo']} (commit {entry['commit']})")
            continue
        has = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{entry['commit']}^{{commit}}"],
                             capture_output=True)
        if has.returncode:
            problems.append(f"{entry['repo']}: the snapshot at {git_dir} lacks commit {entry['commit']}")
    return problems


def snapshots_or_skip(manifest: Path, mirror: Path) -> list[dict] | None:
    """The manifest's repositories, or None after saying what to fetch (the figure is not measured then)."""
    import tomllib

    repos = tomllib.loads(manifest.read_text())["repos"]
    problems = missing_snapshots(mirror, repos)
    if problems:
        print("skipped: the held-out snapshots are not here (nothing measured):\n  " + "\n  ".join(problems))
        return None
    return repos


def tfdoctor_commit() -> str:
    """The commit of the linter that ran, marked `+changes` when tfdoctor/ differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "tfdoctor") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list unjudged and gone findings")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="where the fetch snapshots are")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from lint_corpus import _line, materialise

    from tfdoctor.lint.api import lint_directory

    repos = snapshots_or_skip(MANIFEST, args.mirror)
    if repos is None:
        return 0
    labels = read_labels()
    with tempfile.TemporaryDirectory() as cache:
        roots, absent = materialise(args.mirror, Path(cache), repos)
        found, files, crashes = {}, {}, []
        for repo, root in roots.items():
            report = lint_directory(root)  # what `tfdoctor lint DIR` runs: defaults, tests skipped, prefilter on
            found[repo] = [(Path(f.path).relative_to(root).as_posix(), _line(f), f.code) for f in report.findings]
            files[repo] = report.files
            crashes += [f"{repo}: {crash}" for crash in report.crashes]
    print(f"run of {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, tfdoctor at {tfdoctor_commit()}, "
          "default settings (`tfdoctor lint DIR`)")
    for entry in repos:
        repo = entry["repo"]
        n = sum(1 for _, _, c in found[repo] if c not in NOT_JUDGED)
        other = sum(1 for _, _, c in found[repo] if c in NOT_JUDGED)
        note = f", {absent[repo]} files absent from the snapshot" if absent[repo] else ""
        print(f"  {repo}@{entry['commit'][:10]}: {files[repo]} files linted, {n} findings"
              + (f" (+{other} SRC001/SRC002, not judged)" if other else "") + note)
    print(f"rule crashes: {len(crashes)}" + "".join(f"\n  {crash}" for crash in crashes))
    findings = judged_findings(found)
    unjudged, gone = coverage(findings, labels)
    for line in table(tally(findings, labels), tally(labels, labels)):
        print(line)
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
