"""Lint's instructions against a plain `ast.parse` of the same files (issue 39, item 7), this tree and a baseline
linter in the same run: the figure load does not move, where lint_speed_others.py's CPU seconds on a small
repository swing by a third between rounds.

    python benchmarks/lint_instructions.py [--repo snowkylin/tensorflow-handbook] [--manifest TOML]
                                           [--baseline REF] [--rounds 2] [--mirror /work/.mirror]

For each linter (this checkout's tfdoctor/ and `--baseline REF`'s, a `git archive` of that commit) three
processes run under `valgrind --tool=callgrind`, each importing that tfdoctor, reading the repository's files
and warming up once (one lint, one parse): one stops there, one then lints `--rounds` times
(`lint_paths(..., jobs=1)` with the default rules, as `tfdoctor lint DIR` reads the files: the prefilter),
one parses `--rounds` times (as lint_speed_others.py's parse: read, decode, `ast.parse`; a notebook's JSON
decoded and its Python parsed). Lint's instructions are the second's less the first's, the parse's the
third's less the first's; the figure is their ratio. Every process hashes strings with one seed
(PYTHONHASHSEED=0): randomised, the same parse's count moved by about 1 % between runs. The repository is
read from its `fetch` snapshot at the commit its manifest pins (default: the eleventh held-out set's, where
snowkylin/tensorflow-handbook is). Without valgrind or the snapshot it says so and exits 0 without a figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "lint_corpus" / "heldout11.toml"
REPO = "snowkylin/tensorflow-handbook"
_COLLECTED = re.compile(r"Collected : (\d+)")
TIMEOUT = 1800  # seconds for one measured process: callgrind runs a lint of snowkylin twice in about 100


def _work(package_dir: str, root: str, mode: str, rounds: int) -> None:
    """The measured process: warm up, then lint or parse `rounds` times (mode "warm": neither)."""
    sys.path.insert(0, package_dir)
    sys.path.insert(1, str(HERE))
    from lint_speed_others import parse, parse_plan

    import tfdoctor
    from tfdoctor.lint.files import python_files
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths

    assert Path(tfdoctor.__file__).resolve().is_relative_to(Path(package_dir).resolve()), tfdoctor.__file__
    rules = select_lint_rules(load_lint_rules().rules)
    files = list(python_files([root]))
    plan = parse_plan(files)
    lint_paths(files, rules, jobs=1, walked=files)
    parse(plan)
    for _ in range(rounds if mode != "warm" else 0):
        if mode == "lint":
            lint_paths(files, rules, jobs=1, walked=files)
        else:
            parse(plan)


def instructions(package_dir: Path, root: Path, mode: str, rounds: int) -> int:
    """Instructions callgrind counts for one measured process."""
    # one string hash for every process: randomised, it moves a parse's count by about 1 % between runs
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    try:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                              __file__, "--work", str(package_dir), str(root), mode, str(rounds)],
                             capture_output=True, text=True, cwd=tempfile.gettempdir(), env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:  # run() has killed it
        raise SystemExit(f"lint_instructions.py: the {mode} process under valgrind ran over {TIMEOUT} s") from None
    found = _COLLECTED.search(out.stderr)
    if out.returncode or not found:
        raise SystemExit(f"lint_instructions.py: the {mode} process under valgrind failed:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def measure(package_dir: Path, root: Path, rounds: int) -> tuple[int, int]:
    """(lint's instructions, the parse's) for `rounds` of each, the warm-up's taken out."""
    warm = instructions(package_dir, root, "warm", rounds)
    return (instructions(package_dir, root, "lint", rounds) - warm,
            instructions(package_dir, root, "parse", rounds) - warm)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--work"]:
        _work(argv[1], argv[2], argv[3], int(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--baseline", default="2273119", help="the commit whose linter is measured alongside")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not here (apt-get install valgrind): no figure")
        return 0
    entries = [r for r in tomllib.loads(args.manifest.read_text())["repos"] if r["repo"] == args.repo]
    if not entries:
        parser.error(f"--repo {args.repo}: not in {args.manifest}")
    sys.path.insert(0, str(HERE))
    from lint_corpus import snapshot_git_dir
    from lint_speed_others import archive

    if not snapshot_git_dir(args.mirror, args.repo).is_dir():
        print(f"skipped: no snapshot of {args.repo} here (fetch github:{args.repo}): no figure")
        return 0
    from lint_corpus import materialise

    roots, _ = materialise(args.mirror, args.cache, entries)
    root = roots[args.repo]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    # a results file being written (untracked) is not a change to what is measured
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "tfdoctor", "benchmarks"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        commit = archive(args.baseline, Path(scratch))
        figures = {f"{commit} (baseline)": measure(Path(scratch), root, args.rounds),
                   f"{head.strip()}{' (uncommitted changes)' if dirty else ''} (this tree)":
                       measure(ROOT, root, args.rounds)}
    print(f"{args.repo} at {entries[0]['commit'][:10]}, {args.rounds} rounds of each, instructions by callgrind")
    for label, (linted, parsed) in figures.items():
        print(f"  {label}: lint {linted:,}, parse {parsed:,}, lint / parse {linted / parsed:.3f}")
    (base_lint, _), (tree_lint, _) = figures.values()
    print(f"lint's instructions, this tree over the baseline: {tree_lint / base_lint:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
