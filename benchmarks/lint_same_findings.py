"""Finding-for-finding comparison of `tfdoctor lint` before and after a change that must not alter output.

    python benchmarks/lint_same_findings.py [--ref COMMIT] [--mirror /work/.mirror] [--output FILE] [--timeout S]

A speed-up of the linter (issue 25) must report exactly what it reported before. This lints every
repository of the three corpora (benchmarks/lint_corpus/manifest.toml, heldout.toml, heldout2.toml; read
from `fetch` snapshots like benchmarks/lint_corpus.py) with every rule, preview rules and test files
included, once with the working tree and once with tfdoctor at `--ref` (a `git archive` of that commit, in
a subprocess without site-packages), and compares the whole of each finding: path, cell, span, code,
message, evidence, fix and its edits, plus crashes and the count of suppressed findings. It prints the
count of findings of each and every difference, and exits 1 when there is one.

With `--walked` each repository is linted as `tfdoctor lint DIR` lints it instead (the files a walk finds,
through the prefilter, each for its nearest pins), twice: the default rules, then with the preview rules;
the findings held back by default and the info findings dropped for want of evidence are compared too. That
is the run for a change to what the prefilter lets each rule see. `--manifest NAME` (repeatable) lints the
repositories of those manifests of benchmarks/lint_corpus/ instead of the three. With `--output FILE` it
also writes that summary to FILE (benchmarks/results/lint_same_findings-DATE.txt), under a line saying
what was run, on which commit of the working tree, and when. Either side's linting is ended after `--timeout`
seconds (two hours by default), with a message and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from lint_corpus import materialise  # noqa: E402

MANIFESTS = ("manifest.toml", "heldout.toml", "heldout2.toml")

# Run with the tfdoctor to compare first on sys.path: one JSON line per repository and per finding.
_DUMP = r"""
import json, sys
from pathlib import Path
import tfdoctor
assert tfdoctor.__file__.startswith(sys.argv[1]), tfdoctor.__file__
import importlib, pkgutil, tfdoctor.lint.rules as rules_pkg
from tfdoctor.lint.files import python_files
from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import lint_paths
modules = [importlib.import_module(f"tfdoctor.lint.rules.{m.name}") for m in pkgutil.iter_modules(rules_pkg.__path__)]
rules = select_lint_rules(load_lint_rules(modules).rules, preview=True)
walked = sys.argv[2] == "walked"
for root in sys.argv[3:]:
    if walked:
        from tfdoctor.lint.api import lint_directory
        for preview in (False, True):
            report = lint_directory(Path(root), preview=preview, jobs=1)
            out = {"root": f"{root} ({'preview' if preview else 'default'})", "files": report.files,
                   "suppressed": report.suppressed, "crashes": report.crashes,
                   "held_back": report.held_back_by, "unproven": report.unproven,
                   "findings": [dict(f.to_json(), raw_line=f.raw_line) for f in report.findings]}
            print(json.dumps(out, sort_keys=True, default=repr))
        continue
    report = lint_paths(sorted(python_files([root], include_tests=True)), rules, jobs=1)
    out = {"root": root, "files": report.files, "suppressed": report.suppressed, "crashes": report.crashes,
           "findings": [dict(f.to_json(), raw_line=f.raw_line) for f in report.findings]}
    print(json.dumps(out, sort_keys=True, default=repr))
