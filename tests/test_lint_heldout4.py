"""The fourth held-out measurement of lint (issue 39, item 4): its scoring code on a synthetic labels file
(always), the committed labels against the manifest (always), and the labels against the findings of the
pinned snapshots (only where the `fetch` snapshots are present)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import lint_heldout4 as h4  # noqa: E402

HEADER = ["repo", "commit", "path", "cell", "line", "rule", "label", "reason"]


def write_labels(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def synthetic(tmp_path: Path) -> dict:
    return h4.read_labels(write_labels(tmp_path / "labels.csv", [
        ["o/a", "c1", "train.py", "", "10", "SRC103", "true", "serial decode of JPEGs"],
        ["o/a", "c1", "train.py", "", "20", "SRC103", "debatable", "size not shown"],
        ["o/a", "c1", "train.py", "", "30", "SRC103", "false", "trivial cast"],
        ["o/a", "c1", "train.py", "", "30", "SRC102", "false", "prefetched by its caller"],
        ["o/b", "c2", "nb.ipynb", "4", "8", "SRC107", "true", "eager step in a loop"],
    ]))


def test_strict_and_lenient_precision_per_rule_and_in_all(tmp_path):
    labels = synthetic(tmp_path)
    assert labels[("o/b", "nb.ipynb", "4:8", "SRC107")] == "true"  # a notebook's line is `cell:line`
    found = {"o/a": [("train.py", "10", "SRC103"), ("train.py", "20", "SRC103"), ("train.py", "30", "SRC103"),
                     ("train.py", "30", "SRC102"), ("train.py", "40", "SRC103"), ("bad.py", "1", "SRC001")],
             "o/b": [("nb.ipynb", "4:8", "SRC107")]}
    findings = h4.judged_findings(found)
    assert ("o/a", "bad.py", "1", "SRC001") not in findings  # a syntax error is counted, not judged
    counts = h4.tally(findings, labels)
    src103 = h4.precision(counts, "SRC103")
    assert [src103[k] for k in ("findings", "true", "debatable", "false", "unjudged")] == [3, 1, 1, 1, 1]
    assert src103["strict"] == pytest.approx(1 / 3) and src103["lenient"] == pytest.approx(2 / 3)
    assert h4.precision(counts, "SRC102")["strict"] == 0.0 and h4.precision(counts, "SRC102")["lenient"] == 0.0
    everything = h4.precision(counts)
    assert (everything["findings"], everything["unjudged"]) == (5, 1)
    assert everything["strict"] == pytest.approx(2 / 5) and everything["lenient"] == pytest.approx(3 / 5)
    assert h4.precision(counts, "SRC999") == {"findings": 0, "true": 0, "debatable": 0, "false": 0, "unjudged": 0,
                                              "strict": None, "lenient": None}
    lines = h4.table(counts, h4.tally(labels, labels))
    assert lines[-1].split()[:7] == ["all", "5", "2", "1", "2", "40.0", "%"]
    assert "60.0 %" in lines[-1]


def test_coverage_names_findings_without_labels_and_labels_without_findings(tmp_path):
    labels = synthetic(tmp_path)
    findings = [("o/a", "train.py", "10", "SRC103"), ("o/a", "train.py", "11", "SRC103")]
    unjudged, gone = h4.coverage(findings, labels)
    assert unjudged == [("o/a", "train.py", "11", "SRC103")]
    assert len(gone) == 4 and ("o/b", "nb.ipynb", "4:8", "SRC107") in gone
    assert h4.coverage(list(labels), labels) == ([], [])


@pytest.mark.parametrize(("row", "error"), [
    (["o/a", "c", "x.py", "", "1", "SRC103", "TP", "old vocabulary"], "is not one of"),
    (["o/a", "c", "x.py", "", "1", "SRC103", "true", "  "], "without its reason"),
    (["o/a", "c", "x.py", "", "10", "SRC103", "false", "the same finding twice"], "a second label"),
])
def test_a_bad_labels_file_is_refused(tmp_path, row, error):
    path = write_labels(tmp_path / "bad.csv", [["o/a", "c", "x.py", "", "10", "SRC103", "true", "ok"], row])
    with pytest.raises(ValueError, match=error):
        h4.read_labels(path)


def test_one_line_judged_per_tier_keeps_each_label_and_the_key_of_each(tmp_path):
    """Two maps on one notebook line: a stateless one (info, unproven) and an augmenting one (shown)."""
    header = [*HEADER[:6], "tier", *HEADER[6:]]
    path = tmp_path / "tiers.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerow(["o/a", "c", "nb.ipynb", "27", "1", "SRC103", "unproven", "false", "a rescale per batch"])
        writer.writerow(["o/a", "c", "nb.ipynb", "27", "1", "SRC103", "shown", "debatable", "a random flip"])
        writer.writerow(["o/a", "c", "x.py", "", "5", "SRC103", "shown", "true", "JPEG decode"])
    labels = h4.read_labels(path)
    key = ("o/a", "nb.ipynb", "27:1", "SRC103")
    assert key not in labels and len(labels) == 3
    assert h4.label_of(labels, key, "shown") == "debatable"
    assert h4.label_of(labels, key, "unproven") == "false"
    assert h4.label_of(labels, ("o/a", "x.py", "5", "SRC103"), "unproven") == "true"  # judged whatever its tier
    assert h4.label_of(labels, ("o/a", "x.py", "6", "SRC103"), "shown") == "unjudged"
    # the default run makes only the shown one: the info's label is gone, not the shown one's
    made = [(key, "shown"), (("o/a", "x.py", "5", "SRC103"), "shown")]
    assert h4.labels_gone(labels, made) == [("o/a", "nb.ipynb", "27:1", "SRC103/unproven")]
    assert h4.labels_gone(labels, [*made, (key, "unproven")]) == []


@pytest.mark.parametrize("tiers", [("shown", "shown"), ("", "shown"), ("shown", "")])
def test_a_line_judged_twice_in_one_tier_is_refused(tmp_path, tiers):
    path = tmp_path / "twice.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*HEADER[:6], "tier", *HEADER[6:]])
        for tier in tiers:
            writer.writerow(["o/a", "c", "x.py", "", "1", "SRC103", tier, "true", "ok"])
    with pytest.raises(ValueError, match="a second label"):
        h4.read_labels(path)


def test_absent_snapshots_skip_with_the_fetch_to_run(tmp_path, capsys):
    assert h4.main(["--mirror", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped: the held-out snapshots are not here")
    assert "github:google/uncertainty-baselines" in out and "github:zihangdai/xlnet" in out
    assert "%" not in out  # no figure without the snapshots


def manifest() -> list[dict]:
    return tomllib.loads(h4.MANIFEST.read_text())["repos"]


def test_committed_labels_are_of_the_manifests_repositories_at_their_commits():
    commits = {entry["repo"]: entry["commit"] for entry in manifest()}
    with h4.LABELS.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(commits[row["repo"]] == row["commit"] for row in rows)
    labels = h4.read_labels()
    assert len(labels) == len(rows) == 52


def test_held_out_repositories_are_in_no_other_corpus():
    corpus = REPO / "benchmarks" / "lint_corpus"
    others = set()
    for path in corpus.glob("*.toml"):
        if path != h4.MANIFEST:
            others |= {entry["repo"] for entry in tomllib.loads(path.read_text()).get("repos", [])}
    for path in corpus.glob("*.csv"):
        if path != h4.LABELS:
            with path.open(newline="") as handle:
                others |= {row.get("repo") or row.get("repository") for row in csv.DictReader(handle)}
    assert len(others) > 20  # the other corpora were read
    assert not {entry["repo"] for entry in manifest()} & others


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # their code's escapes
def test_every_finding_of_the_judged_rules_on_the_pinned_snapshots_has_a_label(tmp_path):
    """The labels were written for the default rule set of commit 85cf8b0 (SRC102, SRC103, SRC107, since made
    partly preview). Those rules, selected, give no finding without a label: a rule change that adds one
    must have it judged before any figure is quoted. Labels whose finding is gone are rules tightened since
    (benchmarks/lint_heldout4.py counts them)."""
    repos = manifest()
    if h4.missing_snapshots(h4.MIRROR, repos):
        pytest.skip("the fourth held-out snapshots are not here (fetch github:<repo> for each of heldout4.toml)")
    from lint_corpus import _line, materialise

    from tfdoctor.lint.files import python_files
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths

    rules = select_lint_rules(load_lint_rules().rules, ["SRC001", "SRC002", "SRC102", "SRC103", "SRC107"])
    roots, _ = materialise(h4.MIRROR, tmp_path, repos)
    found = {}
    for repo, root in roots.items():
        files = list(python_files([str(root)], include_tests=False))
        report = lint_paths(files, rules, walked=files)
        assert report.crashes == []
        found[repo] = [(Path(f.path).relative_to(root).as_posix(), _line(f), f.code) for f in report.findings]
    unjudged, _gone = h4.coverage(h4.judged_findings(found), h4.read_labels())
    assert unjudged == [], "findings without a label: judge them by the rubric in docs/lint.md"
