"""benchmarks/lint_near_copies.py: an edited copy of a corpus file is found and measured, only among the corpora
judged before the set, and labels are counted with and without the near copies."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import lint_near_copies as near  # noqa: E402

TUTORIAL = """import tensorflow as tf
(x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
db = tf.data.Dataset.from_tensor_slices((x_train, y_train)).map(preprocess).shuffle(10000).batch(128)
model = tf.keras.Sequential([tf.keras.layers.Dense(256, activation='relu'), tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
for epoch in range(30):
    for step, (x, y) in enumerate(db):
        with tf.GradientTape() as tape:
            logits = model(tf.reshape(x, (-1, 28 * 28)))
            loss = tf.reduce_mean(tf.losses.categorical_crossentropy(tf.one_hot(y, depth=10), logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
# the same tutorial with two names changed and comments added: not the same blob, the same code
EDITED = ("# -*- coding: utf-8 -*-\n# MNIST, from the book\n" +
          TUTORIAL.replace("db", "train_db").replace("optimizer", "opt"))
OTHER = """import numpy as np
import pandas as pd
frame = pd.read_csv('prices.csv', parse_dates=['date'])
frame['ma20'] = frame['close'].rolling(20).mean()
print(np.corrcoef(frame['close'].dropna(), frame['ma20'].dropna()))
"""


def lines(text: str) -> list[str]:
    return near.code_lines(text)


def test_comment_lines_and_markdown_are_not_compared():
    assert near.code_lines("# a comment\nx = 1  # kept\n\n    y = 2\n") == ["x = 1  # kept", "y = 2"]
    notebook = json.dumps({"cells": [{"cell_type": "markdown", "source": ["import tensorflow as tf"]},
                                     {"cell_type": "code", "source": ["import keras\n", "# why\n", "m = 1"]}]})
    assert near.code_lines(notebook, notebook=True) == ["import keras", "m = 1"]
    assert near.code_lines("{not json", notebook=True) == ["{not json"]  # read as text, not a crash


def test_an_edited_copy_is_found_and_scored_high_and_unrelated_code_is_not():
    corpus = near.Corpus({"book/tf: ch03/mnist.py": lines(TUTORIAL), "fin/etf: prices.py": lines(OTHER)})
    other, ratio = corpus.nearest(lines(EDITED))
    assert other == "book/tf: ch03/mnist.py" and 0.8 <= ratio < 1.0
    assert corpus.nearest(lines(TUTORIAL)) == ("book/tf: ch03/mnist.py", 1.0)
    unrelated = "import torch\nnet = torch.nn.Linear(4, 2)\nloss = net(torch.zeros(1, 4)).sum()\n"
    assert corpus.nearest(lines(unrelated)) == (None, 0.0)


def test_only_the_corpora_judged_before_a_set_are_looked_in():
    corpus = near.Corpus({"later/set: train.py": lines(TUTORIAL), "book/tf: ch03/mnist.py": lines(OTHER)})
    assert corpus.nearest(lines(EDITED), among=frozenset({"book/tf"}))[0] != "later/set: train.py"
    assert corpus.nearest(lines(EDITED))[0] == "later/set: train.py"
    assert near.seen_before("heldout7") == ["manifest", "heldout", "heldout2", "heldout3", "heldout4", "heldout5",
                                            "heldout6"]
    assert near.seen_before("heldout2") == ["manifest", "heldout"]


def test_lines_in_too_many_files_do_not_make_candidates(monkeypatch):
    monkeypatch.setattr(near, "COMMONEST_LINE", 1)
    corpus = near.Corpus({"a/a: x.py": ["import tensorflow as tf"], "b/b: y.py": ["import tensorflow as tf"]})
    assert corpus.nearest(["import tensorflow as tf"]) == (None, 0.0)


def test_labels_are_counted_over_every_file_and_over_the_files_not_copied():
    labels = [
        {"repo": "o/a", "path": "copy.py", "rule": "SRC107", "tier": "shown", "label": "true"},
        {"repo": "o/a", "path": "copy.py", "rule": "SRC102", "tier": "shown", "label": "true"},  # not default
        {"repo": "o/a", "path": "own.py", "rule": "SRC107", "tier": "shown", "label": "false"},
        {"repo": "o/a", "path": "own.py", "rule": "SRC107", "tier": "unproven", "label": "true"},  # held back
    ]
    counts = near.split_labels(labels, {("o/a", "copy.py"): 0.93, ("o/a", "own.py"): 0.2}, 0.8, {"SRC107"})
    assert counts["all"]["default", "true"] == 1 and counts["all"]["default", "false"] == 1
    assert counts["own"]["default", "true"] == 0 and counts["own"]["default", "false"] == 1
    assert counts["all"]["SRC102/shown", "true"] == 1 and counts["own"]["SRC102/shown", "true"] == 0
    assert near.figure(counts["all"], "default") == "1 of 2 strict (50.0 %), 1 lenient (50.0 %)"
    assert near.figure(Counter(), "default") == "none"


@pytest.mark.parametrize("argv", [["heldout999"], ["manifest"], ["heldout21", "--threshold", "0"],
                                  ["heldout21", "--threshold", "1.5"],
                                  ["heldout21", "--write", "/nonexistent-folder/near.csv"]])
def test_an_unknown_set_or_a_threshold_outside_zero_to_one_is_exit_2(argv, capsys):
    assert near.main(argv) == 2
    assert capsys.readouterr().err.startswith("lint_near_copies: ")


def test_absent_snapshots_skip_without_a_figure(tmp_path, capsys):
    assert near.main(["heldout21", "--mirror", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("skipped: ")


def test_a_set_being_chosen_is_checked_file_by_file_without_labels(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(near, "CORPORA", tmp_path)
    (tmp_path / "heldout30.toml").write_text('[[repos]]\nrepo = "o/a"\ncommit = "%s"\nsubtrees = [""]\n' % ("0" * 40),
                                             encoding="utf-8")
    assert near.main(["heldout30"]) == 2  # a figure needs its labels
    assert "heldout30" in capsys.readouterr().err
    assert near.main(["heldout30", "--every-file", "--mirror", str(tmp_path / "mirror")]) == 0
    assert capsys.readouterr().out.startswith("skipped: ")
