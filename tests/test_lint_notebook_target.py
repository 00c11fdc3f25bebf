"""A notebook that says what TensorFlow it runs on is linted for that release (tfdoctor/lint/target.py,
for_notebook; tfdoctor/lint/notebook.py, environment).

Found on the recall corpus (issue 39): google-research/simclr pins tensorflow==1.15.4 at its top for its
TensorFlow 1 library, and its Colab notebooks (TensorFlow 2 code, saved by Colab, run on Colab's TensorFlow)
were judged as if they ran on 1.15: a stateless map became a warning that is false wherever they run. A
notebook's own `!pip install tensorflow==X` and Colab's `%tensorflow_version 1.x` name its release better
than the project's pins; a notebook saved by Colab runs Colab's release of the day, which no pin names."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tfdoctor.cli import main
from tfdoctor.lint.notebook import Environment, environment, read_notebook
from tfdoctor.lint.target import OPEN, Target, for_notebook

STATELESS = ("import tensorflow as tf\n"
             "def decode(path):\n    return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(path)), [224, 224])\n"
             "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n")
PROJECT = Target((1, 15), "pinned: tensorflow==1.15.4 in requirements.txt", (1, 15), from_project=True)


def notebook(*cells: str, colab: bool = False) -> str:
    """An nbformat-4 notebook of code cells, as Jupyter (or, with `colab`, Colab) saves it."""
    metadata = {"colab": {"name": "finetuning.ipynb", "provenance": []}, "accelerator": "GPU"} if colab else {}
    document = {"cells": [{"cell_type": "code", "metadata": {}, "source": source.splitlines(keepends=True),
                           "outputs": [], "execution_count": None} for source in cells],
                "metadata": {**metadata, "kernelspec": {"name": "python3", "display_name": "Python 3"}},
                "nbformat": 4, "nbformat_minor": 0}
    return json.dumps(document, indent=1) + "\n"


def env(*cells: str, colab: bool = False) -> Environment:
    return environment(read_notebook(notebook(*cells, colab=colab)))


def span(target: Target | None) -> tuple[tuple[int, int], tuple[int, int] | None] | None:
    return None if target is None else (target.release, target.newest)


# --- what a notebook's cells say -------------------------------------------------------------------------


@pytest.mark.parametrize(("cell", "expected"), [
    ("!pip install -q tensorflow==2.3.0\n", ((2, 3), (2, 3))),
    ("%pip install --upgrade 'tensorflow-gpu>=2.1,<2.3' tensorflow-datasets\n", ((2, 1), (2, 2))),
    ("!python3 -m pip install -U tensorflow==2.4.1 && echo done\n", ((2, 4), (2, 4))),
    ("!conda install -y -c conda-forge tensorflow=2.4\n", ((2, 4), (2, 4))),
    ("%%bash\npip install tensorflow-gpu==1.15\n", ((1, 15), (1, 15))),
    ("if IN_COLAB:\n    !pip install tensorflow_gpu==2.0.0-beta1\n", ((2, 0), (2, 0))),
    ("!pip install tensorflow-cpu>=2.19\n", ((2, 19), OPEN)),
    ("%tensorflow_version 1.x\nimport tensorflow as tf\n", ((1, 15), None)),
    ("% tensorflow_version 1.14\n", ((1, 15), None)),  # Colab read any 1.* as 1.x
])
def test_what_the_notebook_installs_or_selects_decides(cell: str, expected) -> None:
    for colab in (False, True):  # saved by Colab or not, its own cells decide
        assert span(for_notebook(env(cell, "import tensorflow as tf\n", colab=colab), PROJECT)) == expected
        assert span(for_notebook(env(cell, colab=colab), None)) == expected  # with no pins as well


def test_where_it_learnt_the_release_is_named() -> None:
    target = for_notebook(env("import os\n", "!pip install -q tensorflow==2.3.0 keras==2.4\n"), PROJECT)
    assert target is not None and target.describe() == (
        "TensorFlow 2.3 (installed by the notebook: tensorflow==2.3.0 in cell 2)")
    # shown as parsed, never as the cell wrote it: the name made canonical
    target = for_notebook(env("!pip install Tensorflow_GPU==2.2.*\n"), None)
    assert target is not None and target.describe() == (
        "TensorFlow 2.2 (installed by the notebook: tensorflow-gpu==2.2.* in cell 1)")
    # a TensorFlow word holding a terminal escape is no release: unknown, and never printed
    assert for_notebook(env("!pip install 'tensorflow-gpu==2.3.0\x1b[2J' numpy\n"), PROJECT) is None
    magic = for_notebook(env("%tensorflow_version 1.x\n"), None)
    assert magic is not None and magic.describe() == "TensorFlow 1.15 (%tensorflow_version 1.x in cell 1)"


@pytest.mark.parametrize("cell", [
    "!pip install -U tensorflow\n",  # the newest of the day it ran
    "!pip install tf-nightly\n",
    "!pip install tensorflow==2.3.0\n!pip install --upgrade tensorflow\n",  # pinned, then upgraded
    "%tensorflow_version 2.x\n",  # whichever TensorFlow 2 Colab shipped that day
    # TensorFlow of a release not written here
    "!pip install tensorflow==$TF_VERSION\n",
    "!pip install -q tensorflow-gpu=={tf_version}\n",
    "!pip install tensorflow @ https://example.org/tensorflow-2.3.0-cp38-linux_x86_64.whl\n",
    "!pip install 'tensorflow===2.4abc'\n",
])
def test_what_names_no_release_leaves_it_unknown_whatever_the_project_pins(cell: str) -> None:
    assert for_notebook(env(cell), PROJECT) is None


def test_a_notebook_saved_by_colab_runs_colabs_tensorflow_not_the_projects() -> None:
    assert for_notebook(env("import tensorflow as tf\n", colab=True), PROJECT) is None
    # installing the project's own requirements brings its pins back
    assert for_notebook(env("!pip install -q -r requirements.txt\n", colab=True), PROJECT) == PROJECT
    assert for_notebook(env("!pip install --requirement=requirements.txt\n", colab=True), PROJECT) == PROJECT


@pytest.mark.parametrize("cell", [
    "import tensorflow as tf\n",
    "!pip install -q tensorflow-datasets==4.9 tensorflow_hub tensorflow-addons==0.15\n",  # not TensorFlow
    "!pip install -r requirements.txt\n",
    "# !pip install tensorflow==2.3.0\n",  # a comment
    "print('pip install tensorflow==2.3.0')\n",  # not a shell line
    "!pip install $TF_PACKAGE {tf_version}\n",  # values not written here
    "!pip download tensorflow==2.3.0\n",  # not an install
])
def test_healthy_twins_keep_the_projects_pins(cell: str) -> None:
    assert for_notebook(env(cell), PROJECT) == PROJECT
    assert for_notebook(env(cell), None) is None


def test_a_release_the_user_names_decides_every_notebook() -> None:
    named = Target((2, 21), "--target-tensorflow")
    for cell in ("!pip install tensorflow==2.3.0\n", "%tensorflow_version 1.x\n", "import tensorflow\n"):
        assert for_notebook(env(cell, colab=True), named) == named


@pytest.mark.parametrize(("cell", "expected"), [
    ("!pip install " + "-" * 100_000 + "\n", PROJECT),  # options only: installs nothing it can name
    ("!pip install " + "'" * 100_000 + "\n", PROJECT),  # unbalanced quotes: split on whitespace
    ("!pip install " + "tensorflow=" * 20_000 + "\n", None),  # TensorFlow, of no readable release
    ("%tensorflow_version " + " " * 100_000 + "1.x\n", PROJECT),  # cut at 500 characters: no value left
    ("!" + " " * 100_000 + "pip install tensorflow==2.3\n", PROJECT),
])
def test_a_hostile_install_line_is_read_bounded(cell: str, expected) -> None:
    """Lines are cut at 500 characters before any pattern runs, and every pattern is anchored with bounded
    repeats: a backtracking one would take minutes on these, so the generous bound below still catches it."""
    started = time.perf_counter()
    assert for_notebook(env(cell), PROJECT) == expected
    assert time.perf_counter() - started < 5.0


def test_a_cell_that_is_not_text_is_still_the_notebooks_error() -> None:
    from tfdoctor.lint.notebook import NotebookError

    document = json.loads(notebook("x = 1\n"))
    document["cells"][0]["source"] = 7
    with pytest.raises(NotebookError):
        read_notebook(json.dumps(document))


# --- the command line ------------------------------------------------------------------------------------


def lint(capsys, monkeypatch, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "requirements.txt").write_text("tensorflow==1.15.4\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--select", "SRC103", *args, "."])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_a_colab_notebook_in_a_pinned_project_is_not_judged_for_the_pin(capsys, monkeypatch, tmp_path) -> None:
    (tmp_path / "colab.ipynb").write_text(notebook(STATELESS, colab=True), encoding="utf-8")
    code, out, err = lint(capsys, monkeypatch, tmp_path)
    assert code == 0 and out.startswith("colab.ipynb:cell 1:4:") and "(info: TensorFlow 2.5 and later" in out
    assert err == ("tfdoctor lint: 1 file(s): 1 info; as on TensorFlow 1.15 (pinned: tensorflow==1.15.4 in "
                   "requirements.txt); 1 file(s) as on their own TensorFlow (their folder's pins, what a notebook "
                   "installs, or Colab's)\n")
    # its healthy twin, saved by Jupyter beside the pins, is judged for them: a warning, as before
    (tmp_path / "colab.ipynb").write_text(notebook(STATELESS), encoding="utf-8")
    code, out, err = lint(capsys, monkeypatch, tmp_path)
    assert "(info" not in out and out.startswith("colab.ipynb:cell 1:4:") and "file(s) as on their own" not in err
    assert err.startswith("tfdoctor lint: 1 file(s): 1 warning; as on TensorFlow 1.15")


def test_a_notebook_that_installs_its_release_is_judged_for_it(capsys, monkeypatch, tmp_path) -> None:
    (tmp_path / "old.ipynb").write_text(notebook("!pip install -q tensorflow==2.3.0\n", STATELESS, colab=True),
                                        encoding="utf-8")
    (tmp_path / "new.ipynb").write_text(notebook("!pip install -q tensorflow==2.15.0\n", STATELESS, colab=True),
                                        encoding="utf-8")
    code, out, err = lint(capsys, monkeypatch, tmp_path, "--format", "json")
    [finding] = json.loads(out)["findings"]
    assert finding["path"] == "old.ipynb" and finding["severity"] == "warning"
    assert finding["grounds"]["runs-one-at-a-time"] == (
        "TensorFlow 2.3 (installed by the notebook: tensorflow==2.3.0 in cell 1): tf.data parallelizes a "
        "stateless map itself only from 2.5")
    # AUTOTUNE as the release it installs spells it (tf.data.AUTOTUNE is 2.4 and later)
    assert finding["fix"]["title"] == "Pass num_parallel_calls=tf.data.experimental.AUTOTUNE"
    code, out, err = lint(capsys, monkeypatch, tmp_path)
    assert "; 2 file(s) as on their own TensorFlow" in err and out.startswith("old.ipynb:cell 2:4:")
    # the flag decides every file: 2.21 parallelizes the stateless map of both
    code, out, err = lint(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.21")
    assert code == 0 and out == "" and "file(s) as on their own" not in err
