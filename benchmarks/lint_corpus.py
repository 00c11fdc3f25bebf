"""Precision and recall of `tfdoctor lint` on the labelled public corpus (issue 13), old vs new in one run.

    python benchmarks/lint_corpus.py [--mirror /work/.mirror] [--baseline REF] [--unlabelled FILE]

The corpus is described by benchmarks/lint_corpus/manifest.toml (repository, commit, folders) and read
straight from `fetch` snapshots: bare git directories `<mirror>/<owner>+<name>/repo`. A missing snapshot
or commit is named with the exact `fetch` to run. The files are written once to a cache directory
(--cache) so that both linters read the same bytes; nothing of them is committed.

Both linters run with their defaults as a user gets them from the command line: the new one excludes
test files and preview rules; `--baseline REF` (default: the manifest's `baseline`) is the tfdoctor
commit whose linter is 'before', run from a `git archive` of that commit in a subprocess.

labels.csv holds one row per finding either linter produced (repository, commit, path, line, rule,
label TP/FP, reason). Precision is TP / labelled findings of that linter; recall is the share of every
TP in the labels (found by either) that the linter finds. Findings with no label are counted and
listed (`--unlabelled FILE` writes them as CSV rows to label).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "lint_corpus" / "manifest.toml"
LABELS = HERE / "lint_corpus" / "labels.csv"
SUFFIXES = (".py", ".ipynb")
PIN_FILES = ("requirements.txt", "pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml",
             "Pipfile")  # as tfdoctor/lint/pins.py reads them (a baseline tree may have no such module)

# Run in a subprocess with the old tfdoctor first on sys.path: lint every file with every rule the old
# command line would select by default, print JSON findings.
_OLD_LINT = r"""
import json, sys
from pathlib import Path
import tfdoctor
assert tfdoctor.__file__.startswith(sys.argv[1]), tfdoctor.__file__
from tfdoctor.lint import rule as rule_mod
from tfdoctor.lint.runner import lint_paths
import importlib, pkgutil, tfdoctor.lint.rules as rules_pkg
modules = [importlib.import_module(f"tfdoctor.lint.rules.{m.name}") for m in pkgutil.iter_modules(rules_pkg.__path__)]
registry = rule_mod.load_lint_rules(modules)
root = Path(sys.argv[2])
files = [root / line for line in sys.stdin.read().splitlines()]
report = lint_paths(files, registry.rules)
print(json.dumps([[f.path, f.line, f.code] for f in report.findings]))
"""


def load_manifest() -> dict:
    return tomllib.loads(MANIFEST.read_text())


def git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True,
                          check=True).stdout


def snapshot_git_dir(mirror: Path, repo: str) -> Path:
    """A `fetch` snapshot's git directory: `<mirror>/<owner>+<name>/repo`, bare, or its `.git` when the
    snapshot came with a work tree."""
    base = mirror / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def materialise(mirror: Path, cache: Path, repos: list[dict]) -> tuple[dict[str, Path], Counter]:
    """Write each repository's corpus files (at its commit) under cache; say what to fetch when missing."""
    roots: dict[str, Path] = {}
    missing_blobs: Counter = Counter()
    problems = []
    for entry in repos:
        repo, commit = entry["repo"], entry["commit"]
        git_dir = snapshot_git_dir(mirror, repo)
        if not git_dir.is_dir():
            problems.append(f"{repo}: no snapshot at {git_dir}: fetch github:{repo} (commit {commit})")
            continue
        try:
            git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        except subprocess.CalledProcessError:
            problems.append(f"{repo}: the snapshot at {git_dir} lacks commit {commit}: fetch github:{repo} again "
                            "or update the manifest's commit (and re-label)")
            continue
        root = cache / repo.replace("/", "+") / commit
        roots[repo] = root
        done = root / ".complete-with-pins"  # written by a materialise that also wrote the pin files
        if done.exists():
            missing_blobs[repo] = int(done.read_text() or 0)
            continue
        listing = git(git_dir, "ls-tree", "-r", "-z", commit, "--", *[s for s in entry["subtrees"] if s] or ["."])
        # and the requirement files at the top, whose pins `tfdoctor lint DIR` reads (tfdoctor/lint/pins.py)
        listing += b"\0" + git(git_dir, "ls-tree", "-z", commit, "--", *PIN_FILES)
        wanted = {}
        for item in listing.split(b"\0"):
            if not item:
                continue
            meta, path = item.split(b"\t", 1)
            _mode, kind, sha = meta.split()
            name = path.decode("utf-8", "surrogateescape")
            if kind == b"blob" and (name.endswith(SUFFIXES) or name.rsplit("/", 1)[-1] in PIN_FILES):
                wanted[name] = sha.decode()
        wanted = list(wanted.items())
        out = git(git_dir, "cat-file", "--batch", data="".join(f"{sha}\n" for _, sha in wanted).encode())
        pos = 0
        for name, _sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if header[-1] == b"missing":  # the largest blobs of a snapshot may be absent
                missing_blobs[repo] += 1
                continue
            size = int(header[2])
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(out[pos:pos + size])
            pos += size + 1
        done.write_text(str(missing_blobs[repo]))
    if problems:
        sys.exit("corpus incomplete:\n  " + "\n  ".join(problems))
    return roots, missing_blobs


