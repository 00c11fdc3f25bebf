"""Re-measure `tfdoctor lint`'s precision on repositories of your own choosing (issue 39: the bar, 80 % of the
default settings' findings right, is to be re-measured outside the project).

    python benchmarks/lint_outside.py list CHECKOUT [CHECKOUT ...] --out findings.csv [--preview] [--force]
    python benchmarks/lint_outside.py score findings.csv [--bar 80]

`list` lints each checkout (a clone of one repository, at the commit you chose) exactly as a user would:
`tfdoctor lint --format json DIR` in its own process, default settings, with the tfdoctor of this interpreter
(`--tfdoctor COMMAND` for another one). It writes one CSV row per finding (SRC001/SRC002, files that do not
parse or read, are counted, not listed): the repository (its `origin` remote, else the folder's name), the
commit, path, notebook cell, line, column, rule, severity, tier (`shown`: every kind of evidence its rule
declares was seen; `unproven`: an info saying which it could not see; `pattern`: a rule that declares none),
message, grounds, the linter (tfdoctor's version and, from a git checkout, its commit) and two empty columns,
`label` and `reason`. With `--preview` the preview rules run too, and their extra findings are rows whose
`run` is `preview`; the default figure is the `default` rows'.

You judge each row by the rubric in docs/lint.md ("The rubric every held-out finding is judged by"): `label` is
`true`, `debatable` or `false`, and `reason` says why in a line, from the code around the finding (not from the
message).

`score` prints, for the default run and then for the preview rows, per rule and in all: the findings judged,
true, debatable, false, the strict precision (debatable counted false), the lenient one (debatable counted
true), and the 95 % Wilson interval of the strict one, then the findings per repository (a figure carried by
one repository says less than its count suggests), and whether the strict default figure reaches `--bar`.

Exit codes: 0 done (`list`: every checkout linted; `score`: every row judged); 1 `list`: a checkout's lint
crashed, timed out or failed (the CSV is still written, with what was found, and the message says which);
`score`: rows still unjudged (listed; the figure printed is not one to quote); 2 usage error (a checkout that is
not a folder, two checkouts of one repository, `--out` that exists without `--force` or cannot be written, a CSV
without the columns or over 64 MiB, a label that is not one of the three, a label without its reason); 4 standard
output or error could not be written. A lint's report is read back up to 256 MiB; a lint still running at
`--timeout`, or when this script is ended, is killed with every process it started.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from lint_heldout4 import LABEL_VALUES, NOT_JUDGED, _pct, precision  # noqa: E402
from lint_heldout5 import tier_of  # noqa: E402 (the tiers the held-out sets are scored by)

from tfdoctor.fixes.write import WriteError, write_bytes  # noqa: E402
from tfdoctor.terminal import EXIT_OUTPUT, OutputLost, safe_line, write  # noqa: E402

COLUMNS = ("repo", "commit", "run", "path", "cell", "line", "column", "rule", "severity", "tier", "message",
           "grounds", "linter", "label", "reason")
NEEDED = ("repo", "path", "line", "rule", "label", "reason")
TIMEOUT = 3600.0  # seconds for one checkout: the largest repositories linted here take under a minute
EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2
# What is read back: lint's JSON for one repository (20,000 files of the corpora give well under 10 MB) and a
# judged CSV; anything larger is refused with a message, not read into memory.
REPORT_LIMIT = 256 * 1024 * 1024
CSV_LIMIT = 64 * 1024 * 1024
STDERR_TAIL = 4096
Z95 = 1.959964


class UsageError(Exception):
    """Bad input: a message and exit 2, never a traceback."""


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def repository_name(folder: Path) -> str:
    """`owner/name` from the checkout's `origin` remote on a host (https, ssh or `git@host:` form), else the
    folder's name (no remote, or a clone of a local path or `file://` URL, whose last parts name no owner)."""
    remote = _git(folder, "remote", "get-url", "origin").removesuffix("/").removesuffix(".git")
    local = not remote or remote.startswith(("/", ".", "~", "file:")) or Path(remote).exists()
    parts = remote.replace(":", "/").split("/")
    if not local and len(parts) >= 2 and parts[-1] and parts[-2]:
        return f"{parts[-2]}/{parts[-1]}"
    return folder.resolve().name


