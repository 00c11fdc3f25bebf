"""The sixth held-out measurement of `tfdoctor lint` (issue 39, item 4): sixteen more whole repositories
nobody on the project had linted, chosen after the fifth set was judged and its fixes made, scored exactly as
the fifth (benchmarks/lint_heldout5.py: the default settings, and `--select SRC102,SRC103,SRC113` with the
defaults, per rule and per tier).

    python benchmarks/lint_heldout6.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout6.toml, commit 9d6662e) was committed alone before the linter ran
on any of its repositories; the labels, one per finding with a one-line reason, are
benchmarks/lint_corpus/heldout6_labels.csv. Absent snapshots: the script says which and exits 0 without a
figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout6")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
