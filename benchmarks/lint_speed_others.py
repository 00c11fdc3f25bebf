"""Lint's CPU time against a plain `ast.parse` of the same files, on large repositories of others (issue 39,
item 7: lint's CPU at most that of the parse), this tree and a baseline linter in the same run.

    python benchmarks/lint_speed_others.py [--runs 5] [--baseline REF] [--mirror /work/.mirror] [--manifest TOML ...]

The repositories are benchmarks/lint_corpus/speed_others.toml (or those of each `--manifest`, e.g. the held-out
sets' heldout10.toml and heldout11.toml: repositories the rules never saw), read from `fetch` snapshots as
benchmarks/lint_corpus.py reads them (it names the fetch to run when one is missing). Each linter — this
checkout's and `--baseline REF`'s (a `git archive` of that commit's tfdoctor/) — runs in a process of its
own that this script drives (`--serve`), warmed once per repository (imports, page cache). In each round,
for each repository, both linters measure in turn, each in its own process (CPU seconds by getrusage: the
process and the worker processes it waited for):

- parse: what a plain script that parses the same sources costs — read each file, decode it, `ast.parse`
  it; for a notebook: read it, decode its JSON, and `ast.parse` the very Python lint parses from it (its
  code cells joined, as IPython reads them; that text is prepared before timing, so the baseline pays for
  no IPython transform and no cell joining);
- one process: `lint_paths(..., jobs=1)` as `tfdoctor lint DIR` reads the files (walked: the prefilter);
- default: `lint_paths(...)` with the number of worker processes `tfdoctor lint DIR` chooses;
- two workers: `lint_paths(..., jobs=2)`.

Figures are medians of the rounds' ratios, each linter's CPU to the parse its own process measured in the
same round (interleaved: a burst of someone else's load hits all alike). The parse runs with the cyclic
garbage collector on, as a script runs it; lint pauses it per file (docs/lint.md, Speed).

Findings: every configuration of this tree must give exactly the findings of the baseline in one process
— path, cell, line, column, end, code, message, evidence, fix and its edits, the .ipynb line — plus the
same crashes and the same number of suppressed findings; any difference is printed and fails the run, but
one: a syntax error (SRC001) or unreadable file (SRC002) the baseline reports in a file this tree's
prefilter does not parse (docs/lint.md: such a file's SRC001/SRC002 is not reported), which is listed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "lint_corpus" / "speed_others.toml"
CONFIGS = ("parse", "one", "default", "two")
NOTEBOOK_REPOS = frozenset({"tensorflow/examples", "ageron/handson-ml3", "aymericdamien/TensorFlow-Examples"})


# --- the plain parse lint is measured against (imports tfdoctor when called: the caller puts the package
# measured first on sys.path)

def parse_plan(files: list[Path]) -> list[tuple[Path, str | None]]:
    """Each file, and for a notebook the Python lint parses from it (None: not a notebook, or none), prepared
    before timing so the parse pays for no IPython transform and no cell joining."""
    from tfdoctor.lint.notebook import NotebookError, notebook_source

    found = []
    for path in files:
        code = None
        if path.suffix == ".ipynb":
            try:
                code = notebook_source(path.read_bytes().decode("utf-8-sig"))[0]
            except (NotebookError, UnicodeDecodeError, ValueError):
                code = ""
        found.append((path, code))
    return found


def parse(plan: list[tuple[Path, str | None]]) -> None:
    """Read, decode and `ast.parse` each file of `plan` (a notebook: its JSON decoded, its Python parsed)."""
    import ast

    from tfdoctor.lint.source import SourceError, decode_source

    for path, code in plan:
        data = path.read_bytes()
        try:
            if code is not None:
                json.loads(data.decode("utf-8-sig"))
                ast.parse(code)
            else:
                ast.parse(decode_source(data))
        except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
            pass


# --- the measuring process (--serve): imports the tfdoctor it is given, answers one JSON line per request

def _serve(package_dir: Path, roots: dict[str, str]) -> None:
    sys.path.insert(0, str(package_dir))
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    import resource

    import tfdoctor
    from tfdoctor.lint.files import python_files
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths, usable_cpus

    assert Path(tfdoctor.__file__).resolve().is_relative_to(package_dir.resolve()), tfdoctor.__file__
    rules = select_lint_rules(load_lint_rules().rules)
    files = {repo: list(python_files([root])) for repo, root in roots.items()}
    prepared: dict[str, list[tuple[Path, str | None]]] = {}

    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def lint(repo: str, jobs: int | None):
        return lint_paths(files[repo], rules, jobs=jobs, walked=files[repo])

    def findings(report) -> dict:
        return {"findings": [dict(f.to_json(), cell=f.cell, raw_line=f.raw_line) for f in report.findings],
                "crashes": report.crashes, "suppressed": report.suppressed, "files": report.files,
                "prefiltered": getattr(report, "prefiltered", 0)}

    def unparsed(repo: str) -> list[str]:
        """The files (as findings name them) this linter's prefilter does not parse."""
        from tfdoctor.lint.prefilter import prefilter_for
        from tfdoctor.lint.runner import display_path

        prefilter = prefilter_for(rules)
        found = []
        for path in files[repo]:
            data = path.read_bytes()
            if path.suffix == ".ipynb" and hasattr(prefilter, "may_fire_notebook"):
                fires = prefilter.may_fire_notebook(data)[0]
            else:
                fires = prefilter.may_fire(data)
            if not fires:
                found.append(display_path(path))
        return found

    def answer(value: object) -> None:
        out.write(json.dumps(value) + "\n")
        out.flush()

    answer({"package": str(Path(tfdoctor.__file__).parent), "cpus": usable_cpus(),
            "files": {repo: len(found) for repo, found in files.items()}})
    for line in sys.stdin:
        request = json.loads(line)
        repo, what = request["repo"], request["what"]
        if what == "warm":
            prepared[repo] = parse_plan(files[repo])
            parse(prepared[repo])
            answer({"one": findings(lint(repo, 1)), "default": findings(lint(repo, None)),
                    "two": findings(lint(repo, 2)), "unparsed": unparsed(repo)})
            continue
        start, start_cpu = time.perf_counter(), cpu()
        if what == "parse":
            parse(prepared[repo])
        else:
            lint(repo, {"one": 1, "default": None, "two": 2}[what])
        answer({"cpu": cpu() - start_cpu, "wall": time.perf_counter() - start})