def linter_name(command: list[str]) -> str:
    """tfdoctor's version, and its commit when it runs from a git checkout (`+changes` if tfdoctor/ differs)."""
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"cannot run {safe_line(shlex.join(command))}: {safe_line(str(error))}") from None
    if done.returncode != 0 or "tfdoctor" not in done.stdout:
        raise UsageError(f"{safe_line(shlex.join(command))} --version did not answer as tfdoctor "
                         f"(exit {done.returncode})")
    version = done.stdout.strip().split()[-1]
    if command[:3] != [sys.executable, "-m", "tfdoctor"]:
        return version
    head = _git(ROOT, "rev-parse", "--short", "HEAD")
    changed = _git(ROOT, "status", "--porcelain", "--", "tfdoctor")
    return f"{version} ({head}{'+changes' if changed else ''})" if head else version


def lint(command: list[str], folder: Path, preview: bool, timeout: float, cwd: Path) -> tuple[dict | None, str]:
    """(the JSON report, '') or (None, why not) for one checkout, linted from `cwd`, an empty folder: tfdoctor
    reads `[tool.tfdoctor]` from the folder it runs in upward, and the figure is of the default settings, not of
    whatever configuration the reader's folder holds.

    The lint runs in a session of its own, its output in files of `cwd` read back within bounds: at `timeout`,
    or if this script is ended (SIGTERM, SIGHUP, Ctrl-C), the whole group is killed, workers included."""
    args = [*command, "lint", "--format", "json", "--fail-on", "never", *(["--preview"] if preview else []),
            str(folder.resolve())]
    out_path, err_path = cwd / "report.json", cwd / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            child = subprocess.Popen(args, stdout=out, stderr=err, cwd=cwd, start_new_session=True)
        except OSError as error:
            return None, f"could not run {shlex.join(command)}: {error}"
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"still running after {timeout:g} s (--timeout)"
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)  # workers it left, or all of it on a timeout or a signal
            child.wait()
    size = out_path.stat().st_size
    if size > REPORT_LIMIT:
        return None, f"a report of {size:,} bytes, over the {REPORT_LIMIT:,} read back"
    try:
        report = json.loads(out_path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError):
        with err_path.open("rb") as handle:
            handle.seek(max(0, err_path.stat().st_size - STDERR_TAIL))
            tail = handle.read().decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return None, f"exit {returncode}, no report: {tail[0]}"
    if returncode == 3 or report.get("crashes"):
        return report, f"a rule crashed ({len(report.get('crashes') or [])}; see `tfdoctor lint` on it)"
    return report, ""


def _key(finding: dict) -> tuple:
    return finding["path"], finding.get("cell"), finding["line"], finding["column"], finding["code"]


def rows_of(report: dict, folder: Path, repo: str, commit: str, run: str, linter: str,
            leave_out: set[tuple] = frozenset()) -> tuple[list[dict[str, str]], int]:
    """(a row per finding to judge, the SRC001/SRC002 findings counted apart)."""
    rows, unjudged = [], 0
    for finding in report["findings"]:
        if finding["code"] in NOT_JUDGED:
            unjudged += 1
            continue
        if _key(finding) in leave_out:
            continue
        grounds = finding.get("grounds") or {}
        path = Path(finding["path"])
        with contextlib.suppress(ValueError):  # a path outside the checkout (a symlink out of it) stays as it is
            path = path.resolve().relative_to(folder.resolve())
        rows.append({
            "repo": repo, "commit": commit, "run": run, "path": path.as_posix(), "cell": str(finding.get("cell") or ""),
            "line": str(finding["line"]), "column": str(finding["column"]), "rule": finding["code"],
            "severity": finding["severity"], "tier": tier_of(grounds), "message": finding["message"],
            "grounds": "; ".join(f"{kind}: {text}" for kind, text in grounds.items()), "linter": linter,
            "label": "", "reason": ""})
    return rows, unjudged