"""


def dump(source: Path, roots: list[Path], walked: bool = False, timeout: float = 7200.0) -> dict[str, dict]:
    """Lint each root with the tfdoctor package found under `source`, in a fresh interpreter that is ended
    after `timeout` seconds (a linter that hangs on one file must end the comparison, not stall it)."""
    import packaging  # what lint's pins read (walked runs) is found beside it, not in site-packages at large

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(Path(packaging.__file__).parent.parent)])}
    # -S: no site-packages, so an editable install of another worktree cannot shadow `source`.
    mode = "walked" if walked else "named"
    try:
        out = subprocess.run([sys.executable, "-S", "-c", _DUMP, str(source), mode, *map(str, roots)],
                             capture_output=True, text=True, env=env, cwd=source, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"linting with {source} took over {timeout:g} s (--timeout) and was ended")
    if out.returncode:
        sys.exit(f"linting with {source} failed:\n{out.stderr[-3000:]}")
    return {entry["root"]: entry for entry in map(json.loads, out.stdout.splitlines())}


def extract_tfdoctor(ref: str, dest: Path) -> None:
    """tfdoctor/ as it is at `ref`, under `dest`; a ref git does not know is a message, not a traceback."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--", ref, "tfdoctor"], capture_output=True)
    if archive.returncode:
        sys.exit(f"--ref {ref}: {archive.stderr.decode(errors='replace').strip()[-500:]}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def differences(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    """Every finding, crash or count present on one side only, as lines to print."""
    lines = []
    for root in sorted(set(before) | set(after)):
        old, new = before.get(root, {}), after.get(root, {})
        for key in ("files", "suppressed", "held_back", "unproven"):
            if old.get(key) != new.get(key):
                lines.append(f"{root}: {key} {old.get(key)} before, {new.get(key)} after")
        for key in ("crashes", "findings"):
            old_items = [json.dumps(i, sort_keys=True) for i in old.get(key, [])]
            new_items = [json.dumps(i, sort_keys=True) for i in new.get(key, [])]
            if old_items != new_items:
                gone = sorted(set(old_items) - set(new_items))
                added = sorted(set(new_items) - set(old_items))
                lines += [f"- {root}: {i}" for i in gone] + [f"+ {root}: {i}" for i in added]
                if not gone and not added:
                    lines.append(f"{root}: the same {key} in another order (or repeated)")
    return lines


_MODES = (" (default)", " (preview)")  # a walked run lints each repository twice: `root (mode)`, one entry each


def summary(ref: str, before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    """What the run prints: repositories, files and findings on each side, then every difference. A walked run
    lints each repository twice, with the default rules and with the preview ones: its repositories and files are
    counted once, and its findings by mode (results files written before this was so count each run)."""
    lines = differences(before, after)
    tail = [*lines, "identical" if not lines else f"{len(lines)} differences"]
    if not any(root.endswith(_MODES) for root in after):
        count = {name: sum(len(e["findings"]) for e in side.values()) for name, side in (("before", before),
                                                                                          ("after", after))}
        files = sum(e["files"] for e in after.values())
        return [f"{len(after)} repositories, {files} files; findings at {ref}: {count['before']}, "
                f"working tree: {count['after']}", *tail]

    def by_mode(side: dict[str, dict], mode: str) -> int:
        return sum(len(e["findings"]) for root, e in side.items() if root.endswith(mode))

    default, preview = _MODES
    repositories = {root[: -len(default)] for root in after if root.endswith(default)}
    files = sum(e["files"] for root, e in after.items() if root.endswith(default))
    return [f"{len(repositories)} repositories, {files} files, each linted with the default rules and with the "
            f"preview rules; findings at {ref}: {by_mode(before, default)} and {by_mode(before, preview)}, "
            f"working tree: {by_mode(after, default)} and {by_mode(after, preview)}", *tail]


def results_header(argv: list[str], commit: str, dirty: bool, when: float) -> str:
    """The first line of a results file: the command, the working tree it linted, the time (UTC)."""
    tree = f"working tree at {commit}" + (" with uncommitted changes" if dirty else "")
    return (f"# python benchmarks/lint_same_findings.py {' '.join(argv)}".rstrip() + f", {tree}, "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(when))}")


def write_results(path: Path, header: str, lines: list[str]) -> None:
    """Through tfdoctor's one writer: a temporary file renamed into place (a link at `path` is replaced, not
    written through; a results file is never left half-written)."""
    sys.path.insert(0, str(ROOT))  # this checkout's tfdoctor, as the working tree linted
    from tfdoctor.fixes.write import WriteError, write_file

    try:
        write_file(path, "\n".join([header, *lines]) + "\n", force=True)
    except WriteError as exc:
        sys.exit(f"lint_same_findings.py: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="the tfdoctor commit to compare the working tree with")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help="also write the summary to FILE (benchmarks/results/lint_same_findings-DATE.txt)")
    parser.add_argument("--walked", action="store_true",
                        help="lint as `tfdoctor lint DIR` does (prefilter, pins), default rules and preview")
    parser.add_argument("--timeout", type=float, default=7200.0, metavar="SECONDS",
                        help="end either side's linting after this long (default 7200)")
    parser.add_argument("--manifest", action="append", metavar="NAME",
                        help="a manifest of benchmarks/lint_corpus/ to lint (repeatable; default: the three)")
    args = parser.parse_args()
    if not args.timeout > 0:  # nan and 0 included: a run that can never finish, or is ended at once
        parser.error(f"--timeout {args.timeout:g}: give a number of seconds above 0")
    started = time.time()
    if args.output and not args.output.parent.is_dir():
        parser.error(f"--output {args.output}: no folder {args.output.parent}")
    manifests = [HERE / "lint_corpus" / (name if name.endswith(".toml") else f"{name}.toml")
                 for name in args.manifest or MANIFESTS]
    absent = [m.name for m in manifests if not m.is_file()]
    if absent:
        parser.error(f"--manifest: no {', '.join(absent)} in benchmarks/lint_corpus/")
    repos = [r for manifest in manifests for r in tomllib.loads(manifest.read_text())["repos"]]
    roots, _ = materialise(args.mirror, args.cache, repos)
    paths = [roots[r["repo"]] for r in repos]
    with tempfile.TemporaryDirectory(prefix="tfdoctor-ref-") as tmp:
        extract_tfdoctor(args.ref, Path(tmp))
        before = dump(Path(tmp), paths, args.walked, args.timeout)
    after = dump(ROOT, paths, args.walked, args.timeout)
    lines = summary(args.ref, before, after)
    print("\n".join(lines))
    if args.output:
        git = ["git", "-C", str(ROOT)]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run([*git, "status", "--porcelain", "--", "tfdoctor"], capture_output=True,
                                    text=True).stdout.strip())
        write_results(args.output, results_header(sys.argv[1:], commit, dirty, started), lines)
    sys.exit(0 if lines[-1] == "identical" else 1)


if __name__ == "__main__":
    main()
