"""The twelfth held-out measurement of `tfdoctor lint` (issue 39, item 4): eight repositories of TensorFlow code
nobody on the project had linted, chosen by the tenth set's written rule with another name (names holding
"tensorflow_", in the search index's file-count order), the first measured with the release evidence (tf.data's
own map parallelization and prefetch by release) and judged with it in mind; scored exactly as the fifth
(benchmarks/lint_heldout5.py: the default settings, and `--select SRC102,SRC103,SRC113` with the defaults, per
rule and per tier; the release not known, as `tfdoctor lint DIR` runs without `--target-tensorflow`).

    python benchmarks/lint_heldout12.py [--show] [--mirror /work/.mirror] [--list CSV]

The manifest (benchmarks/lint_corpus/heldout12.toml, commit cc05b14) was committed alone before the linter ran
on any of its repositories, and the linter measured (commit 80fd26e) was committed before it ran on them; the
labels, one per finding with a one-line reason, are benchmarks/lint_corpus/heldout12_labels.csv. Absent
snapshots: the script says which and exits 0 without a figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_heldout5 import HeldOutSet

SET = HeldOutSet("heldout12")
MANIFEST, LABELS, main = SET.manifest, SET.labels, SET.main

if __name__ == "__main__":
    raise SystemExit(main())
