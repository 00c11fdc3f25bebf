"""Issue 39, item 7 (lint's CPU at most a plain `ast.parse`'s on repositories of others) without changing a
finding: notebooks prefiltered on their code cells, .ipynb lines looked up only when a finding needs them,
IPython's re-tokenising only where one of its transforms can match, forked workers that share chunks, and a
cell IPython's tokenizer rejects reported as SRC002 instead of crashing the run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.lint_support import rules

from tfdoctor.facts import bounded
from tfdoctor.lint import ipython_syntax, notebook, runner, source
from tfdoctor.lint.runner import lint_paths

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

PIPELINE = ["import tensorflow as tf\n", "def decode(x):\n", "    return tf.io.decode_jpeg(tf.io.read_file(x))\n",
            "ds = tf.data.Dataset.from_tensor_slices(files)\n", "ds = ds.map(decode).batch(32)\n",
            "model = tf.keras.Sequential()\n", "model.fit(ds, epochs=3)\n"]  # SRC103 at line 5, SRC102 at line 7


def write_notebook(path: Path, *cells: dict) -> Path:
    path.write_text(json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                               indent=1), encoding="utf-8")
    return path


def code(source: list[str], outputs: list | None = None) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": outputs or [],
            "source": source}


def markdown(source: list[str]) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


# --- the bug: a cell IPython's tokenizer rejects

@pytest.mark.skipif(ipython_syntax.cell_transformer() is ipython_syntax.transform_cell, reason="needs IPython")
def test_a_cell_ipythons_tokenizer_rejects_is_src002_at_that_cell(tmp_path):
    """The tokenizer raises IndentationError on this cell (Jupyter cannot run it either); it used to escape
    the runner and end the whole run."""
    bad = write_notebook(tmp_path / "bad.ipynb", code(["import os\n"]),
                         code(["import tensorflow as tf\n", "if True:\n", "        a = 1\n", "    b = 2\n", "!ls\n"]))
    report = lint_paths([bad], rules())
    assert [(f.code, f.cell) for f in report.findings] == [("SRC002", 2)]
    assert report.findings[0].message.startswith("IPython cannot read this cell: IndentationError")
    assert report.crashes == []


def test_its_healthy_twin_is_linted(tmp_path):
    good = write_notebook(tmp_path / "good.ipynb",
                          code(["import tensorflow as tf\n", "if True:\n", "    a = 1\n", "b = 2\n", "!ls\n"]))
    report = lint_paths([good], rules())
    assert report.findings == [] and report.crashes == []


# --- which cells IPython re-tokenises

@pytest.mark.parametrize("cell", [
    ['print("%d items" % n)'], ["if a != b:", "    x = 1"], ['print("why?")'], ["x = y % 2  # why? no idea"],
    ["d = {'a': 1}", "f(d)"],
])
def test_a_cell_no_ipython_transform_can_match_is_not_retokenised(cell, monkeypatch):
    monkeypatch.setattr(ipython_syntax._IPythonCell, "specials", lambda self, lines: pytest.fail(str(lines)))
    monkeypatch.setattr(ipython_syntax, "_scan", lambda lines: pytest.fail(str(lines)))
    ipython = object.__new__(ipython_syntax._IPythonCell)  # IPython's, whose every call fails here
    assert ipython_syntax.transform_cell(cell, ipython) == [(line, 0) for line in cell]
    assert ipython_syntax.transform_cell(cell) == [(line, 0) for line in cell]


@pytest.mark.parametrize(("cell", "expected"), [
    (["files =\t%who_ls"], [("files =\tNone", 0)]),
    (["np.zeros?"], [("pass", 0)]),  # help: `?` last on the line
    (["if C:", "    %time f()"], [("if C:", 0), ("    pass", 0)]),
    (["x = 1", ";f a b"], [("x = 1", 0), ("pass", 0)]),  # an autocall escape first on a line
])
def test_a_cell_where_one_can_match_still_is(cell, expected):
    assert ipython_syntax.transform_cell(cell, None) == expected  # the scanner, IPython's twin
    if ipython_syntax.cell_transformer() is not ipython_syntax.transform_cell:
        assert ipython_syntax.cell_transformer()(cell) == expected


@pytest.mark.skipif(ipython_syntax.cell_transformer() is ipython_syntax.transform_cell, reason="needs IPython")
def test_a_shell_assignment_continued_on_the_next_line_still_reaches_ipython():
    """Tokens are separated by backslash continuations too: `=` then `!` two lines apart is IPython's."""
    assert ipython_syntax.cell_transformer()(["x = \\", "  !ls"]) == [("x = \\", 0), ("  None", 0)]