def corpus_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def lint_new(roots: dict[str, Path], preview: bool = False) -> dict[str, list[tuple[str, str, str]]]:
    """The working tree's linter, as `tfdoctor lint DIR` runs it by default (or with --preview)."""
    sys.path.insert(0, str(ROOT))
    from tfdoctor.lint.api import lint_directory

    found = {}
    for repo, root in roots.items():
        report = lint_directory(root, preview=preview)
        found[repo] = [(Path(f.path).relative_to(root).as_posix(), _line(f), f.code) for f in report.findings]
    return found


def _line(finding) -> str:
    """The labels' line: `N`, or `cell:N` in a notebook."""
    return f"{finding.cell}:{finding.line}" if finding.cell is not None else str(finding.line)


def lint_old(roots: dict[str, Path], ref: str, files: dict[str, list[str]]) -> dict[str, list[tuple[str, str, str]]]:
    with tempfile.TemporaryDirectory(prefix="tfdoctor-old-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tfdoctor"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": tmp}
        found = {}
        for repo, root in roots.items():
            # -S: no site-packages, so an editable install of the new tfdoctor cannot shadow the old one.
            # The old linter walked only *.py; it read notebooks only when named (then as Python: SRC001).
            py = [f for f in files[repo] if f.endswith(".py")]
            out = subprocess.run([sys.executable, "-S", "-c", _OLD_LINT, tmp, str(root)], input="\n".join(py),
                                 capture_output=True, text=True, env=env, cwd=tmp)
            if out.returncode:
                sys.exit(f"the baseline linter failed on {repo}:\n{out.stderr[-2000:]}")
            out = out.stdout
            found[repo] = [(Path(p).relative_to(root).as_posix(), str(line), code) for p, line, code in json.loads(out)]
        return found


def read_labels() -> dict[tuple[str, str, str, str], tuple[str, str, str]]:
    """(repository, path, line, rule) → (label, reason, same_as).

    `same_as`: the line where the new linter reports the same problem (an old finding at a pipeline's
    construction that is now reported where it is consumed); recall counts it as found there.
    """
    labels = {}
    if LABELS.exists():
        with LABELS.open(newline="") as handle:
            for row in csv.DictReader(handle):
                labels[(row["repository"], row["path"], row["line"], row["rule"])] = (
                    row["label"], row["reason"], row.get("same_as") or "")
    return labels


def _found_at(found: set, key: tuple[str, str, str, str], labels: dict) -> bool:
    repo, path, line, code = key
    same_as = labels.get(key, ("", "", ""))[2]
    if key in found or (bool(same_as) and (repo, path, same_as, code) in found):
        return True
    # the same problem found at the line of an old finding that names this line as its new place
    return any(k[:2] == (repo, path) and k[3] == code and v[2] == line and k in found for k, v in labels.items())


def score(found: dict[str, list[tuple[str, str, str]]], labels: dict, true_positives: set) -> dict:
    per_rule: dict[str, Counter] = defaultdict(Counter)
    unlabelled = []
    for repo, items in found.items():
        for path, line, code in items:
            if code in ("SRC001", "SRC002"):
                per_rule[code]["runner"] += 1
                continue
            label = labels.get((repo, path, line, code))
            if label is None:
                unlabelled.append((repo, path, line, code))
                per_rule[code]["unlabelled"] += 1
                continue
            per_rule[code][label[0]] += 1
    everything = {(repo, p, ln, c) for repo, items in found.items() for p, ln, c in items}
    for key in true_positives:
        if _found_at(everything, key, labels):
            per_rule[key[3]]["tp_found"] += 1
    return {"rules": per_rule, "unlabelled": unlabelled}


def pct(num: int, den: int) -> str:
    return f"{100 * num / den:5.1f}%" if den else "    -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    parser.add_argument("--baseline", default=None, help="tfdoctor commit of the 'before' linter")
    parser.add_argument("--no-baseline", action="store_true", help="skip the old linter")
    parser.add_argument("--unlabelled", type=Path, help="write findings without a label here (CSV rows)")
    parser.add_argument("--preview", action="store_true", help="run the new linter with its preview rules too")
    args = parser.parse_args()
    manifest = load_manifest()
    repos = manifest["repos"]
    roots, missing = materialise(args.mirror, args.cache, repos)
    files = {repo: corpus_files(root) for repo, root in roots.items()}
    commits = {r["repo"]: r["commit"] for r in repos}
    print(f"corpus: {len(roots)} repositories, {sum(len(v) for v in files.values())} files "
          f"({sum(f.endswith('.ipynb') for v in files.values() for f in v)} notebooks)")
    for repo in roots:
        nb = sum(f.endswith(".ipynb") for f in files[repo])
        note = f", {missing[repo]} blobs absent from the snapshot" if missing[repo] else ""
        print(f"  {repo}@{commits[repo][:10]}: {len(files[repo]) - nb} .py, {nb} .ipynb{note}")
    labels = read_labels()
    true_positives = {k for k, (label, _, same_as) in labels.items() if label == "TP" and not (
        same_as and (k[0], k[1], same_as, k[3]) in labels)}  # one problem counted once
    runs = {"new": lint_new(roots, preview=args.preview)}
    if not args.no_baseline:
        runs["old"] = lint_old(roots, args.baseline or manifest["meta"]["baseline"], files)
    results = {name: score(found, labels, true_positives) for name, found in runs.items()}
    tp_by_rule = Counter(code for _, _, _, code in true_positives)
    codes = sorted({c for r in results.values() for c in r["rules"]} | set(tp_by_rule))
    names = [n for n in ("old", "new") if n in results]
    header = f"{'rule':<8}" + "".join(f"| {n:>3}: found  TP  FP  precision  recall " for n in names)
    print(header)
    totals = {n: Counter() for n in names}
    for code in codes:
        row = f"{code:<8}"
        for n in names:
            c = results[n]["rules"].get(code, Counter())
            if code in ("SRC001", "SRC002"):
                row += f"| {c['runner']:>10} (not labelled: unparseable files)    "
                continue
            found = c["TP"] + c["FP"] + c["unlabelled"]
            totals[n].update({"TP": c["TP"], "FP": c["FP"], "unlabelled": c["unlabelled"], "found": found,
                              "tp_found": c["tp_found"]})
            row += f"| {found:>10} {c['TP']:>3} {c['FP']:>3}     {pct(c['TP'], c['TP'] + c['FP'])}  " \
                   f"{pct(c['tp_found'], tp_by_rule[code])} "
        print(row)
    for n in names:
        t = totals[n]
        print(f"{n}: {t['found']} findings, {t['TP']} TP, {t['FP']} FP, {t['unlabelled']} unlabelled; "
              f"precision {pct(t['TP'], t['TP'] + t['FP']).strip()}, "
              f"recall {pct(t['tp_found'], len(true_positives)).strip()}"
              f" of {len(true_positives)} labelled true positives")
    if "old" in runs:
        new_found = {(repo, p, ln, c) for repo, items in runs["new"].items() for p, ln, c in items}
        lost = sorted((repo, p, ln, c) for repo, items in runs["old"].items() for p, ln, c in items
                      if labels.get((repo, p, ln, c), ("",))[0] == "TP"
                      and not _found_at(new_found, (repo, p, ln, c), labels))
        print(f"true positives of the old linter the new one does not report by default: {len(lost)}")
        for repo, p, ln, c in lost:
            print(f"  {c} {repo} {p}:{ln}  ({labels[(repo, p, ln, c)][1]})")
    if args.unlabelled:
        with args.unlabelled.open("w", newline="") as handle:
            writer = csv.writer(handle)
            seen = set()
            for n in names:
                for repo, path, line, code in results[n]["unlabelled"]:
                    if (repo, path, line, code) not in seen:
                        seen.add((repo, path, line, code))
                        writer.writerow([repo, commits[repo], path, line, code, "", ""])
        print(f"unlabelled findings written to {args.unlabelled}")


if __name__ == "__main__":
    main()
