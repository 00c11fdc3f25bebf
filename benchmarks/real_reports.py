"""How many real reports tfdoctor diagnoses, per split and category (tests/reports/, issues 35 and 36),
and how many of their healthy twins stay silent. The held-out split's figure is the one docs/real-reports.md
cites; the dev split is what the checks were written against, a development figure only.

    python benchmarks/real_reports.py [--split heldout] [--category containers] [--verbose] [--baseline REF]

Each report's machine is probed once, as `tfdoctor collect` would, and its facts file judged by this tree's
checks. The baseline in the same run is the checks of another commit (`--baseline REF`, e.g. the commit
before a change: its `tfdoctor/` exported with `git archive` and run as `tfdoctor check --facts F --format
json` in a subprocess) over the very same facts files, so the two columns differ by the checks alone; with
no `--baseline`, the baseline is no check at all. A report counts only through a code it was labelled with
before tfdoctor ran on it, at its `least` severity or above."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from healthy import MACHINES, check_recorded, collect  # noqa: E402
from reports import REPORTS, diagnosed  # noqa: E402

from tfdoctor.model import Severity  # noqa: E402

LOUD = ("warning", "error")


def export(ref: str, into: Path) -> Path:
    """`tfdoctor/` as it is at `ref`, unpacked under `into`: a package the baseline's subprocess imports."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "tfdoctor"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def baseline_findings(tree: Path, recorded: Path) -> dict[str, str]:
    """code -> severity of every check with findings, as the baseline tree's `check --facts` reports them."""
    code = "import sys; from tfdoctor.cli import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, "check", "--facts", str(recorded), "--format", "json",
                           "--fail-on", "never"], capture_output=True, text=True, timeout=120, check=False,
                          cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    try:
        results = json.loads(done.stdout)["results"]
    except (ValueError, KeyError):
        return {"?": f"baseline failed: {done.stderr.strip().splitlines()[-1:]}"}
    return {r["code"]: r.get("severity") or "" for r in results if r["status"] in ("failed", "info")}


def judge_healthy(machine, tmp: Path, tree: Path | None, verbose: bool) -> tuple[bool, bool]:
    """(silent here, silent in the baseline) for one healthy machine, its facts collected once."""
    folder = tmp / ("healthy-" + machine.name)
    folder.mkdir()  # collect() writes its facts file there (a recorded machine builds no tree in it)
    recorded = collect(machine, folder)
    loud = sorted({f.code for f in check_recorded(recorded).findings()
                   if f.severity is not None and f.severity >= Severity.WARNING})
    old_loud = sorted(c for c, s in baseline_findings(tree, recorded).items() if s in LOUD) if tree else []
    if verbose and (loud or old_loud):
        print(f"healthy {machine.name}: loud here: {', '.join(loud) or 'none'}"
              + (f"; in the baseline: {', '.join(old_loud) or 'none'}" if tree is not None else ""))
    return not loud, not old_loud


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout"), help="only this split (default: both)")
    parser.add_argument("--category", help="only this category")
    parser.add_argument("--verbose", action="store_true", help="one line per report and per twin")
    parser.add_argument("--baseline", metavar="REF", help="judge the same facts with the checks of this commit too")
    parser.add_argument("--all-healthy", action="store_true",
                        help="judge every machine of tests/healthy/, not only the reports' twins")
    args = parser.parse_args(argv)
    chosen = [r for r in REPORTS if (args.split is None or r.split == args.split)
              and (args.category is None or r.category == args.category)]
    machines = {m.name: m for m in MACHINES}
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    twins: dict[str, tuple[bool, bool]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tree = export(args.baseline, Path(tmp) / "baseline") if args.baseline else None
        for report in chosen:
            folder = Path(tmp) / report.name
            folder.mkdir()
            recorded = collect(report.machine(), folder)
            hit = diagnosed(report, check_recorded(recorded))
            before = []
            if tree is not None:
                old = baseline_findings(tree, recorded)
                before = [c for c in report.expect if c in old and Severity.parse(old[c]) >= report.least]
            for key in ((report.split, report.category), (report.split, "all")):
                tally[key][0] += bool(hit)
                tally[key][1] += bool(before)
                tally[key][2] += 1
            if args.verbose:
                print(f"{report.split:7} {report.category:10} {'yes' if hit else 'NO ':3} {report.name}: "
                      f"{', '.join(hit) or 'expected ' + '/'.join(report.expect)}"
                      + (f"   (baseline: {', '.join(before) or 'no'})" if tree is not None else ""))
            if report.twin not in twins and report.twin in machines:
                twins[report.twin] = judge_healthy(machines[report.twin], Path(tmp), tree, args.verbose)
        if args.all_healthy:
            for twin in MACHINES:
                if twin.name not in twins:
                    twins[twin.name] = judge_healthy(twin, Path(tmp), tree, args.verbose)
    name = f"checks of {args.baseline}" if args.baseline else "no check"
    for (split, category), (hit, old, total) in sorted(tally.items()):
        print(f"{split:7} {category:10} diagnosed {hit} of {total}   (baseline, {name}: "
              f"{old if args.baseline else 0} of {total})")
    silent = sum(now for now, _ in twins.values())
    old_silent = sum(then for _, then in twins.values()) if args.baseline else len(twins)
    what = "machines of tests/healthy/" if args.all_healthy else "twins"
    print(f"healthy {what} silent: {silent} of {len(twins)}   (baseline, {name}: {old_silent} of {len(twins)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