# --- the .ipynb lines, only for a notebook with a finding

def test_ipynb_lines_are_looked_up_only_for_a_notebook_with_a_finding(tmp_path, monkeypatch):
    calls: list[int] = []
    raw_lines = notebook._raw_lines
    monkeypatch.setattr(notebook, "_raw_lines", lambda data, cells: (calls.append(1), raw_lines(data, cells))[1])
    quiet = write_notebook(tmp_path / "quiet.ipynb", code(["import tensorflow as tf\n", "x = tf.constant(1)\n"]))
    assert lint_paths([quiet], rules()).findings == [] and calls == []
    loud = write_notebook(tmp_path / "loud.ipynb", markdown(["# data\n"]),
                          code(PIPELINE, outputs=[{"name": "stdout", "output_type": "stream", "text": ["ds.map\n"]}]))
    found = lint_paths([loud], rules()).findings
    assert calls == [1] and [(f.code, f.line) for f in found] == [("SRC103", 5), ("SRC102", 7)]
    stored = loud.read_text(encoding="utf-8").splitlines()
    for finding in found:  # the region a SARIF viewer shows: the .ipynb line holding that source line
        assert stored[finding.raw_line - 1].strip().rstrip(",") == json.dumps(PIPELINE[finding.line - 1])


# --- the prefilter reads a notebook's code cells

def test_a_notebook_whose_triggers_are_only_in_markdown_and_outputs_is_not_parsed(tmp_path):
    output = {"name": "stdout", "output_type": "stream", "text": ["tf.data.Dataset.map(f) model.fit\n"]}
    only_prose = write_notebook(tmp_path / "prose.ipynb", markdown(["We call `ds.map` on a `tf.data.Dataset`\n"]),
                                code(["import tensorflow as tf\n", "print(1)\n"], outputs=[output]))
    report = lint_paths([only_prose], rules(), walked=[only_prose])
    assert (report.files, report.prefiltered, report.findings) == (1, 1, [])


def test_its_twin_with_the_pipeline_in_a_code_cell_is(tmp_path):
    pipeline = write_notebook(tmp_path / "pipeline.ipynb", markdown(["We call `ds.map`\n"]), code(PIPELINE))
    report = lint_paths([pipeline], rules(), walked=[pipeline])
    assert report.prefiltered == 0 and "SRC103" in report.codes()
    assert report.codes() == lint_paths([pipeline], rules()).codes()  # named: parsed anyway, the same


