"""The twenty-seventh held-out measurement of `tfdoctor lint` (issue 39, item 4): seven repositories named with
"gradienttape" that nobody on the project had linted, chosen by the twenty-sixth set's written rule with another
name (one per owner, in the search index's file-count order, a copy of a repository chosen before passed over, and a
repository a fifth of whose files are near copies of code judged before passed over), aimed at eager training steps
(SRC107) and their input pipelines; scored exactly as the fifth (benchmarks/lint_heldout5.py: the default settings, and
`--select SRC102,SRC103,SRC113` with the defaults, per rule and per tier; each repository linted as `tfdoctor lint
DIR` lints it, each file for its nearest pins).

    python benchmarks/lint_heldout27.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout27.toml, commit a29aabf) was committed alone before the linter ran on
any of its repositories, and the linter measured (commit 1011526's tfdoctor/: the twenty-sixth set's rules, with
what a file shows of its release and of its switched-off rewrites read once per file; the default rule set
unchanged) was committed before it ran on them; the labels, one per finding with a one-line reason, are
benchmarks/lint_corpus/heldout27_labels.csv. Absent snapshots: the script says which and exits 0 without a figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout27")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
