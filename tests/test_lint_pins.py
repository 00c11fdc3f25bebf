"""The TensorFlow releases a project pins decide what tf.data does by itself (tfdoctor/lint/pins.py): read from
its requirement files when neither --target-tensorflow nor the setting names a release.

Found on the held-out sets (issue 39): of the 24 repositories of the tenth to twelfth, ten pin TensorFlow at
their top (`tensorflow-cpu==2.12.0`, `tensorflow-gpu~=2.10.1`, `tensorflow>=2.10.0,<2.11.0`, poetry's `^2.18.0`),
and lint judged their maps and pipelines as if their release were unknown."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.lint_support import lint

from tfdoctor.cli import main
from tfdoctor.lint.pins import PIN_FILE_LIMIT, PIN_FILES, folder_target, project_target
from tfdoctor.lint.rule import Applicability
from tfdoctor.lint.target import OPEN, Target

TF = "import tensorflow as tf\n"
STATELESS = ("def decode(path, label):\n    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
             "    return tf.image.resize(image, [224, 224]), label\n")
FIT = "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"


def pinned(tmp_path: Path, name: str, text: str) -> Target | None:
    (tmp_path / ".git").mkdir(exist_ok=True)  # the project's top: nothing above it is read
    (tmp_path / name).write_text(text, encoding="utf-8")
    return folder_target(str(tmp_path))


def span(target: Target | None) -> tuple[tuple[int, int], tuple[int, int] | None] | None:
    return None if target is None else (target.release, target.newest)


# --- what each kind of file pins -----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("requirements.txt", "numpy\ntensorflow==2.11.1\n", ((2, 11), (2, 11))),
    ("requirements.txt", "tensorflow-gpu~=2.10.1  # the cluster's\n", ((2, 10), (2, 10))),
    ("requirements.txt", "tensorflow>=2.10.0,<2.11.0 --hash=sha256:00\n", ((2, 10), (2, 10))),
    ("requirements.txt", "tensorflow-cpu>=2.19.0\n", ((2, 19), OPEN)),
    ("requirements.txt", "tensorflow==1.15.*\n", ((1, 15), (1, 15))),
    ("requirements.txt", "tensorflow==2.1.0rc1\n", ((2, 1), (2, 1))),
    ("requirements.txt", "tensorflow_gpu==2.3.0\n", ((2, 3), (2, 3))),
    ("requirements.txt", "tensorflow==2.4.1\t# tab, then a comment\nnumpy \\\n  ==1.19\n", ((2, 4), (2, 4))),
    ("requirements.txt", "tensorflow==2.5.0 \\\n    --hash=sha256:00\n", ((2, 5), (2, 5))),
    # markers: both may be what runs, so the range covers both
    ("requirements.txt", 'tensorflow==2.12.0; sys_platform != "darwin"\ntensorflow-macos==2.13.0; '
                         'sys_platform == "darwin"\n', ((2, 12), (2, 13))),
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["tensorflow>=2.7,<=2.11", "numpy"]\n',
     ((2, 7), (2, 11))),
    ("pyproject.toml", '[project]\nname = "x"\n[project.optional-dependencies]\n'
                       'gpu = ["tensorflow[and-cuda]==2.15.1"]\n', ((2, 15), (2, 15))),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\ntensorflow = "^2.18.0"\n', ((2, 18), OPEN)),
    ("pyproject.toml", '[tool.poetry.dependencies]\ntensorflow = {version = "~2.4", optional = true}\n',
     ((2, 4), (2, 4))),
    ("Pipfile", '[packages]\ntensorflow = "==2.4.1"\nnumpy = "*"\n', ((2, 4), (2, 4))),
    ("setup.py", "from setuptools import setup\nsetup(name='x', install_requires=['tensorflow>=2.1,<2.3'],\n"
                 "      extras_require={'gpu': ['tensorflow-gpu>=2.1,<2.3']})\n", ((2, 1), (2, 2))),
    ("setup.cfg", "[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy\n    tensorflow==2.6.2\n",
     ((2, 6), (2, 6))),
    ("environment.yml", "name: x\ndependencies:\n  - python=3.8\n  - tensorflow=2.4\n", ((2, 4), (2, 4))),
    ("environment.yml", "dependencies:\n  - tensorflow-gpu=2.1.0=h0d30ee6_0\n", ((2, 1), (2, 1))),
    ("environment.yml", "dependencies:\n  - pip\n  - pip:\n    - tensorflow==2.9.1\n", ((2, 9), (2, 9))),
])
def test_each_kind_of_requirement_file_pins_its_releases(tmp_path, name: str, text: str, expected) -> None:
    assert span(pinned(tmp_path, name, text)) == expected


@pytest.mark.parametrize(("name", "text"), [
    ("requirements.txt", "tensorflow\nnumpy==1.26\n"),  # no version: pins nothing
    ("requirements.txt", "tensorflow-datasets==4.9.2\ntensorflow-hub>=0.12\ntensorflow_addons==0.15.0\n"),
    ("requirements.txt", "tf-nightly==2.16.0.dev20231101\n"),  # a nightly is no release
    ("requirements.txt", "# tensorflow==2.3.0\n-r base.txt\n-e .\ngit+https://example.org/tensorflow.git\n"),
    ("pyproject.toml", '[project]\nname = "x"\nkeywords = ["tensorflow==2.3"]\ndependencies = ["tensorflow"]\n'),
    ("pyproject.toml", "this is [not toml\n"),
    ("requirements.txt", "tensorflow===2.4abc\n"),  # arbitrary equality to no release: pins nothing, no error
    ("pyproject.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n"),  # nested past the recursion limit
    ("Pipfile", '[packages]\ntensorflow = "*"\n'),
    ("setup.py", "setup(install_requires=['tensorflow'\n"),  # not Python: nothing read, nothing run
    ("setup.cfg", "[options]\ninstall_requires =\n    tensorflow\n"),
    ("environment.yml", "dependencies:\n  - tensorflow\n  - tensorflow-estimator=2.4\n"),
])
def test_what_pins_no_release_of_tensorflow_leaves_it_unknown(tmp_path, name: str, text: str) -> None:
    assert pinned(tmp_path, name, text) is None


def test_setup_py_is_read_never_run(tmp_path) -> None:
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w').write('x')\nrequires = ['tensorflow==2.3.0']\n"
    assert span(pinned(tmp_path, "setup.py", text)) == ((2, 3), (2, 3))
    assert not marker.exists()


def test_several_files_give_the_range_that_covers_them_all(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the files are named as lint names files: below the current folder, relative
    (tmp_path / "setup.py").write_text("setup(install_requires=['tensorflow>=2.7,<=2.11'])\n", encoding="utf-8")
    target = pinned(tmp_path, "requirements.txt", "tensorflow==2.11.1\n")
    assert span(target) == ((2, 7), (2, 11))
    assert target.origin == "pinned: tensorflow==2.11.1 in requirements.txt; tensorflow<=2.11,>=2.7 in setup.py"


# --- what a range decides ------------------------------------------------------------------------------


def test_a_range_decides_only_what_all_its_releases_agree_on() -> None:
    both = Target((2, 7), "pinned", (2, 11))
    assert (both.before((2, 5)), both.before((2, 11)), both.before((2, 12))) == (False, None, True)
    later = Target((2, 19), "pinned", OPEN)
    assert (later.before((2, 11)), later.name) == (False, "2.19 or later")
    assert both.name == "2.7 to 2.11" and Target((2, 4), "x").name == "2.4"
    assert Target((1, 14), "pinned", OPEN).before((2, 5)) is None


def test_a_pinned_range_across_the_release_says_so_at_info(tmp_path) -> None:
    """2.7 to 2.11 parallelizes a stateless map (2.5+) but adds a prefetch itself only on 2.11: SRC103 is
    silent, SRC102 an info that names the range."""
    target = Target((2, 7), "pinned: tensorflow<=2.11,>=2.7 in setup.py", (2, 11))
    assert lint(TF + STATELESS + FIT, select=("SRC103",), target=target).findings == []
    [finding] = lint(TF + STATELESS + FIT, select=("SRC102",), target=target).findings
    assert finding.severity.label == "info"
    assert "TensorFlow 2.7 to 2.11 (pinned: tensorflow<=2.11,>=2.7 in setup.py) holds releases before and after " \
           "2.11" in finding.message
    # the healthy twins: a pin on one side decides
    assert [f.severity.label for f in lint(TF + STATELESS + FIT, select=("SRC102",),
                                            target=Target((2, 7), "pinned", (2, 10))).findings] == ["warning"]
    assert lint(TF + STATELESS + FIT, select=("SRC102",), target=Target((2, 11), "pinned", OPEN)).findings == []


# --- fixes for the release the project pins (issue 39, item 6) ----------------------------------------


def fixes(text: str, code: str, target: Target | None) -> list[tuple[str, Applicability]]:
    report = lint(text, select=(code,), target=target)
    return [(e.text.lstrip(", "), f.fix.applicability) for f in report.findings for e in f.fix.edits]


@pytest.mark.parametrize(("target", "expected"), [
    (Target((2, 3), "pinned"), ("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.SAFE)),
    (Target((2, 2), "pinned", (2, 12)), ("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.SAFE)),
    (Target((1, 12), "pinned"), ("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.UNSAFE)),
    (Target((2, 4), "pinned"), ("num_parallel_calls=tf.data.AUTOTUNE", Applicability.SAFE)),
])
def test_a_fix_writes_the_autotune_every_release_the_code_may_run_on_has(target: Target, expected) -> None:
    """tf.data.AUTOTUNE is 2.4+ and tf.data.experimental.AUTOTUNE 1.13+ (tfdata_automatic.toml [[autotune]]): a
    TensorFlow 2 file pinned to 2.3 got tf.data.AUTOTUNE, an AttributeError there, marked safe."""
    stateful = TF + "def augment(x):\n    return tf.image.random_flip_left_right(x)\n"
    text = stateful + "ds = tf.data.TFRecordDataset(files).map(augment).batch(32)\nmodel.fit(ds)\n"
    assert fixes(text, "SRC103", target) == [expected]


# --- where the pins are looked for ----------------------------------------------------------------------


def test_the_nearest_folder_with_pins_up_to_the_projects_top(tmp_path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "requirements.txt").write_text("tensorflow==2.3.1\n", encoding="utf-8")
    (project / "src" / "model").mkdir(parents=True)
    (project / "src" / "model" / "train.py").write_text(TF, encoding="utf-8")
    for path in (project, project / "src", project / "src" / "model" / "train.py"):
        assert span(project_target([path])) == ((2, 3), (2, 3)), path
    # above the project's top (the folder holding .git) nothing is read
    (tmp_path / "requirements.txt").write_text("tensorflow==2.12.0\n", encoding="utf-8")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    assert project_target([other]) is None
    # a folder of its own pins wins over the project's
    (project / "src" / "requirements.txt").write_text("tensorflow==2.15.0\n", encoding="utf-8")
    assert span(project_target([project / "src" / "model"])) == ((2, 15), (2, 15))


def test_paths_in_projects_that_pin_differently_leave_the_release_unknown(tmp_path) -> None:
    pins = {"a": "tensorflow==2.3.1\n", "b": "tensorflow==2.15.0\n", "c": None, "d": "tensorflow==2.3.0\n"}
    for name, pin in pins.items():
        (tmp_path / name / ".git").mkdir(parents=True)
        if pin:
            (tmp_path / name / "requirements.txt").write_text(pin, encoding="utf-8")
    assert project_target([tmp_path / "a", tmp_path / "b"]) is None
    assert project_target([tmp_path / "a", tmp_path / "c"]) is None  # c runs on a release nobody pinned
    assert span(project_target([tmp_path / "a", tmp_path / "d"])) == ((2, 3), (2, 3))  # both pin 2.3


def test_a_requirement_file_others_could_have_planted_is_passed_over(tmp_path) -> None:
    """As for configuration files (tfdoctor/config.py): a folder anyone may write to, without the sticky bit."""
    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / "requirements.txt").write_text("tensorflow==2.3.1\n", encoding="utf-8")
    assert span(project_target([shared])) == ((2, 3), (2, 3))  # the healthy twin
    shared.chmod(0o777)
    try:
        assert project_target([shared]) is None
    finally:
        shared.chmod(0o755)


def test_reads_are_bounded_and_never_block(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    big = tmp_path / "requirements.txt"
    big.write_text("tensorflow==2.3.1\n" + "# padding\n" * (PIN_FILE_LIMIT // 10), encoding="utf-8")
    assert project_target([tmp_path]) is None  # larger than the limit: not read
    big.unlink()
    os.mkfifo(tmp_path / "requirements.txt")  # nobody writes to it: a read would wait forever
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires = tensorflow==2.6.0\n", encoding="utf-8")
    started = time.monotonic()
    assert span(project_target([tmp_path])) == ((2, 6), (2, 6))
    assert time.monotonic() - started < 5
    hostile = "  - tensorflow" + " " * 5 + "=" * 100_000 + "\n"
    (tmp_path / "environment.yml").write_text(hostile * 20, encoding="utf-8")
    started = time.monotonic()
    assert span(project_target([tmp_path])) == ((2, 6), (2, 6))
    assert time.monotonic() - started < 5


def test_the_benchmarks_materialise_the_files_lint_reads() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import lint_corpus

    assert lint_corpus.PIN_FILES == PIN_FILES


# --- the command line ---------------------------------------------------------------------------------


def run(capsys, monkeypatch, tmp_path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "train.py").write_text(TF + STATELESS + FIT, encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--select", "SRC103", *args, "."])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_lint_dir_reads_the_projects_pins(capsys, monkeypatch, tmp_path) -> None:
    (tmp_path / "requirements.txt").write_text("tensorflow==2.3.1\n", encoding="utf-8")
    code, out, err = run(capsys, monkeypatch, tmp_path)
    assert code == 0 and out.startswith("train.py:5:") and "(info" not in out
    assert err == ("tfdoctor lint: 1 file(s): 1 warning; as on TensorFlow 2.3 (pinned: tensorflow==2.3.1 in "
                   "requirements.txt)\n")
    code, out, err = run(capsys, monkeypatch, tmp_path, "--diff")
    assert "+ds = tf.data.TFRecordDataset(files).map(decode, num_parallel_calls=tf.data.experimental.AUTOTUNE)" \
        in out
    # the flag and the setting name the release instead
    assert run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.21")[1] == ""
    (tmp_path / "tfdoctor.toml").write_text('[lint]\ntarget-tensorflow = "2.21"\n', encoding="utf-8")
    code, out, err = run(capsys, monkeypatch, tmp_path)
    assert out == "" and "as on TensorFlow 2.21 (target-tensorflow in " in err


def test_lint_dir_without_pins_is_as_before(capsys, monkeypatch, tmp_path) -> None:
    (tmp_path / "requirements.txt").write_text("tensorflow\n", encoding="utf-8")
    code, out, err = run(capsys, monkeypatch, tmp_path)
    assert code == 0 and "(info: TensorFlow 2.5 and later" in out and "as on" not in err


def test_the_docs_example_of_the_pins_prints_what_it_says(capsys, monkeypatch, tmp_path) -> None:
    """docs/lint.md's block on the project's pins, command by command, on the docs' pipeline.py in a project
    whose requirements.txt pins 2.3.1."""
    import test_docs_examples

    docs = (Path(__file__).resolve().parent.parent / "docs" / "lint.md").read_text(encoding="utf-8")
    section = docs.split("Without the flag or the setting, lint reads the releases the project pins", 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "pipeline.py").write_text(test_docs_examples.PIPELINE_PY, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("tensorflow==2.3.1\nnumpy<2\n", encoding="utf-8")
    runs = block.split("$ ")[1:]
    assert len(runs) == 2
    for run_ in runs:
        command, *expected = run_.rstrip("\n").split("\n")
        with pytest.raises(SystemExit):
            main(command.split("  #")[0].split()[1:])
        out, err = capsys.readouterr()
        assert (out + err).splitlines() == expected, command


def test_lint_directory_reads_the_pins_as_the_command_line_does(tmp_path) -> None:
    """tfdoctor.lint.api.lint_directory (benchmarks, editors) lints as `tfdoctor lint DIR`, pins included."""
    from tfdoctor.lint.api import lint_directory
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(TF + STATELESS + FIT, encoding="utf-8")
    rules = select_lint_rules(load_lint_rules().rules, ["SRC103"])
    assert [f.severity.label for f in lint_directory(tmp_path, rules=rules).findings] == ["info"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["tensorflow==2.4.4"]\n',
                                             encoding="utf-8")
    [finding] = lint_directory(tmp_path, rules=rules).findings
    assert finding.severity.label == "warning"
    assert finding.grounds["runs-one-at-a-time"].startswith("TensorFlow 2.4 (pinned: tensorflow==2.4.4 in ")


# --- each file its nearest pins (a monorepo's sub-projects) -----------------------------------------------


def monorepo(tmp_path: Path, pins: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir(exist_ok=True)
    for folder, text in pins.items():
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "requirements.txt").write_text(text, encoding="utf-8")
        (tmp_path / folder / "train.py").write_text(TF + STATELESS + FIT, encoding="utf-8")


def lint_here(capsys, monkeypatch, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--select", "SRC103", *args, "."])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_each_sub_project_is_linted_for_what_it_pins(capsys, monkeypatch, tmp_path) -> None:
    """Found on the fifteenth held-out set: vishalw-iitk/tfrecords pins tensorflow==1.14.0 in the folder of one
    of its projects, not at its top, and `tfdoctor lint .` judged that project as if nothing pinned it."""
    monorepo(tmp_path, {"old": "tensorflow==2.3.1\n", "new": "tensorflow==2.21.0\n"})
    code, out, err = lint_here(capsys, monkeypatch, tmp_path)
    assert out.startswith("old/train.py:5:") and "new/train.py" not in out and "(info" not in out
    # the paths linted lie in projects that pin differently: the summary names none, and counts both
    assert err == ("tfdoctor lint: 2 file(s): 1 warning; 2 file(s) as on their own TensorFlow (their folder's "
                   "pins, what a notebook installs, or Colab's)\n")
    # the fix writes AUTOTUNE as each file's release spells it
    code, out, err = lint_here(capsys, monkeypatch, tmp_path, "--diff")
    assert code == 1 and "num_parallel_calls=tf.data.experimental.AUTOTUNE" in out and "new/train.py" not in out
    # the flag decides every file
    assert lint_here(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.21")[1] == ""
    assert lint_here(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.3")[1].count("SRC103") == 2


def test_json_says_what_the_text_summary_says_of_the_releases(capsys, monkeypatch, tmp_path) -> None:
    """The release linted for, the files with their own and what was held back reach a tool reading JSON too
    (they were only in the text summary), and the report still validates against the published schema."""
    import json

    import jsonschema

    monorepo(tmp_path, {".": "tensorflow>=2.3,<2.5\n", "legacy": "tensorflow-gpu==1.15.5\n"})
    code, out, err = lint_here(capsys, monkeypatch, tmp_path, "--format", "json")
    assert code == 0 and err == ""  # JSON: nothing but the report, on standard output
    report = json.loads(out)
    schema = json.loads((Path(__file__).resolve().parent.parent / "tfdoctor" / "schema" / "lint.schema.json")
                        .read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["target"] == {"name": "2.3 to 2.4", "release": "2.3", "newest": "2.4",
                                "origin": "pinned: tensorflow<2.5,>=2.3 in requirements.txt"}
    assert report["summary"]["own_target"] == 1 and report["held_back_by"] == {}
    assert [f["path"] for f in report["findings"]] == ["legacy/train.py", "train.py"]
    # no upper bound: null, not a made-up release; what was held back, by rule
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.12\n", encoding="utf-8")
    (tmp_path / "legacy" / "requirements.txt").unlink()
    (tmp_path / "train.py").write_text(TF + "ds = tf.data.TFRecordDataset(files).map(parse)\nmodel.fit(ds)\n",
                                       encoding="utf-8")
    report = json.loads(lint_here(capsys, monkeypatch, tmp_path, "--format", "json")[1])
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["target"]["newest"] is None and report["target"]["name"] == "2.12 or later"
    assert report["summary"]["own_target"] == 0
    # the flag names one release; with the default rules (not --select), a map whose function lint cannot
    # see is held back under it
    with pytest.raises(SystemExit):
        main(["lint", "--format", "json", "--target-tensorflow", "2.3", "."])
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == {"name": "2.3", "release": "2.3", "newest": "2.3", "origin": "--target-tensorflow"}
    assert [f["path"] for f in report["findings"]] == ["legacy/train.py"]  # its decode is seen: stateless
    assert report["held_back_by"] == {"SRC103": 1} == {
        "SRC103": report["summary"]["held_back"]}
    # nothing pins it and no flag names it: not known is null
    (tmp_path / "requirements.txt").unlink()
    report = json.loads(lint_here(capsys, monkeypatch, tmp_path, "--format", "json")[1])
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["target"] is None


def test_a_sub_project_under_a_pinned_top_reads_its_own_pins(capsys, monkeypatch, tmp_path) -> None:
    monorepo(tmp_path, {".": "tensorflow==2.21.0\n", "tools/legacy": "tensorflow-gpu==2.3.1\n"})
    code, out, err = lint_here(capsys, monkeypatch, tmp_path)
    assert out.startswith("tools/legacy/train.py:5:") and out.count("SRC103") == 1
    assert err.startswith("tfdoctor lint: 2 file(s): 1 warning; as on TensorFlow 2.21 (pinned: tensorflow==2.21.0 "
                          "in requirements.txt); 1 file(s) as on their own TensorFlow")
    # its healthy twin: a folder without pins of its own takes the top's
    (tmp_path / "tools" / "legacy" / "requirements.txt").unlink()
    code, out, err = lint_here(capsys, monkeypatch, tmp_path)
    assert code == 0 and out == "" and "file(s) as on their own" not in err


def test_project_pins_look_at_each_folder_once(tmp_path, monkeypatch) -> None:
    from tfdoctor.lint import pins

    monorepo(tmp_path, {"a": "tensorflow==2.3.1\n", "a/b": "tensorflow==2.21.0\n"})
    (tmp_path / "a" / "c").mkdir()
    read = []
    monkeypatch.setattr(pins, "folder_target", lambda folder: read.append(folder) or Target((2, 3), folder))
    resolver = pins.ProjectPins([tmp_path])
    assert resolver.run is None and read == []  # nothing pinned at the top
    for _ in range(3):
        assert resolver.for_file(tmp_path / "a" / "c" / "x.py").origin == str(tmp_path / "a")
        assert resolver.for_file(tmp_path / "a" / "b" / "y.py").origin == str(tmp_path / "a" / "b")
        assert resolver.for_file(tmp_path / "z.py") is None
    assert sorted(read) == [str(tmp_path / "a"), str(tmp_path / "a" / "b")]


def test_project_pins_walk_each_folder_once(tmp_path, monkeypatch) -> None:
    from tfdoctor.lint import pins

    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("tensorflow==2.3.1\n", encoding="utf-8")
    looked: list[str] = []
    real = pins.os.path.isfile
    monkeypatch.setattr(pins.os.path, "isfile", lambda p: looked.append(os.path.dirname(p)) or real(p))
    resolver = pins.ProjectPins([])
    for folder in (deep, deep.parent, deep.parent.parent, tmp_path / "a"):
        assert resolver.for_file(folder / "x.py").release == (2, 3)
    # each folder from d up to the top was looked in once, whichever file asked first
    assert sorted(set(looked)) == sorted(str(f) for f in (deep, deep.parent, deep.parent.parent, tmp_path / "a",
                                                          tmp_path))
    from collections import Counter

    counts = Counter(looked)  # a folder without pins: each name once; the top: the first name, then its read
    assert {counts[str(f)] for f in (deep, deep.parent, deep.parent.parent, tmp_path / "a")} == {len(pins.PIN_FILES)}
    assert counts[str(tmp_path)] == 1 + len(pins.PIN_FILES)