def test_a_notebook_that_is_not_json_is_decided_by_its_bytes(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [ "import tensorflow as tf; ds = tf.data.Dataset.range(3).map(f)"', encoding="utf-8")
    report = lint_paths([broken], rules(), walked=[broken])
    assert report.codes() == ["SRC002"] and report.findings[0].message.startswith("not a valid notebook")


# --- workers

def many_files(tmp_path: Path, count: int = 80) -> list[Path]:
    files = []
    for i in range(count):
        path = tmp_path / f"s{i:02}.py"
        path.write_text("".join(PIPELINE) if i % 4 == 0 else "import tensorflow as tf\nx = 1\n", encoding="utf-8")
        files.append(path)
    return files


def findings(report) -> list[dict]:
    return [f.to_json() for f in report.findings]


def test_by_default_a_small_tree_is_linted_without_forking(tmp_path, monkeypatch):
    files = many_files(tmp_path)
    one = lint_paths(files, rules(), jobs=1, walked=files)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked for a tree linted in well under SPILL_AFTER"))
    report = lint_paths(files, rules(), walked=files)
    assert findings(report) == findings(one) and report.files == 80 and len(report.findings) == 20 * 2
    assert (report.files, report.prefiltered) == (80, 60)


def test_past_spill_after_the_other_processes_are_forked(tmp_path, monkeypatch):
    files = many_files(tmp_path)
    one = lint_paths(files, rules(), jobs=1, walked=files)
    forks: list[int] = []
    fork, parent = os.fork, os.getpid()
    monkeypatch.setattr(os, "fork", lambda: (forks.append(1) if os.getpid() == parent else None, fork())[1])
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runner, "SPILL_AFTER", 0.0)
    report = lint_paths(files, rules(), walked=files)
    assert forks == [1] and findings(report) == findings(one)
    assert (report.files, report.prefiltered) == (one.files, one.prefiltered)


def test_a_worker_that_dies_costs_its_chunks_nothing(tmp_path, monkeypatch):
    """A forked process that ends without sending its report (killed, out of memory): the chunks it drew
    are linted by this process, so no file is lost or counted twice."""
    files = many_files(tmp_path)
    one = lint_paths(files, rules(), jobs=1, walked=files)
    parent, lint_file = os.getpid(), runner.lint_file
    monkeypatch.setattr(runner, "lint_file", lambda *args: lint_file(*args) if os.getpid() == parent else os._exit(3))
    report = lint_paths(files, rules(), jobs=2, walked=files)
    assert findings(report) == findings(one)
    assert (report.files, report.prefiltered) == (one.files, one.prefiltered)


# --- smaller things

def test_a_text_under_the_token_limit_in_characters_is_not_counted(monkeypatch):
    monkeypatch.setattr(source, "count_tokens", lambda text: pytest.fail("counted"))
    assert source.parse_source("x = 1\n" * 1000, "t.py").body
    monkeypatch.setattr(source, "TOKEN_LIMIT", 10)
    monkeypatch.setattr(source, "count_tokens", lambda text: 11)
    with pytest.raises(source.SourceError, match="11 tokens"):
        source.parse_source("x = 1\n" * 3, "t.py")


def test_a_source_file_is_read_in_one_piece(tmp_path, monkeypatch):
    path = tmp_path / "big.ipynb"
    path.write_bytes(b"x" * (3 * 1024 * 1024))
    sizes: list[int] = []
    read = os.read
    monkeypatch.setattr(bounded.os, "read", lambda fd, n: (sizes.append(n), read(fd, n))[1])
    assert len(source.read_source(path)) == 3 * 1024 * 1024
    assert sizes == [3 * 1024 * 1024 + 1, 65536]  # the file in one read, then its end (64 KB chunks before)


def test_the_benchmark_allows_only_syntax_errors_of_files_the_tree_does_not_parse():
    from lint_speed_others import _same

    def answer(*found: dict) -> dict:
        return {"findings": list(found), "crashes": [], "suppressed": 0}

    syntax = {"path": "nb/old.ipynb", "code": "SRC001", "cell": 5, "line": 19, "message": "cannot parse"}
    rule = {"path": "nb/old.ipynb", "code": "SRC103", "cell": 2, "line": 3, "message": "map"}
    assert _same(answer(), answer(syntax), frozenset({"nb/old.ipynb"})) == ([], [syntax])
    assert _same(answer(), answer(syntax), frozenset())[0]  # parsed here: a lost syntax error fails the run
    assert _same(answer(), answer(rule), frozenset({"nb/old.ipynb"}))[0]  # a rule's finding always does