def _write_csv(out: Path, rows: list[dict[str, str]], force: bool) -> None:
    """Whole or not at all, with the umask, never through a link out of its folder (tfdoctor's own writer)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    try:
        write_bytes(out, text.getvalue().encode("utf-8"), force=force)
    except WriteError as error:
        raise UsageError(safe_line(str(error))) from None


def _say(text: str, err: bool = False) -> None:
    """Printed as tfdoctor prints: control characters shown, lines fitted to a terminal."""
    write(text + "\n", err=err, wrap=True)


def list_findings(args: argparse.Namespace) -> int:
    folders = [Path(c) for c in args.checkouts]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{safe_line(str(folder))}: not a folder (give a checkout of each repository)")
    if args.out.exists() and not args.force:
        raise UsageError(f"{safe_line(str(args.out))} exists (it may hold your labels): give another --out, or --force")
    if not args.out.parent.is_dir():
        raise UsageError(f"{safe_line(str(args.out.parent))}: no such folder for --out")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give a number of seconds above 0")
    names = [repository_name(f) for f in folders]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two checkouts of {safe_line(', '.join(twice))}: give each repository once")
    try:
        command = shlex.split(args.tfdoctor) if args.tfdoctor is not None else [sys.executable, "-m", "tfdoctor"]
    except ValueError as error:
        raise UsageError(f"--tfdoctor: {error}") from None
    if not command:
        raise UsageError("--tfdoctor: give a command")
    linter = linter_name(command)
    rows: list[dict[str, str]] = []
    problems, files, unparsed = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="tfdoctor-outside-") as empty:
        for folder, repo in zip(folders, names, strict=True):
            commit = _git(folder, "rev-parse", "HEAD")
            report, problem = lint(command, folder, False, args.timeout, Path(empty))
            if report is not None:
                made, skipped = rows_of(report, folder, repo, commit, "default", linter)
                rows += made
                files += report.get("files", 0)
                unparsed += skipped
            if args.preview and report is not None and not problem:
                extra, problem = lint(command, folder, True, args.timeout, Path(empty))
                if extra is not None:
                    rows += rows_of(extra, folder, repo, commit, "preview", linter,
                                    {_key(f) for f in report["findings"]})[0]
            if problem:
                problems.append(f"{safe_line(repo)}: {safe_line(problem)}")
    _write_csv(args.out, rows, args.force)
    by_run = Counter(r["run"] for r in rows)
    _say(f"{len(folders)} checkout(s), {files} file(s) linted by tfdoctor {safe_line(linter)}: "
          f"{by_run['default']} default finding(s) to judge"
          + (f", {by_run['preview']} more with the preview rules" if args.preview else "")
          + (f" ({unparsed} SRC001/SRC002, files that do not parse or read, counted, not listed)" if unparsed else "")
          + f"; written to {safe_line(str(args.out))}")
    _say("Judge every row by docs/lint.md's rubric: label true, debatable or false, and a one-line reason; then "
         f"`python benchmarks/lint_outside.py score {shlex.quote(str(args.out))}`.")
    for problem in problems:
        _say(f"not fully linted: {problem}", err=True)
    return EXIT_INCOMPLETE if problems else EXIT_OK


def read_judged(path: Path) -> list[dict[str, str]]:
    """The rows of a judged CSV, each label lower-cased; bad input is a UsageError naming its line."""
    try:
        size = path.stat().st_size
        if size > CSV_LIMIT:
            raise UsageError(f"{safe_line(str(path))}: {size:,} bytes, over the {CSV_LIMIT:,} a judged CSV may hold")
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                raise UsageError(f"{safe_line(str(path))}: no column {', '.join(missing)} (is it a CSV `list` wrote?)")
            rows = []
            for number, row in enumerate(reader, start=2):
                label = (row["label"] or "").strip().lower()
                if label and label not in LABEL_VALUES:
                    raise UsageError(f"{safe_line(str(path))}:{number}: label {safe_line(repr(row['label']))} is not "
                                     f"one of {', '.join(LABEL_VALUES)}")
                if label and not (row["reason"] or "").strip():
                    raise UsageError(f"{safe_line(str(path))}:{number}: a label without its reason")
                rows.append({**row, "label": label or "unjudged", "number": str(number)})
            return rows
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UsageError(f"{safe_line(str(path))}: cannot read it as a CSV ({safe_line(str(error))})") from None


def wilson(successes: int, total: int) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of successes/total (None: nothing judged)."""
    if not total:
        return None
    p, z2 = successes / total, Z95 * Z95
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = Z95 * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def figure_lines(rows: list[dict[str, str]]) -> list[str]:
    counts = Counter((r["rule"], r["label"]) for r in rows)
    lines = ["rule     findings  true  debatable  false  strict    lenient   strict, 95 %"]
    for rule in [*sorted({r["rule"] for r in rows}), None]:
        p = precision(counts, rule)
        interval = wilson(p["true"], p["findings"])
        span = "-" if interval is None else f"{_pct(interval[0])} – {_pct(interval[1])}"
        lines.append(f"{safe_line(rule or 'all'):8} {p['findings']:8}  {p['true']:4}  {p['debatable']:9}  "
                     f"{p['false']:5}  {_pct(p['strict']):8}  {_pct(p['lenient']):8}  {span}")
    return lines


