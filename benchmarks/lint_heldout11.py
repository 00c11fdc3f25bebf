"""The eleventh held-out measurement of `tfdoctor lint` (issue 39, item 4): eight repositories of
TensorFlow code nobody on the project had linted, libraries among them, shaped like the outside measurement
issue 39 reports and chosen by a written rule (names holding "tensorflow-", in the search index's file-count order),
scored exactly as the fifth (benchmarks/lint_heldout5.py: the default settings, and `--select
SRC102,SRC103,SRC113` with the defaults, per rule and per tier).

    python benchmarks/lint_heldout11.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout11.toml, commit dda6d1b) was committed alone before the linter ran
on any of its repositories, and the linter measured (commit 58c8c68, stop 45's) was committed before it ran on
them; the labels, one per finding with a one-line reason, are benchmarks/lint_corpus/heldout11_labels.csv.
Absent snapshots: the script says which and exits 0 without a figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout11")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
