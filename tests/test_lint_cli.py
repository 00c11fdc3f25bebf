"""`tfdoctor lint` end to end: output formats, selection, exit codes, files that cannot be linted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from support.lint_support import FIXTURES

from tfdoctor.cli import main
from tfdoctor.registry import _BUILTIN_FALLBACK, DOC_SECTIONS, LINT_RULE_GROUP

REPO = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def scripts(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text((FIXTURES / "keras_fit_bad.py").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "good.py").write_text((FIXTURES / "keras_fit_good.py").read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def test_text_output_is_path_line_col_code_name_message(scripts, capsys):
    # every rule, those in preview too, as on TensorFlow 2.4 (before tf.data's default rewrites)
    code, out, err = run(capsys, "lint", "--preview", "--target-tensorflow", "2.4", "train.py")
    assert code == 0  # warnings and infos only; the default --fail-on is error
    first = out.splitlines()[0]
    assert first == ('train.py:13:1: SRC113 cuda-visible-devices-set-in-script CUDA_VISIBLE_DEVICES=0 is hard-coded '
                     'in the script: it overrides the GPUs the scheduler or launcher gave the job')
    assert len(out.splitlines()) == 10
    assert err == "tfdoctor lint: 1 file(s): 4 info, 6 warning; as on TensorFlow 2.4 (--target-tensorflow)\n"


def test_fail_on_warning_exits_1_and_clean_file_exits_0(scripts, capsys):
    assert run(capsys, "lint", "--fail-on", "warning", "train.py")[0] == 1
    assert run(capsys, "lint", "--fail-on", "info", "good.py")[:2] == (0, "")


def test_select_and_ignore_by_prefix(scripts, capsys):
    _, out, _ = run(capsys, "lint", "--preview", "--select", "SRC10", "--ignore", "SRC102,SRC109",
                    "train.py")
    assert [line.split()[1] for line in out.splitlines()] == ["SRC103", "SRC101", "SRC101", "SRC101"]


def test_unknown_code_and_missing_path_are_usage_errors(scripts, capsys):
    code, _, err = run(capsys, "lint", "--select", "XYZ9", "train.py")
    assert code == 2 and "no lint rule code starts with XYZ9" in err
    code, _, err = run(capsys, "lint", "nowhere.py")
    assert (code, err) == (2, "tfdoctor: error: nowhere.py: no such file or directory\n")
    assert run(capsys, "lint")[0] == 2


def test_json_output(scripts, capsys):
    code, out, _ = run(capsys, "lint", "--format", "json", "--select", "SRC103", "train.py")
    data = json.loads(out)
    assert code == 0
    assert data["summary"] == {"error": 0, "warning": 1, "info": 0, "suppressed": 0, "crashed": 0,
                               "held_back": 0, "own_target": 0}
    assert data["held_back_by"] == {}
    (finding,) = data["findings"]
    assert finding["code"] == "SRC103" and finding["line"] == 38 and finding["column"] == 35
    assert finding["fix"] == {"title": "Pass num_parallel_calls=tf.data.AUTOTUNE", "applicability": "safe",
                              "edits": [{"line": 38, "column": 46, "end_line": 38, "end_column": 46,
                                         "text": ", num_parallel_calls=tf.data.AUTOTUNE"}]}


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(scripts, capsys):
    # A walked file is parsed when a rule could fire on it (issue 39, item 7): a broken input pipeline.
    (scripts / "broken.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.range(8)\ndef f(:\n",
                                       encoding="utf-8")
    code, out, _ = run(capsys, "lint", "--preview", "--format", "sarif", ".")
    sarif = json.loads(out)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(sarif)
    assert code == 1  # SRC001 is an error
    run_ = sarif["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules][:3] == ["SRC001", "SRC002", "SRC101"]
    assert "Why is this bad?" in rules[2]["help"]["text"]
    by_rule = {}
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        by_rule.setdefault(result["ruleId"], []).append(result)
    syntax = by_rule["SRC001"][0]
    assert syntax["level"] == "error"
    assert syntax["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "broken.py",
                                                                              "uriBaseId": "%SRCROOT%"}
    assert by_rule["SRC103"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {
        "text": ", num_parallel_calls=tf.data.AUTOTUNE"}


def test_noqa_comments(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("t.py").write_text(
        "import os\nimport tensorflow as tf\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'  # tfdoctor: noqa: SRC113\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '1'  # tfdoctor: noqa\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '2'  # tfdoctor: noqa: SRC101\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '3'  # noqa\n"
        "s = '# tfdoctor: noqa'; os.environ['CUDA_VISIBLE_DEVICES'] = '4'\n", encoding="utf-8")
    _, out, err = run(capsys, "lint", "--select", "SRC113", "t.py")  # SRC113 is a preview rule
    assert [line.split(":")[1] for line in out.splitlines()] == ["5", "6", "7"]
    assert "2 suppressed" in err


def test_directory_walk_skips_virtualenvs_site_packages_and_hidden_dirs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bad = "import os\nimport tensorflow\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    for rel in ("proj/train.py", "proj/sub/eval.py", "proj/.venv/lib/x.py", "proj/env/lib/site-packages/y.py",
                "proj/.git/hooks/z.py", "proj/venv2/pyvenv.cfg", "proj/venv2/lib/w.py", "proj/notes.txt"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(bad, encoding="utf-8")
    _, out, err = run(capsys, "lint", "--select", "SRC113", "proj")
    assert [line.split(":")[0] for line in out.splitlines()] == ["proj/sub/eval.py", "proj/train.py"]
    assert err.startswith("tfdoctor lint: 2 file(s)")


def test_unparsable_undecodable_and_unreadable_files_are_findings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("syntax.py").write_text("import tensorflow as tf\n\ndef train_step(x)\n    pass\n", encoding="utf-8")
    Path("nul.py").write_bytes(b"x = 1\x00\n")
    Path("latin.py").write_bytes(b"x = 'caf\xe9'\n")  # latin-1 without a coding cookie
    Path("cookie.py").write_bytes(b"# unknown\n# -*- coding: klingon -*-\nx = 1\n")
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    code, out, _ = run(capsys, "lint", "syntax.py", "nul.py", "latin.py", "cookie.py", "dangling.py")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "cookie.py:1:1: SRC002 unreadable-file cannot decode: unknown encoding for 'klingon'" or \
        lines[0].startswith("cookie.py:1:1: SRC002 unreadable-file cannot decode:")
    # Read through the bounded reader every input goes through (size and time limits).
    assert lines[1] == "dangling.py:1:1: SRC002 unreadable-file cannot read source file dangling.py: no such file"
    assert lines[2] == ("latin.py:1:1: SRC002 unreadable-file cannot decode as utf-8: byte 0xe9 is not valid "
                        "(save the file as UTF-8 or declare its encoding, PEP 263)")
    assert lines[3].startswith("nul.py:1:1: SRC001 syntax-error cannot parse:")
    assert lines[4] == "syntax.py:3:18: SRC001 syntax-error cannot parse: expected ':'"


def test_file_with_a_coding_cookie_is_linted_with_character_columns(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("l1.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport os, tensorflow\ns = '\xe9\xe9'; os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    _, out, _ = run(capsys, "lint", "--select", "SRC113", "l1.py")
    assert out.startswith("l1.py:3:11: SRC113 ")


def test_a_crashing_rule_is_exit_3_and_the_others_still_report(scripts, capsys, monkeypatch):
    from tfdoctor.lint import rule as rule_module
    from tfdoctor.lint.rules import gpu_setup
    from tfdoctor.model import Severity

    @rule_module.lint_rule("SRC199", "always-crashes", Severity.INFO)
    def always_crashes(module):
        """What it does: x. Why is this bad? x. Example: x. Fix: x. Fix safety: x."""
        raise RuntimeError("boom")

    real = rule_module.load_lint_rules
    monkeypatch.setattr(rule_module, "load_lint_rules",
                        lambda modules=None: real([gpu_setup, always_crashes]))
    code, out, err = run(capsys, "lint", "--select", "SRC113,SRC199", "train.py")
    assert code == 3
    assert "SRC113" in out
    assert "train.py: SRC199 crashed: RuntimeError: boom" in err


def test_explain_prints_a_lint_rule(capsys):
    code, out, _ = run(capsys, "explain", "src103")
    assert code == 0
    assert out.startswith("SRC103 map-without-parallel-calls (warning)\n\n`Dataset.map()` runs")


def test_every_lint_rule_is_documented_with_the_five_sections():
    from tfdoctor.lint.rule import load_lint_rules

    registry = load_lint_rules()
    assert registry.errors == []
    for spec in registry.rules:
        positions = [spec.doc.find(section) for section in DOC_SECTIONS]
        assert all(p >= 0 for p in positions), (spec.code, positions)
        assert positions == sorted(positions), spec.code


def test_lint_entry_points_match_the_builtin_fallback():
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    declared = pyproject["project"]["entry-points"][LINT_RULE_GROUP]
    assert sorted(declared.items()) == sorted(_BUILTIN_FALLBACK[LINT_RULE_GROUP])


def test_pre_commit_hook_definition():
    text = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    for line in ("- id: tfdoctor-lint", "entry: tfdoctor lint", "language: python", "types_or: [python, jupyter]"):
        assert line in text


def test_deeply_nested_expressions_do_not_crash_the_rules(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    deep = "+".join(["1"] * 2000)
    Path("gen.py").write_text(f"import tensorflow as tf\n\ndef f():\n    ds = tf.data.Dataset.range(3).map(g, "
                              f"num_parallel_calls={deep})\n    model.fit(ds)\n", encoding="utf-8")
    code, out, err = run(capsys, "lint", "gen.py")
    assert (code, out) == (0, "")
    assert "crashed" not in err


def test_json_output_validates_against_the_published_schema(scripts, capsys):
    (scripts / "broken.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.range(8)\ndef f(:\n",
                                       encoding="utf-8")
    _, out, _ = run(capsys, "lint", "--preview", "--format", "json", ".")
    schema = json.loads((REPO / "tfdoctor" / "schema" / "lint.schema.json").read_text(encoding="utf-8"))
    data = json.loads(out)
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["files"] == 3
    assert {f["code"] for f in data["findings"]} >= {"SRC001", "SRC101", "SRC102"}


def test_fail_on_from_the_config_file(scripts, capsys):
    (scripts / "tfdoctor.toml").write_text('fail-on = "warning"\nignore = ["SRC113"]\n', encoding="utf-8")
    code, out, _ = run(capsys, "lint", "train.py")
    assert code == 1
    assert "SRC113" not in out


def test_show_fixes_prints_the_fix_under_each_finding(scripts, capsys):
    _, out, _ = run(capsys, "lint", "--show-fixes", "--select", "SRC103", "train.py")
    assert out.splitlines()[1] == "    fix (safe): Pass num_parallel_calls=tf.data.AUTOTUNE"