def score(args: argparse.Namespace) -> int:
    if not 0 < args.bar <= 100:
        raise UsageError(f"--bar {args.bar:g}: give a percentage above 0 and at most 100")
    rows = read_judged(args.csv)
    runs = {"default": [r for r in rows if (r.get("run") or "default") == "default"],
            "preview": [r for r in rows if r.get("run") == "preview"]}
    for run, chosen in runs.items():
        if not chosen and run == "preview":
            continue
        _say(f"{run} settings: {len(chosen)} finding(s)" if run == "default" else
              f"preview rules, findings the default settings do not make: {len(chosen)}")
        _say("\n".join(figure_lines(chosen)))
    default = runs["default"]
    by_repo = Counter(r["repo"] for r in default)
    if by_repo:
        _say("default findings per repository: " + ", ".join(
            f"{safe_line(repo)} {n}" for repo, n in sorted(by_repo.items(), key=lambda item: (-item[1], item[0]))))
    linters = sorted({r.get("linter") or "" for r in rows} - {""})
    if linters:
        _say("linted by tfdoctor " + "; ".join(safe_line(name) for name in linters))
    unjudged = [r for r in rows if r["label"] == "unjudged"]
    if unjudged:
        _say(f"{len(unjudged)} row(s) unjudged: judge every finding before quoting a figure", err=True)
        for row in unjudged[:20]:
            where = f"{row['path']}:{row['cell'] + ':' if row.get('cell') else ''}{row['line']}"
            _say(f"  line {row['number']}: {safe_line(row['repo'])} {safe_line(where)} {safe_line(row['rule'])}",
                 err=True)
        if len(unjudged) > 20:
            _say(f"  … and {len(unjudged) - 20} more", err=True)
        return EXIT_INCOMPLETE
    judged = precision(Counter((r["rule"], r["label"]) for r in default))
    if judged["strict"] is None:
        _say("no default finding to judge: no precision figure (a set with none says nothing about it)")
        return EXIT_OK
    verdict = "reaches" if 100 * judged["strict"] >= args.bar else "does not reach"
    _say(f"strict default precision {_pct(judged['strict'])} ({judged['true']} of {judged['findings']}) {verdict} "
          f"the bar of {args.bar:g} %; lenient {_pct(judged['lenient'])}")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="lint checkouts and write every finding to a CSV to judge")
    listing.add_argument("checkouts", nargs="+", metavar="CHECKOUT", help="a clone of one repository")
    listing.add_argument("--out", type=Path, required=True, help="the CSV to write (not overwritten without --force)")
    listing.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    listing.add_argument("--preview", action="store_true", help="also list what the preview rules add")
    listing.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds for one checkout's lint")
    listing.add_argument("--tfdoctor", metavar="COMMAND", help="the tfdoctor to run (default: this interpreter's)")
    scoring = commands.add_parser("score", help="the precision of a judged CSV")
    scoring.add_argument("csv", type=Path)
    scoring.add_argument("--bar", type=float, default=80.0, help="the strict precision, in %%, to reach")
    return top


def _ended(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # through the `finally` that kills a running lint's process group


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _ended)
    try:
        return list_findings(args) if args.command == "list" else score(args)
    except UsageError as error:
        with contextlib.suppress(OutputLost):
            _say(f"lint_outside: {error}", err=True)
        return EXIT_USAGE
    except (OutputLost, BrokenPipeError):
        return EXIT_OUTPUT


if __name__ == "__main__":
    raise SystemExit(main())
