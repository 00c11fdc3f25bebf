"""How many real reports tfdoctor diagnoses, per split and category (tests/reports/, issues 35 and 36),
and how many of their healthy twins stay silent. The held-out split's figure is the one docs/real-reports.md
cites; the dev split is what the checks were written against, a development figure only.

    python benchmarks/real_reports.py [--split heldout] [--category containers] [--verbose]

The baseline printed beside each figure is the same corpus judged with no check at all (every report
undiagnosed, every twin silent): a report counts only through a code it was labelled with before tfdoctor
ran on it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from healthy import MACHINES, check_recorded, collect  # noqa: E402
from reports import REPORTS, diagnosed, examine  # noqa: E402

from tfdoctor.model import Severity  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout"), help="only this split (default: both)")
    parser.add_argument("--category", help="only this category")
    parser.add_argument("--verbose", action="store_true", help="one line per report and per twin")
    args = parser.parse_args(argv)
    chosen = [r for r in REPORTS if (args.split is None or r.split == args.split)
              and (args.category is None or r.category == args.category)]
    machines = {m.name: m for m in MACHINES}
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    twins: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for report in chosen:
            result = examine(report, Path(tmp) / report.name)
            hit = diagnosed(report, result)
            for key in ((report.split, report.category), (report.split, "all")):
                tally[key][0] += bool(hit)
                tally[key][1] += 1
            if args.verbose:
                print(f"{report.split:7} {report.category:10} {'yes' if hit else 'NO ':3} {report.name}: "
                      f"{', '.join(hit) or 'expected ' + '/'.join(report.expect)}")
            if report.twin not in twins and report.twin in machines:
                twin = machines[report.twin]
                folder = Path(tmp) / ("twin-" + twin.name)
                folder.mkdir()  # collect() writes its facts file there (a recorded twin builds no tree in it)
                loud = [f.code for f in check_recorded(collect(twin, folder)).findings()
                        if f.severity is not None and f.severity >= Severity.WARNING]
                twins[report.twin] = not loud
                if args.verbose and loud:
                    print(f"twin    {twin.name}: not silent: {', '.join(sorted(set(loud)))}")
    for (split, category), (hit, total) in sorted(tally.items()):
        print(f"{split:7} {category:10} diagnosed {hit} of {total}   (baseline, no check: 0 of {total})")
    print(f"healthy twins silent: {sum(twins.values())} of {len(twins)}   (baseline: {len(twins)} of {len(twins)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
