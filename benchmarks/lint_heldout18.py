"""The eighteenth held-out measurement of `tfdoctor lint` (issue 39, item 4): eight repositories of tf.data code
nobody on the project had linted, chosen by the seventeenth set's written rule with another name (names holding
"tfdata", one per owner, in the search index's file-count order, a copy of a repository chosen before passed
over), for the input-pipeline rules' shown tier, on which the sixteenth and seventeenth sets gave no evidence;
scored exactly as the fifth (benchmarks/lint_heldout5.py: the default settings, and
`--select SRC102,SRC103,SRC113` with the defaults, per rule and per tier; each repository linted as
`tfdoctor lint DIR` lints it, each file for its nearest pins).

    python benchmarks/lint_heldout18.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout18.toml, commit 7f9e952) was committed alone before the linter ran
on any of its repositories, and the linter measured (commit 6ecb370, the tfdoctor/ of that commit) was
committed before it ran on them; the labels, one per finding with a one-line reason, are
benchmarks/lint_corpus/heldout18_labels.csv. Absent snapshots: the script says which and exits 0 without a
figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout18")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