# --- the driver

class Linter:
    """A serving process for one tfdoctor package."""

    def __init__(self, label: str, package_dir: Path, roots: dict[str, Path]) -> None:
        self.label = label
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(package_dir), json.dumps({r: str(p) for r, p in roots.items()})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        self.hello = self._read()

    def _read(self) -> dict:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"{self.label}: the measuring process ended")
        return json.loads(line)

    def ask(self, repo: str, what: str) -> dict:
        self.process.stdin.write(json.dumps({"repo": repo, "what": what}) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self._read()

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait()


def archive(ref: str, into: Path) -> str:
    """Extract REF's tfdoctor/ into `into`; return the commit's short hash."""
    commit = subprocess.run(["git", "rev-parse", "--short", f"{ref}^{{commit}}"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    tar = subprocess.run(["git", "archive", commit, "tfdoctor"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return commit


def _same(ours: dict, theirs: dict, unparsed: frozenset[str] = frozenset()) -> tuple[list[str], list[dict]]:
    """What differs between two answers (findings, crashes, suppressed), as lines to print; and the findings
    of the baseline that differ only as the prefilter allows: SRC001/SRC002 of a file this tree does not
    parse (`unparsed`: no selected rule's triggers in it, for a notebook in its code cells)."""
    differences = []
    key = lambda f: json.dumps(f, sort_keys=True)  # noqa: E731
    mine, base = {key(f) for f in ours["findings"]}, {key(f) for f in theirs["findings"]}
    allowed = [f for f in (json.loads(k) for k in sorted(base - mine))
               if f["code"] in ("SRC001", "SRC002") and f["path"] in unparsed]
    lost = base - mine - {key(f) for f in allowed}
    differences += [f"  only here: {f}" for f in sorted(mine - base)]
    differences += [f"  only in the baseline: {f}" for f in sorted(lost)]
    if len(ours["findings"]) + len(allowed) != len(theirs["findings"]):
        differences.append(f"  {len(ours['findings'])} findings here, {len(theirs['findings'])} in the baseline")
    if sorted(ours["crashes"]) != sorted(theirs["crashes"]):
        differences.append(f"  crashes: {ours['crashes']} here, {theirs['crashes']} in the baseline")
    if ours["suppressed"] != theirs["suppressed"]:
        differences.append(f"  suppressed: {ours['suppressed']} here, {theirs['suppressed']} in the baseline")
    return differences, allowed


def _ratio(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        _serve(Path(argv[1]), json.loads(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="6d9b27f", help="the commit whose linter is measured alongside")
    parser.add_argument("--manifest", type=Path, action="append",
                        help="a corpus manifest whose repositories to measure (repeatable; default: speed_others.toml)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from lint_corpus import materialise

    repos = [repo for manifest in args.manifest or [MANIFEST] for repo in tomllib.loads(manifest.read_text())["repos"]]
    roots, _ = materialise(args.mirror, args.cache, repos)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    # a results file being written (untracked) is not a change to what is measured
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "tfdoctor", "benchmarks"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        commit = archive(args.baseline, Path(scratch))
        tree = Linter("tree", ROOT, roots)
        base = Linter(commit, Path(scratch), roots)
        try:
            return _run(args, roots, tree, base, f"{head.strip()}{' (uncommitted changes)' if dirty else ''}", commit)
        finally:
            tree.close()
            base.close()


def _run(args, roots: dict[str, Path], tree: Linter, base: Linter, head: str, commit: str) -> int:
    print(f"this tree: {head}, tfdoctor from {tree.hello['package']}")
    print(f"baseline: {commit}, tfdoctor from <git archive {commit} tfdoctor>")
    print(f"machine: {os.cpu_count()} CPUs, {tree.hello['cpus']} usable; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failed = False
    for repo in roots:
        if tree.hello["files"][repo] != base.hello["files"][repo]:
            print(f"{repo}: {tree.hello['files'][repo]} files here, {base.hello['files'][repo]} for the baseline")
            failed = True
    checked: dict[str, str] = {}
    notes: dict[str, int] = {}
    parsed: dict[str, int] = {}
    for repo in roots:
        ours, theirs = tree.ask(repo, "warm"), base.ask(repo, "warm")
        parsed[repo] = ours["one"]["files"] - ours["one"]["prefiltered"]
        problems = []
        unparsed = frozenset(ours["unparsed"])
        for config in ("one", "default", "two"):
            differences, allowed = _same(ours[config], theirs["one"], unparsed)
            if differences:
                problems.append(f"{repo}, {config}: findings differ from {commit}'s:")
                problems += differences
        problems += [f"{repo}, {commit} {c}: differs from its one process" for c in ("default", "two")
                     if _same(theirs[c], theirs["one"])[0]]
        _, allowed = _same(ours["one"], theirs["one"], unparsed)
        for finding in allowed:
            where = f"{finding['path']}:cell {finding['cell']}:{finding['line']}"
            print(f"{repo}: not parsed here, so not reported (its code cells hold no rule's triggers): {commit}'s "
                  f"{finding['code']} at {where}: {finding['message']}")
        notes[repo] = len(allowed)
        if problems:
            failed = True
            print("\n".join(problems))
        checked[repo] = f"{len(ours['one']['findings'])} findings, " + \
            ("differ" if problems else f"identical but {len(allowed)} SRC001/SRC002 of unparsed files" if allowed
             else "identical")
    # seconds[linter][repo][config] = [CPU seconds per round]; walls likewise
    seconds = {who.label: {repo: {c: [] for c in CONFIGS} for repo in roots} for who in (tree, base)}
    walls = {who.label: {repo: {c: [] for c in CONFIGS} for repo in roots} for who in (tree, base)}
    for round_number in range(args.runs):
        for repo in roots:
            for who in (tree, base) if round_number % 2 == 0 else (base, tree):
                for config in CONFIGS:
                    measured = who.ask(repo, config)
                    seconds[who.label][repo][config].append(measured["cpu"])
                    walls[who.label][repo][config].append(measured["wall"])

    def ratios(label: str, repos, config: str) -> list[float]:
        return [sum(seconds[label][r][config][k] for r in repos) / sum(seconds[label][r]["parse"][k] for r in repos)
                for k in range(args.runs)]

    columns = [(commit, "one", f"{commit}, one"), (commit, "two", f"{commit}, 2 workers"),
               ("tree", "one", "tree, one"), ("tree", "default", "tree, default"), ("tree", "two", "tree, 2 workers")]
    print(f"\n{'repository':<34}{'files':>6}{'parsed':>7}{'parse s':>8}  " +
          "  ".join(f"{title:>19}" for _, _, title in columns) + "  findings (tree vs baseline)")
    groups = [([r], r) for r in roots]
    groups += [(sorted(NOTEBOOK_REPOS & set(roots)), "notebook repositories"),
               (sorted(set(roots) - NOTEBOOK_REPOS), "code repositories"), (list(roots), "all")]
    groups = [(repos, title) for repos, title in groups if repos]  # another manifest: no notebook group
    worst = {}
    for repos, title in groups:
        files = sum(tree.hello["files"][r] for r in repos)
        parse_s = statistics.median(sum(seconds["tree"][r]["parse"][k] for r in repos) for k in range(args.runs))
        shown = []
        for label, config, _ in columns:
            values = ratios(label, repos, config)
            shown.append(_ratio(values))
            if label == "tree" and files:  # a repository with no file to lint (all tests): a ratio of noise
                worst[(title, config)] = statistics.median(values)
        print(f"{title:<34}{files:>6}{sum(parsed[r] for r in repos):>7}{parse_s:>8.2f}  " +
              "  ".join(f"{s:>19}" for s in shown) + (f"  {checked[repos[0]]}" if len(repos) == 1 else ""))
    wall = {label: {c: statistics.median(sum(walls[label][r][c][k] for r in roots) for k in range(args.runs))
                    for c in CONFIGS} for label in ("tree", commit)}
    print(f"\nelapsed seconds, all repositories (median round): parse {wall['tree']['parse']:.2f}; {commit}: one "
          f"{wall[commit]['one']:.2f}, 2 workers {wall[commit]['two']:.2f}; tree: one {wall['tree']['one']:.2f}, "
          f"default {wall['tree']['default']:.2f}, 2 workers {wall['tree']['two']:.2f}")
    print(f"ratios: CPU seconds of lint / CPU seconds of the parse measured by the same process in the same round; "
          f"median (lowest-highest) of {args.runs} rounds. parse = read, decode, ast.parse of every file (a notebook: "
          "its JSON decoded, and the Python lint reads from its code cells parsed)")
    over = sorted(f"{title} {config} {value:.2f}x" for (title, config), value in worst.items() if value > 1.0)
    print("tree at most 1.0x of the parse in every configuration: " + ("yes" if not over else "no: " + ", ".join(over)))
    print(f"findings of the tree (one process, default, 2 workers) identical to {commit}'s (one process) on every "
          f"repository: {'no' if failed else 'yes'}" + (f", but for {sum(notes.values())} SRC001/SRC002 of files "
                                                         "the tree does not parse (listed above)"
                                                         if sum(notes.values()) and not failed else ""))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
