"""Issue 25 item 6 and issue 24 item 4: notebooks read as IPython reads them, TFDS split idioms that
crashed four rules, SARIF regions past long outputs, and linear work on hostile cells."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.lint_support import rules

from tfdoctor.cli import main
from tfdoctor.lint import ipython_syntax
from tfdoctor.lint.notebook import notebook_source
from tfdoctor.lint.runner import lint_paths

# Cells IPython runs (and a few it rejects), each a decision the scanner must take as IPython does.
CELLS = [
    "    x = 1\n    y = 2\n",  # a pasted block: IPython strips the common indentation
    "f(a,\n%b)\n",  # `%` inside brackets is not a magic
    "x = (a\n% b)\n",  # ... it is the modulo operator on a continuation line
    "f(a,  # what?\n  b)\n",  # a `?` in a comment is not help
    "%%time\nfor i in range(3):\n    print(i)\n",
    "%%bash\nls -la\n",
    "x?\n", "x??\n", "np.zeros?\n", "%magic?\n", "print(x)?\n", "foo bar?\nx = 1\n!ls\n", "??\n",
    "files = !ls\n", "files = %who_ls\n", "a = b = !ls\n", "a[0] = !ls\n", "x = %%foo\n",
    "!pip install x \\\n  y\nimport tensorflow as tf\n",
    "if C:\n    !pip x\nelse:\n    pass\n",
    "%matplotlib inline\nimport os\n", "%env A=1\n", "!!ls\n", "/print 1 2\n", ",print a b\n",
    "print('what?')\n", "a = 1 # why?\n", "x = 5 % 3\n", "x != 1\n", "lambda x=%who: x\n",
    "%timeit f(x)\nz = 1\n", "%%timeit -n 3\n%load_ext foo\nx = 1\n",
    ">>> x = 1\n>>> y = 2\n", "In [1]: x = 1\n   ...: y = 2\n",
    "\n\n   \n  a = 1\n  if a:\n      b = 2\n",
    "s = '''\n!not magic\n'''\n", "x = '''\na?\n'''\n", "d = {\n 'a': 1,\n}\n!echo hi\n",
    "x = 1 \\\n  + 2\n!ls\n", "for i in range(3):\n    %time f(i)\n", "def f():\n    return 1\nf?\n",
    "y = [1,\n2]?\n",
]


@pytest.mark.parametrize("cell", CELLS)
def test_the_scanner_takes_ipythons_decisions_on_the_same_cells(cell):
    inputtransformer2 = pytest.importorskip("IPython.core.inputtransformer2")
    lines = cell.splitlines()
    assert ipython_syntax.transform_cell(lines) == \
        ipython_syntax.transform_cell(lines, ipython_syntax._IPythonCell(inputtransformer2))


def test_what_ipython_strips_or_runs_becomes_python_line_for_line():
    assert ipython_syntax.transform_cell(["    x = 1", "    y = 2"]) == [("x = 1", 4), ("y = 2", 4)]
    assert ipython_syntax.transform_cell(["files = !ls", "if C:", "    !pip install a \\", "      b"]) == [
        ("files = None", 0), ("if C:", 0), ("    pass", 0), ("", 0)]
    assert ipython_syntax.transform_cell(["%%time", "for i in r:", "    step()"]) == [
        ("", 0), ("for i in r:", 0), ("    step()", 0)]
    assert ipython_syntax.transform_cell(["%%bash", "ls"]) == [("", 0), ("", 0)]


def nb(*sources: str, outputs: int = 0) -> str:
    """An nbformat-4 notebook as Jupyter writes it: keys sorted (outputs before source), one line per string."""
    output = [{"name": "stdout", "output_type": "stream", "text": [f"Epoch {i}\n" for i in range(outputs)]}]
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": output if outputs else [],
              "source": s.splitlines(keepends=True)} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1,
                      sort_keys=True) + "\n"


PIPELINE = ("ds = tf.data.TFRecordDataset(files)\n"
            "ds = ds.map(tf.io.parse_single_example)\n")
TRAIN = "model.fit(ds.prefetch(2))\n"  # a later cell trains on it: the map is judged there


@pytest.fixture(params=["ipython", "scanner"])
def reader(request, monkeypatch):
    """Each notebook test runs with IPython's transformers and with the scanner."""
    if request.param == "ipython":
        pytest.importorskip("IPython.core.inputtransformer2")
    else:
        monkeypatch.setattr(ipython_syntax, "cell_transformer", lambda: ipython_syntax.transform_cell)
    return request.param


def lint_notebook(tmp_path: Path, text: str):
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    return lint_paths([tmp_path / "nb.ipynb"], rules())


@pytest.mark.parametrize("cell", [
    "  " + PIPELINE.replace("\n", "\n  ", 1),  # leading indentation IPython strips
    "size = (256\n% 7)\n" + PIPELINE,  # a continuation line inside brackets starting with %
    "files = tf.io.gfile.glob(  # which ones?\n    'x')\n" + PIPELINE,  # a comment ending in ? in brackets
])
def test_cells_ipython_runs_get_the_rules_not_src001(tmp_path, reader, cell):
    report = lint_notebook(tmp_path, nb("import tensorflow as tf\n", cell, TRAIN))
    assert [f.code for f in report.findings] == ["SRC103"]
    assert report.findings[0].cell == 2


