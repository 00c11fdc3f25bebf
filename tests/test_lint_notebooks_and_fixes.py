"""Issue 13: notebooks, `--fix` / `--diff`, test files and `[tool.tfdoctor.lint]`, end to end."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jsonschema
import pytest
from support.lint_support import FIXTURES

from tfdoctor.cli import main

SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def notebook(*cells: tuple[str, str]) -> str:
    """An nbformat-4 notebook as Jupyter writes it: one JSON string per source line, indented."""
    document = {"cells": [{"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
                           **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                          for kind, source in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


NOTEBOOK = notebook(
    ("markdown", "# Training\n"),
    ("code", "!pip install -q tensorflow\n%matplotlib inline\nimport tensorflow as tf\n"),
    ("code", "%%time\nthis is not python\n"),
    ("code", "try:\n    import google.colab\n    !pip install x \\\n        y\nexcept ImportError:\n    pass\n"
             "ds = tf.data.TFRecordDataset(files)\nds = ds.map(tf.io.parse_single_example)\nmodel.fit(ds)\n"),
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_notebook_code_cells_are_linted_with_cell_and_line_locations(workdir, capsys):
    (workdir / "train.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    code, out, err = run(capsys, "lint", "--select", "SRC102,SRC103,SRC107", "--target-tensorflow", "2.4", ".")
    assert code == 0
    assert out.splitlines() == [
        "train.ipynb:cell 4:8:9: SRC103 map-without-parallel-calls Dataset.map() without num_parallel_calls "
        "processes one element at a time",
        "train.ipynb:cell 4:9:11: SRC102 dataset-without-prefetch tf.data pipeline is consumed by fit() without "
        ".prefetch(): input preparation and training steps take turns instead of overlapping",
    ]
    assert err == "tfdoctor lint: 1 file(s): 2 warning; as on TensorFlow 2.4 (--target-tensorflow)\n"


def test_notebook_sarif_points_at_the_json_line_and_validates(workdir, capsys):
    (workdir / "train.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    _, out, _ = run(capsys, "lint", "--select", "SRC102,SRC103", "--format", "sarif", "train.ipynb")
    sarif = json.loads(out)
    jsonschema.Draft7Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(sarif)
    result = sarif["runs"][0]["results"][1]
    raw = NOTEBOOK.splitlines()[result["locations"][0]["physicalLocation"]["region"]["startLine"] - 1]
    assert raw.strip() == '"model.fit(ds)\\n"'
    assert result["properties"]["cell"] == 4 and result["properties"]["cellLine"] == 9
    assert "fixes" not in result  # edits count lines of the joined cells: not offered for notebooks


def test_a_notebook_that_is_not_json_is_src002_never_silence(workdir, capsys):
    (workdir / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    code, out, _ = run(capsys, "lint", "broken.ipynb")  # named: always read as a notebook
    assert code == 1  # SRC002 is an error
    assert out == ("broken.ipynb:1:1: SRC002 unreadable-file not a valid notebook: invalid JSON at line 1: "
                   "Expecting value\n")
    # Found by walking a folder (issue 39, item 7): reported when it holds code a rule could fire on …
    (workdir / "broken.ipynb").write_text('{"cells": [{"source": ["import tensorflow as tf\\n", '
                                          '"with tf.GradientTape() as tape:", "opt.apply_gradients(g)"',
                                          encoding="utf-8")
    code, out, _ = run(capsys, "lint", ".")
    assert code == 1 and out.startswith("broken.ipynb:1:1: SRC002 unreadable-file not a valid notebook: invalid JSON")
    # … and not read as a notebook when nothing in its bytes could become a finding.
    (workdir / "broken.ipynb").write_text('{"cells": [{"source": ["import numpy as np"', encoding="utf-8")
    assert run(capsys, "lint", ".")[:2] == (0, "")


def test_syntax_error_in_a_cell_is_reported_at_its_cell(workdir, capsys):
    (workdir / "nb.ipynb").write_text(notebook(("code", "x = 1\n"), ("code", "def f(:\n")), encoding="utf-8")
    _, out, _ = run(capsys, "lint", "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 2:1:")
    assert "SRC001 syntax-error" in out


# --- --fix / --diff --------------------------------------------------------------------------------


def test_diff_shows_the_safe_fixes_and_changes_nothing(workdir, capsys):
    text = (FIXTURES / "keras_fit_bad.py").read_text(encoding="utf-8")
    (workdir / "train.py").write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "lint", "--select", "SRC102,SRC103", "--diff", "train.py")
    assert code == 1  # there is something to fix (as ruff --diff)
    assert (workdir / "train.py").read_text(encoding="utf-8") == text
    changed = [line for line in out.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == [
        "-    train = train.shuffle(10_000).map(augment)  # expect: SRC103",
        "+    train = train.shuffle(10_000).map(augment, num_parallel_calls=tf.data.AUTOTUNE)  # expect: SRC103",
        "-    model.fit(train, epochs=args.epochs, validation_data=test)  # expect: SRC102 (test: in memory, no map)",
        "+    model.fit(train.prefetch(tf.data.AUTOTUNE), epochs=args.epochs, validation_data=test)  "
        "# expect: SRC102 (test: in memory, no map)",
    ]
    assert err == "tfdoctor lint: 2 fix(es) in 1 file(s) would be applied\n"


def test_fix_applies_safe_edits_then_reports_only_what_is_left(workdir, capsys):
    (workdir / "train.py").write_text((FIXTURES / "keras_fit_bad.py").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run(capsys, "lint", "--preview", "--fix", "train.py")
    assert code == 0
    fixed = (workdir / "train.py").read_text(encoding="utf-8")
    ast.parse(fixed)
    codes = [line.split()[1] for line in out.splitlines()]
    assert "SRC102" not in codes and "SRC103" not in codes
    assert sorted(set(codes)) == ["SRC101", "SRC109", "SRC111", "SRC112", "SRC113"]  # unsafe or manual: left
    assert "fixed 2 finding(s) in 1 file(s)" in err
    # Nothing resizes a layer: the model's outputs are the same.
    assert 'layers.Dense(NUM_CLASSES, activation="softmax")' in fixed and "layers.Dense(HIDDEN" in fixed


def test_unsafe_fixes_apply_the_unsafe_edits_too(workdir, capsys):
    (workdir / "train.py").write_text((FIXTURES / "keras_fit_bad.py").read_text(encoding="utf-8"), encoding="utf-8")
    run(capsys, "lint", "--preview", "--fix", "--unsafe-fixes", "train.py")
    fixed = (workdir / "train.py").read_text(encoding="utf-8")
    ast.parse(fixed)
    assert 'layers.Conv2D(64, 3, padding="same", use_bias=False, data_format="channels_first")' in fixed
    assert 'layers.Dense(NUM_CLASSES, activation="softmax", dtype="float32")' in fixed
    _, out, _ = run(capsys, "lint", "--preview", "train.py")
    # Left: manual fixes. The layout edit (SRC101) would change what the model computes on the same
    # input, so it is shown but never applied; SRC112 resizes nothing.
    assert sorted({line.split()[1] for line in out.splitlines()}) == ["SRC101", "SRC112", "SRC113"]


def test_fix_and_diff_together_are_a_usage_error(workdir, capsys):
    (workdir / "a.py").write_text("x = 1\n", encoding="utf-8")
    code, _, err = run(capsys, "lint", "--fix", "--diff", "a.py")
    assert code == 2 and "choose one" in err


# --- test files and [tool.tfdoctor.lint] -----------------------------------------------------------

BAD = "import tensorflow as tf\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"


@pytest.fixture
def project(workdir: Path) -> Path:
    for name in ("train.py", "test_train.py", "train_test.py", "tests/helpers.py"):
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(BAD, encoding="utf-8")
    return workdir


def linted_files(out: str) -> list[str]:
    return sorted({line.split(":")[0] for line in out.splitlines()})


def test_test_files_are_skipped_in_directories_unless_asked(project, capsys):
    sel = ("--select", "SRC113")  # the finding BAD makes; SRC113 is a preview rule
    assert linted_files(run(capsys, "lint", *sel, ".")[1]) == ["train.py"]
    assert linted_files(run(capsys, "lint", *sel, "--include-tests", ".")[1]) == [
        "test_train.py", "tests/helpers.py", "train.py", "train_test.py"]
    assert linted_files(run(capsys, "lint", *sel, "test_train.py")[1]) == ["test_train.py"]  # named: always


def test_include_tests_and_preview_from_pyproject(project, capsys):
    (project / "pyproject.toml").write_text("[tool.tfdoctor.lint]\ninclude-tests = true\npreview = true\n",
                                            encoding="utf-8")
    assert len(linted_files(run(capsys, "lint", ".")[1])) == 4
    (project / "pyproject.toml").write_text("[tool.tfdoctor.lint]\ninclude-tests = 'yes'\n", encoding="utf-8")
    code, _, err = run(capsys, "lint", ".")
    assert code == 2 and "lint include-tests must be true or false" in err


def test_preview_rules_run_only_when_asked(workdir, capsys):
    (workdir / "gen.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.from_generator(g)\n",
                                    encoding="utf-8")
    assert run(capsys, "lint", "gen.py")[1] == ""
    assert "SRC104" in run(capsys, "lint", "--preview", "gen.py")[1]
    assert "SRC104" in run(capsys, "lint", "--select", "SRC104", "gen.py")[1]  # its exact code selects it
    assert "(preview)" in run(capsys, "lint", "--list-rules")[1]


def test_notebook_json_report_validates_and_names_the_cell(workdir, capsys):
    (workdir / "train.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    _, out, _ = run(capsys, "lint", "--select", "SRC102,SRC103", "--format", "json", "train.ipynb")
    data = json.loads(out)
    schema = Path(__file__).resolve().parent.parent / "tfdoctor" / "schema" / "lint.schema.json"
    jsonschema.Draft202012Validator(json.loads(schema.read_text(encoding="utf-8"))).validate(data)
    assert [(f["cell"], f["line"], f["code"]) for f in data["findings"]] == [(4, 8, "SRC103"), (4, 9, "SRC102")]


def test_a_source_file_over_the_size_limit_is_src002(workdir, capsys, monkeypatch):
    import tfdoctor.lint.source as source

    monkeypatch.setattr(source, "SOURCE_LIMIT", 10)
    (workdir / "big.py").write_text("x = 1\n" * 10, encoding="utf-8")
    code, out, _ = run(capsys, "lint", "big.py")
    assert code == 1 and out.startswith("big.py:1:1: SRC002 unreadable-file source file big.py is larger than")
