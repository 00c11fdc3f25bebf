"""The thirty-seventh held-out measurement of `tfdoctor lint` (issue 39, item 4): eight repositories named with
"tensorflow2-" (TensorFlow 2 tutorials, books' code and projects named after the release, one of them TensorFlow 1
eager code) that nobody on the project had linted, chosen by the thirty-sixth set's written rule with
another name (one per owner and one per project, in the search index's file-count order, a copy of a repository
chosen before passed over, and a repository a fifth of whose files are near copies of code judged before passed
over); scored exactly as the fifth (benchmarks/lint_heldout5.py: the default settings, and `--select
SRC102,SRC103,SRC113` with the defaults, per rule and per tier; each repository linted as `tfdoctor lint DIR` lints it,
each file for its nearest pins).

    python benchmarks/lint_heldout37.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout37.toml, commit 5c7de9b) was committed alone before the linter ran on
any of its repositories, and the linter measured (commit ff34ab3's tfdoctor/: the thirty-sixth set's, 191ab53; the
default rule set unchanged) was committed before it ran on them; the labels, one per finding with a one-line reason,
are benchmarks/lint_corpus/heldout37_labels.csv. Absent snapshots: the script says which and exits 0 without a figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout37")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