def test_an_indented_cell_reports_the_columns_of_its_source(tmp_path, reader):
    cell = "    ds = tf.data.TFRecordDataset(files)\n    ds = ds.map(tf.io.parse_single_example)\n"
    report = lint_notebook(tmp_path, nb("import tensorflow as tf\n", cell, TRAIN))
    (finding,) = report.findings
    assert (finding.line, finding.column) == (2, 5 + len("ds = ds.") + 1 - 1)
    assert cell.splitlines()[1][finding.column - 1:].startswith("map(")


def test_a_time_cell_keeps_its_training_loop(tmp_path, reader):
    cell = ("%%time\nfor x, y in data:\n    with tf.GradientTape() as tape:\n        loss = model(x)\n"
            "    opt.apply_gradients(zip(tape.gradient(loss, v), v))\n")
    report = lint_notebook(tmp_path, nb("import tensorflow as tf\n", cell))
    assert [(f.code, f.cell, f.line) for f in report.findings] == [("SRC107", 2, 5)]


def test_sarif_regions_point_at_the_source_past_long_outputs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = nb("import tensorflow as tf\n", "print(1)\n", PIPELINE, TRAIN, outputs=400)
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["lint", "--select", "SRC102,SRC103", "--format", "sarif", "nb.ipynb"])
    (result,) = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert text.splitlines()[line - 1].strip() == '"ds = ds.map(tf.io.parse_single_example)\\n"'


def test_a_traceback_quoting_the_code_is_not_taken_for_the_source(tmp_path):
    text = nb("import tensorflow as tf\n", PIPELINE)
    document = json.loads(text)
    document["cells"][1]["outputs"] = [{"output_type": "error", "ename": "E", "evalue": "",
                                        "traceback": ["ds = ds.map(tf.io.parse_single_example)\n"]}]
    document["cells"][1]["source"] = ["x = 1\n", *document["cells"][1]["source"]]
    text = json.dumps(document, indent=1, sort_keys=True)
    _, where = notebook_source(text)
    raw = text.splitlines()[where[-1].raw_line - 1].strip()
    assert raw == '"ds = ds.map(tf.io.parse_single_example)\\n"'


TFDS = """import tensorflow as tf
import tensorflow_datasets as tfds
splits = tfds.load("mnist", split=["train", "test"], as_supervised=True)
(train, val) = splits
train = train.map(lambda x, y: (tf.image.resize(x, [64, 64]), y))
x, y = tfds.load("mnist", split="train", batch_size=-1, as_supervised=True)[0]
model.fit(train.batch(32), validation_data=val.batch(32))
"""


def test_tfds_split_idioms_are_followed_not_crashed_on(tmp_path):
    (tmp_path / "t.py").write_text(TFDS, encoding="utf-8")
    report = lint_paths([tmp_path / "t.py"], rules())
    assert report.crashes == []
    # train maps a resize after TFDS's own prefetch: SRC102 and SRC103; val only batches what TFDS already
    # prefetched (lint_prefetching_loaders): silent.
    assert [(f.code, f.line, f.column) for f in report.findings] == [("SRC103", 5, 15), ("SRC102", 7, 11)]


@pytest.mark.parametrize("line", [
    lambda n: " " * n + "x = 1",  # issue 24: 3,000 leading spaces took 23-42 s
    lambda n: " " * n + "?",
    lambda n: "a" * n + " ?",
    lambda n: "x = " + "(" * n,
    lambda n: "%" * n,
    lambda n: ">>> " + " " * n,
    lambda n: "In [1]: " + "." * n,
])
def test_hostile_cells_cost_linear_time(reader, line):
    def cost(n: int) -> float:
        text = nb("import tensorflow as tf\n", line(n) + "\ny = 1\n")
        start = time.process_time()
        notebook_source(text)
        return time.process_time() - start

    small, large = min(cost(3_000) for _ in range(3)), min(cost(60_000) for _ in range(3))
    assert large < 2.0  # quadratic work on 60,000 characters takes minutes
    assert large < max(small, 0.002) * 20 * 3  # 20x the input: linear work is ~20x, quadratic 400x


def test_tfds_splits_bound_with_info_then_unpacked_are_followed(tmp_path):
    text = ("import tensorflow as tf\nimport tensorflow_datasets as tfds\n"
            "splits, info = tfds.load('cats_vs_dogs', split=['train[:80%]', 'train[80%:]'], with_info=True,\n"
            "                         as_supervised=True)\n"
            "(train_examples, validation_examples) = splits\n"
            "train = train_examples.map(lambda x, y: (tf.image.resize(x, [224, 224]), y)).batch(32).prefetch(1)\n"
            "model.fit(train)\n")
    (tmp_path / "t.py").write_text(text, encoding="utf-8")
    report = lint_paths([tmp_path / "t.py"], rules())
    assert report.crashes == []
    assert [(f.code, f.line) for f in report.findings] == [("SRC103", 6)]
