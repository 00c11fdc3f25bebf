"""Lint's byte-level prefilter (issue 39, item 7): a file found by walking a directory is parsed only when a
selected rule could fire on it; a named file always is. Every lint test's snippet also holds each rule to
its triggers (tests/support/lint_support.py: `assert_prefilter_keeps`)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from support.lint_support import lint, rules

from tfdoctor.cli import main
from tfdoctor.lint.datasets import FILE_SOURCES, PIPELINE_TRIGGERS, SOURCE_TRIGGERS, SOURCES, TFDS_AS_DATASET
from tfdoctor.lint.prefilter import prefilter_for
from tfdoctor.lint.rule import RUNNER_CODES, Hit, lint_rule, load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import lint_paths
from tfdoctor.model import Severity

BROKEN_MODEL = "import tensorflow as tf\n\ndef build(:\n    return tf.keras.Sequential()\n"  # no rule's triggers
BROKEN_PIPELINE = "import tensorflow as tf\nds = tf.data.TFRecordDataset(files)\ndef f(:\n"
DECODE = "def decode(x):\n    return tf.io.decode_jpeg(tf.io.read_file(x))\n\n"


def run(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code, capsys.readouterr().out


def test_every_built_in_rule_declares_its_triggers():
    for spec in load_lint_rules().rules:
        assert (spec.triggers is None) == (spec.code in RUNNER_CODES), spec.code


def test_every_dataset_source_holds_a_source_trigger_in_its_name():
    """SRC102/SRC103 follow pipelines from these sources: a source added to the knowledge without a
    trigger in its name would lose its findings in walked files. Each part of a name past its package
    (`tf.`, `keras.`: what import styles rewrite) is written in a file that calls it, in its imports or
    at the call."""
    for name in {*SOURCES, *FILE_SOURCES, TFDS_AS_DATASET}:
        written = name.split(".", 1)[1] if name.startswith(("tf.", "keras.")) else name
        assert any(t in written.encode() for t in SOURCE_TRIGGERS), name


@pytest.mark.parametrize(("text", "holds"), [
    (b"def prepare(train_ds):", True), (b"def f(ds, n):", True), (b"def f(dataset=None):", True),
    (b'"source": ["x = 1\\n", "ds = ds.map(f)"', True), (b'"source": "x = 1\\nds = ds.map(f)"', True),
    (b"ds: tf.data.Dataset", True), (b"keywords = words + adds", False), (b"mydataset = 1", False),
])
def test_a_pipeline_parameter_is_seen_in_scripts_and_in_a_notebooks_json(text, holds):
    pattern = PIPELINE_TRIGGERS[-1]
    assert isinstance(pattern, re.Pattern)
    assert any(t in text if isinstance(t, bytes) else t.search(text) for t in PIPELINE_TRIGGERS) is holds


def test_a_map_on_a_parameter_named_as_a_dataset_is_still_found():
    # Neither "Dataset" nor a loader in the file: the parameter's name is the trigger (lint() checks it).
    assert lint("import tensorflow as tf\n\n" + DECODE + "def prepare(train_ds):\n"
                "    train_ds = train_ds.map(decode)\n    return train_ds\n").codes() == ["SRC103"]


# The input-pipeline rules (preview since issue 39's measurement), the training-step rule and the read errors:
# what these tests prefilter for.
PIPELINE_AND_STEP = ["SRC001", "SRC002", "SRC102", "SRC103", "SRC107"]


def test_a_walked_file_no_rule_can_fire_on_is_not_parsed_and_a_named_one_is(tmp_path):
    model, plain, pipeline = tmp_path / "model.py", tmp_path / "plain.py", tmp_path / "pipeline.py"
    model.write_text(BROKEN_MODEL, encoding="utf-8")
    plain.write_text("def f(:\n", encoding="utf-8")
    pipeline.write_text(BROKEN_PIPELINE, encoding="utf-8")
    files, chosen = [model, plain, pipeline], select_lint_rules(load_lint_rules().rules, PIPELINE_AND_STEP)
    walked = lint_paths(files, chosen, walked=files)
    assert [(Path(f.path).name, f.code, f.line) for f in walked.findings] == [("pipeline.py", "SRC001", 3)]
    assert (walked.files, walked.prefiltered) == (3, 2)
    named = lint_paths(files, chosen)
    assert sorted((Path(f.path).name, f.code) for f in named.findings) == [
        ("model.py", "SRC001"), ("pipeline.py", "SRC001"), ("plain.py", "SRC001")]
    assert named.prefiltered == 0


def test_the_command_line_parses_what_it_is_named_and_prefilters_what_it_walks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("src").mkdir()
    Path("src/model.py").write_text(BROKEN_MODEL, encoding="utf-8")
    assert run(capsys, "lint", "src") == (0, "")
    code, out = run(capsys, "lint", "src", "src/model.py")  # pre-commit names the files it changed
    assert code == 1 and out == "src/model.py:3:11: SRC001 syntax-error cannot parse: invalid syntax\n"


def test_the_prefilter_keeps_whatever_the_selected_rules_need(tmp_path):
    step = tmp_path / "step.py"
    step.write_text("import tensorflow as tf\n\nfor x, y in data:\n    with tf.GradientTape() as tape:\n"
                    "        loss = model(x)\n    grads = tape.gradient(loss, model.trainable_variables)\n"
                    "    opt.apply_gradients(zip(grads, model.trainable_variables))\n", encoding="utf-8")
    every = load_lint_rules().rules
    pipelines = select_lint_rules(every, ["SRC102", "SRC103"])
    assert lint_paths([step], pipelines, walked=[step]).prefiltered == 1  # no pipeline in it
    report = lint_paths([step], select_lint_rules(every), walked=[step])
    # parsed and judged: a step over data of a size the file does not show is held back by default
    assert (report.prefiltered, report.codes(), report.held_back_by) == (0, [], {"SRC107": 1})
    report = lint_paths([step], select_lint_rules(every, ["SRC107"]), walked=[step])
    assert (report.prefiltered, report.codes()) == (0, ["SRC107"])


def test_only_syntax_and_read_errors_selected_or_a_rule_without_triggers_turns_it_off(tmp_path):
    every = load_lint_rules().rules
    assert prefilter_for(select_lint_rules(every, ["SRC001", "SRC002"])) is None
    assert prefilter_for(select_lint_rules(every)) is not None

    @lint_rule("XYZ901", "plugin-rule", Severity.WARNING)
    def plugin(module):
        """A third-party rule that says nothing of its triggers."""
        yield from (Hit(n, "a call") for n in module.nodes(ast.Call) if module.call_name(n) == "tf.keras.Sequential")

    registry = load_lint_rules([plugin])
    assert registry.rules[0].triggers is None
    model = tmp_path / "model.py"
    model.write_text(BROKEN_MODEL, encoding="utf-8")
    with_plugin = [*select_lint_rules(every), *registry.rules]
    assert prefilter_for(with_plugin) is None
    assert lint_paths([model], with_plugin, walked=[model]).codes() == ["SRC001"]


def _rules_that_fire_on_every_module():
    """Two rules that break their contract on purpose (each fires on any module): which one runs shows."""
    @lint_rule("XYZ903", "needs-alpha", Severity.WARNING, triggers=[b"alpha_step"])
    def alpha(module):
        """Declares `alpha_step`."""
        yield Hit(module.tree.body[0], "alpha ran")

    @lint_rule("XYZ904", "needs-beta", Severity.WARNING, triggers=[(b"beta_map", b"gamma_map")])
    def beta(module):
        """Declares `beta_map` or `gamma_map`."""
        yield Hit(module.tree.body[0], "beta ran")

    return load_lint_rules([alpha, beta]).rules


@pytest.mark.parametrize(("body", "codes"), [
    ("alpha_step()\n", ["XYZ903"]), ("gamma_map()\n", ["XYZ904"]), ("alpha_step(beta_map)\n", ["XYZ903", "XYZ904"]),
])
def test_a_walked_file_is_linted_by_the_rules_whose_triggers_it_holds(tmp_path, body, codes):
    path = tmp_path / "train.py"
    path.write_text("import tensorflow as tf\n" + body, encoding="utf-8")
    chosen = _rules_that_fire_on_every_module()
    assert lint_paths([path], chosen, walked=[path]).codes() == codes
    # named on the command line, it is parsed and every selected rule runs, as without a prefilter
    assert lint_paths([path], chosen).codes() == ["XYZ903", "XYZ904"]


def test_a_walked_notebook_is_linted_by_the_rules_its_code_cells_trigger(tmp_path):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["Call `alpha_step` to train.\n"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import tensorflow as tf\n", "gamma_map()\n"]}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    # the Markdown's `alpha_step` is not code: only the rule the code cell triggers runs
    assert lint_paths([path], _rules_that_fire_on_every_module(), walked=[path]).codes() == ["XYZ904"]


def test_workers_run_only_the_triggered_rules_too(tmp_path):
    files = []
    for i in range(80):  # enough for worker processes (runner._PARALLEL_FROM)
        path = tmp_path / f"m{i:02}.py"
        path.write_text("import tensorflow as tf\n" + ("alpha_step()\n" if i % 2 else "beta_map()\n"), encoding="utf-8")
        files.append(path)
    report = lint_paths(files, _rules_that_fire_on_every_module(), jobs=2, walked=files)
    assert sorted(report.codes()) == ["XYZ903"] * 40 + ["XYZ904"] * 40


@pytest.mark.parametrize("trigger", [b"", b'say "hi"', b"a\\b", "café".encode()])
def test_a_trigger_a_notebooks_json_would_escape_is_refused(trigger):
    with pytest.raises(ValueError, match="trigger"):
        lint_rule("XYZ902", "bad-trigger", Severity.WARNING, triggers=[trigger])


def test_workers_count_what_they_skipped(tmp_path):
    files = []
    for i in range(80):  # enough for worker processes (runner._PARALLEL_FROM)
        path = tmp_path / f"m{i:02}.py"
        path.write_text(BROKEN_MODEL if i % 2 else BROKEN_PIPELINE, encoding="utf-8")
        files.append(path)
    report = lint_paths(files, select_lint_rules(load_lint_rules().rules, PIPELINE_AND_STEP), jobs=2, walked=files)
    assert (report.files, report.prefiltered, report.codes()) == (80, 40, ["SRC001"] * 40)


def test_a_notebook_is_searched_as_its_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import tensorflow as tf\n", DECODE, "def prepare(ds):\n", "    ds = ds.map(decode)\n",
                         "    return ds\n"]}]
    Path("nb").mkdir()
    Path("nb/prep.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                 "nbformat_minor": 5}), encoding="utf-8")
    code, out = run(capsys, "lint", "--select", "SRC103", "nb")
    assert code == 0 and out.startswith("nb/prep.ipynb:cell 1:6:13: SRC103")


def test_rules_helper_selects_every_rule_with_triggers():
    assert all(r.triggers for r in rules() if r.code not in RUNNER_CODES)


@pytest.mark.parametrize("cell", [
    ["x = a if b else c", "print('50 percent done')"],
    ["d = {k: v for k, v in items}", "y = x / 2", "z = x // 3  # a comment"],
    ["def f(a,", "      b):", "    return a @ b"],
    ["s = '''", "text on several lines", "'''"],
    ["if x:", "    pass", "else:", "    y = [i for i in range(3)]"],
])
def test_a_cell_without_escape_characters_is_what_ipython_makes_of_it(cell):
    """The notebook shortcut (ipython_syntax._MAYBE_SPECIAL): IPython's own transformers find nothing in a
    cell with no %, ! or ? and no line starting with , ; or /, so skipping them changes nothing."""
    inputtransformer2 = pytest.importorskip("IPython.core.inputtransformer2")
    from tfdoctor.lint.ipython_syntax import _MAYBE_SPECIAL, _IPythonCell, _scan

    assert not _MAYBE_SPECIAL.search("\n".join(cell))
    assert _IPythonCell(inputtransformer2).specials(cell) == [] and _scan(cell) == []


@pytest.mark.parametrize("cell", [["!ls"], ["x = %time f()"], ["f?"], ["  ,f a b"], ["/f 1"], ["%%time", "x = 1"]])
def test_a_cell_with_one_is_handed_to_ipython(cell):
    from tfdoctor.lint.ipython_syntax import _MAYBE_SPECIAL

    assert _MAYBE_SPECIAL.search("\n".join(cell))
