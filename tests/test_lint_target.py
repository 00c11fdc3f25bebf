"""What tf.data does by itself, by release (tfdoctor/knowledge/tfdata_automatic.toml), decides SRC103 and SRC102:
a map of a stateless function is parallelized from TensorFlow 2.5 and a pipeline ending in a synchronous
transformation is prefetched from 2.11, so a finding needs the release the code runs on (--target-tensorflow,
the setting, a TensorFlow 1 file) or a function tf.data leaves sequential on every release.

Found on the tenth and eleventh held-out sets (issue 39): two judges showed by runs of TensorFlow 2.21 that a
stateless map without num_parallel_calls is rewritten into a parallel one."""

from __future__ import annotations

import json
import os

import pytest
from support.lint_support import lint

from tfdoctor.cli import main
from tfdoctor.knowledge import table
from tfdoctor.lint.target import Target, parse_release, rewrite, stateful_call, stateless_keras_call

TF = "import tensorflow as tf\n"
STATELESS = ("def decode(path, label):\n    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
             "    return tf.image.resize(image, [224, 224]), label\n")
FIT = "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"
OLD, NEW = Target((2, 4), "--target-tensorflow"), Target((2, 21), "--target-tensorflow")


def src103(text: str, target: Target | None = None) -> list[tuple[int, str, str]]:
    report = lint(text, select=("SRC103",), target=target)
    assert report.crashes == []
    return [(f.line, f.severity.label, f.message) for f in report.findings]


def severity(text: str, code: str = "SRC103", target: Target | None = None) -> list[str]:
    report = lint(text, select=(code,), target=target)
    assert report.crashes == []
    return [f.severity.label for f in report.findings]


# --- the knowledge -------------------------------------------------------------------------------------


def test_the_table_holds_the_releases_the_wheels_showed() -> None:
    assert rewrite("map_parallelization")["since"] == (2, 5)
    assert rewrite("inject_prefetch")["since"] == (2, 11)
    data = table("tfdata_automatic")
    assert data.taken.isoformat() == "2026-12-06" and any("map_parallelization.cc" in s for s in data.sources)


@pytest.mark.parametrize(("name", "stateful"), [
    ("tf.random.uniform", True), ("tf.image.random_flip_left_right", True), ("tf.py_function", True),
    ("tf.numpy_function", True), ("tf.print", True), ("keras.layers.RandomFlip", True),
    ("keras.layers.StringLookup", True), ("tf.random.stateless_uniform", False),
    ("tf.image.stateless_random_flip_left_right", False), ("tf.io.decode_jpeg", False), ("tf.image.resize", False),
])
def test_stateful_calls_are_those_whose_ops_the_registry_marks_stateful(name: str, stateful: bool) -> None:
    assert stateful_call(name) is stateful


def test_only_weightless_keras_preprocessing_is_known_stateless() -> None:
    assert stateless_keras_call("keras.layers.Rescaling") and stateless_keras_call("keras.layers.Resizing")
    assert stateless_keras_call("keras.applications.resnet50.preprocess_input")
    assert not stateless_keras_call("keras.applications.ResNet50")  # a model: weights are variables
    assert not stateless_keras_call("keras.layers.Dense")


@pytest.mark.parametrize(("text", "release"), [("2.15", (2, 15)), (" 2.4.1 ", (2, 4)), ("2.16.0rc0", (2, 16)),
                                               ("2.17.0.dev20240101", (2, 17)), ("1.15", (1, 15))])
def test_a_release_is_read_as_major_and_minor(text: str, release: tuple[int, int]) -> None:
    assert parse_release(text) == release


@pytest.mark.parametrize("text", ["", "2", "banana", "2.x", "v2.15", "2.15;rm -rf /", "9" * 5000 + ".1",
                                  "2.15\x1b[2J"])
def test_anything_else_is_refused_and_echoed_short(text: str) -> None:
    with pytest.raises(ValueError, match="not a TensorFlow release") as refused:
        parse_release(text)
    assert len(str(refused.value)) < 80 and "\x1b" not in str(refused.value)


# --- SRC103: the map's statefulness and the release ----------------------------------------------------


def test_a_stateless_map_on_an_unknown_release_is_an_info_that_says_why() -> None:
    [(line, level, message)] = src103(TF + STATELESS + FIT)
    assert (line, level) == (5, "info")
    assert message.endswith("(info: TensorFlow 2.5 and later parallelize a stateless map like this one themselves: "
                            "the release this runs on is not known here (--target-tensorflow))")


def test_a_stateless_map_is_silent_on_a_release_that_parallelizes_it_and_a_warning_before() -> None:
    assert src103(TF + STATELESS + FIT, NEW) == []
    assert src103(TF + STATELESS + FIT, Target((2, 5), "--target-tensorflow")) == []
    [(_, level, message)] = src103(TF + STATELESS + FIT, OLD)
    assert (level, message) == ("warning", "Dataset.map() without num_parallel_calls processes one element at a time")
    finding = lint(TF + STATELESS + FIT, select=("SRC103",), target=OLD).findings[0]
    assert finding.grounds["runs-one-at-a-time"] == ("TensorFlow 2.4 (--target-tensorflow): tf.data parallelizes "
                                                     "a stateless map itself only from 2.5")


@pytest.mark.parametrize("work", [
    "    return tf.image.random_flip_left_right(tf.io.decode_jpeg(tf.io.read_file(path))), label\n",
    "    return tf.py_function(load, [path], tf.uint8), label\n",
    "    return tf.numpy_function(load, [path], tf.uint8), label\n",
    "    tf.print(path)\n    return tf.io.decode_jpeg(tf.io.read_file(path)), label\n",
    "    return tf.io.decode_jpeg(tf.io.read_file(path)) + tf.random.uniform([]), label\n",
    "    return tf.io.decode_jpeg(tf.io.read_file(path)) + generator.normal([]), label\n",
    "    return augment(tf.io.decode_jpeg(tf.io.read_file(path))), label\n",  # a Keras random layer, below
])
def test_a_stateful_map_stays_sequential_on_every_release_so_it_warns(work: str) -> None:
    layers = "augment = tf.keras.Sequential([tf.keras.layers.RandomFlip(), tf.keras.layers.Rescaling(1 / 255)])\n"
    text = TF + layers + "def decode(path, label):\n" + work + FIT
    for target in (None, OLD, NEW):
        assert severity(text, target=target) == ["warning"], target
    finding = lint(text, select=("SRC103",), target=NEW).findings[0]
    assert finding.grounds["runs-one-at-a-time"].startswith("the mapped function is stateful (")


@pytest.mark.parametrize("twin", [
    "    return tf.image.stateless_random_flip_left_right(tf.io.decode_jpeg(tf.io.read_file(path)), seed), label\n",
    "    return rescale(tf.io.decode_jpeg(tf.io.read_file(path))), label\n",  # a weightless Keras layer, below
])
def test_their_stateless_twins_are_silent_where_tf_data_parallelizes_them(twin: str) -> None:
    text = TF + "rescale = tf.keras.layers.Rescaling(1 / 255)\n" + "def decode(path, label):\n" + twin + FIT
    assert severity(text, target=NEW) == []
    assert severity(text) == ["info"]


def test_a_function_of_another_module_on_a_parallelizing_release_is_an_info() -> None:
    text = TF + "from myproject.images import decode\n" + FIT
    [(_, level, message)] = src103(text, NEW)
    assert level == "info"
    assert ("TensorFlow 2.21 (--target-tensorflow) parallelizes a stateless map itself: whether this function is "
            "stateless is not visible here") in message


@pytest.mark.parametrize("off", [
    "options.experimental_optimization.map_parallelization = False\n",
    "options.experimental_optimization.apply_default_optimizations = False\n",
    "options.autotune.enabled = False\n",
])
def test_a_file_that_switches_the_rewrite_off_gets_the_warning(off: str) -> None:
    text = TF + STATELESS + "options = tf.data.Options()\n" + off + FIT
    assert severity(text, target=NEW) == ["warning"]
    finding = lint(text, select=("SRC103",), target=NEW).findings[0]
    assert finding.grounds["runs-one-at-a-time"].startswith("the file switches tf.data's map parallelization off")
    # the healthy twin: the option set to True
    assert severity(text.replace("= False", "= True"), target=NEW) == []


def test_asking_for_one_call_at_a_time_is_a_warning_and_synchronous_is_respected() -> None:
    one = TF + STATELESS + "ds = tf.data.TFRecordDataset(files).map(decode, num_parallel_calls=1).batch(32)\n" \
        "model.fit(ds)\n"
    assert severity(one, target=NEW) == ["warning"]
    synchronous = one.replace("num_parallel_calls=1", "synchronous=True")
    assert severity(synchronous, target=OLD) == []  # sequential on purpose (2.18+: it saves a buffer)


def test_tensorflow_1_code_says_its_release_itself() -> None:
    session = "sess = tf.Session()\n"
    [(_, level, _message)] = src103(TF + STATELESS + session + FIT)
    assert level == "warning"
    finding = lint(TF + STATELESS + session + FIT, select=("SRC103",)).findings[0]
    assert finding.grounds["runs-one-at-a-time"] == ("TensorFlow 1 code (tf.Session): tf.data parallelizes a "
                                                     "stateless map itself only from 2.5")
    # tf.compat.v1 runs on TensorFlow 2: it says nothing of the release
    assert severity(TF + STATELESS + "sess = tf.compat.v1.Session()\n" + FIT) == ["info"]
    compat = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nsess = tf.Session()\n"
    assert severity(compat + STATELESS + FIT) == ["info"]
    assert severity(TF + STATELESS + FIT.replace("model.fit(ds)", "it = ds.make_one_shot_iterator()\n"
                                                  "train_op = opt.minimize(loss_of(it.get_next()))")) == ["warning"]


# --- SRC102: the prefetch tf.data adds itself from 2.11 ------------------------------------------------

PIPELINE = (TF + STATELESS + "ds = tf.data.TFRecordDataset(files).map(decode, num_parallel_calls=8).batch(32)\n"
            "model.fit(ds)\n")


def test_a_missing_prefetch_depends_on_the_release() -> None:
    assert severity(PIPELINE, "SRC102", Target((2, 11), "--target-tensorflow")) == []
    assert severity(PIPELINE, "SRC102", Target((2, 10), "--target-tensorflow")) == ["warning"]
    [finding] = lint(PIPELINE, select=("SRC102",)).findings
    assert finding.severity.label == "info"
    assert finding.message.endswith("(info: TensorFlow 2.11 and later end such a pipeline with a prefetch "
                                    "themselves: the release this runs on is not known here (--target-tensorflow))")


def test_a_missing_prefetch_in_tensorflow_1_code_or_with_the_injection_off_warns() -> None:
    assert severity(TF + "sess = tf.Session()\n" + PIPELINE, "SRC102") == ["warning"]
    off = PIPELINE + "options = tf.data.Options()\noptions.experimental_optimization.inject_prefetch = False\n"
    assert severity(off, "SRC102", NEW) == ["warning"]


# --- how the release is given ---------------------------------------------------------------------------


def run(capsys, monkeypatch, tmp_path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TF + STATELESS + FIT, encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--select", "SRC103", *args, "train.py"])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_the_flag_names_the_release_and_the_summary_says_so(capsys, monkeypatch, tmp_path) -> None:
    code, out, err = run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.4")
    assert code == 0 and out.startswith("train.py:5:")
    assert err == "tfdoctor lint: 1 file(s): 1 warning; as on TensorFlow 2.4 (--target-tensorflow)\n"
    assert run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.21")[1:] == (
        "", "tfdoctor lint: 1 file(s): no findings; as on TensorFlow 2.21 (--target-tensorflow)\n")
    # not given, not known: the info, and no release claimed
    code, out, err = run(capsys, monkeypatch, tmp_path)
    assert "(info: TensorFlow 2.5 and later" in out and "as on" not in err


def test_installed_reads_the_release_beside_tfdoctor(capsys, monkeypatch, tmp_path) -> None:
    import tfdoctor.lint.target as target

    monkeypatch.setattr(target, "installed", lambda: Target((2, 21), "installed: tensorflow-cpu 2.21.0"))
    code, out, err = run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "installed")
    assert (code, out) == (0, "")
    assert err.endswith("as on TensorFlow 2.21 (installed: tensorflow-cpu 2.21.0)\n")
    monkeypatch.setattr(target, "installed", lambda: None)
    code, out, err = run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "installed")
    assert code == 2 and "no TensorFlow distribution on this Python's path" in err and "Traceback" not in err


def test_installed_is_read_from_the_dist_info_folders_of_the_path(tmp_path) -> None:
    """A site-packages as pip leaves it: the distribution's dist-info folder names the version (the folder's
    files are not read: a METADATA planted as a FIFO or a gigabyte costs nothing)."""
    from tfdoctor.lint.target import installed

    site = tmp_path / "site-packages"
    (site / "tensorflow").mkdir(parents=True)
    dist = site / "tensorflow_cpu-2.21.0.dist-info"
    dist.mkdir()
    os.mkfifo(dist / "METADATA")
    assert installed([str(site)]) == Target((2, 21), "installed: tensorflow-cpu 2.21.0")
    # the healthy twin of the question: no TensorFlow on the path
    assert installed([str(tmp_path / "empty"), str(tmp_path)]) is None
    # a first path entry shadows a later one, as the import system does
    first = tmp_path / "user-site"
    (first / "tensorflow-2.15.1.dist-info").mkdir(parents=True)
    assert installed([str(first), str(site)]) == Target((2, 15), "installed: tensorflow 2.15.1")


def test_a_release_that_is_not_one_exits_2_with_the_reason(capsys, monkeypatch, tmp_path) -> None:
    code, out, err = run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "latest")
    assert code == 2 and out == ""
    assert "not a TensorFlow release: 'latest' (e.g. 2.15)" in err and "Traceback" not in err


def test_the_setting_names_the_release_and_the_flag_overrides_it(capsys, monkeypatch, tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tfdoctor.lint]\ntarget-tensorflow = "2.4"\n', encoding="utf-8")
    code, out, err = run(capsys, monkeypatch, tmp_path)
    assert code == 0 and out.startswith("train.py:5:") and "as on TensorFlow 2.4 (target-tensorflow in " in err
    assert run(capsys, monkeypatch, tmp_path, "--target-tensorflow", "2.21")[1] == ""
    (tmp_path / "pyproject.toml").write_text("[tool.tfdoctor.lint]\ntarget-tensorflow = 2.4\n", encoding="utf-8")
    code, _, err = run(capsys, monkeypatch, tmp_path)
    assert code == 2 and 'target-tensorflow must be a release in quotes (e.g. "2.15")' in err


def test_json_findings_carry_the_grounds_the_release_decided(capsys, monkeypatch, tmp_path) -> None:
    _, out, _ = run(capsys, monkeypatch, tmp_path, "--format", "json", "--target-tensorflow", "2.4")
    [finding] = json.loads(out)["findings"]
    assert finding["severity"] == "warning"
    assert finding["grounds"]["runs-one-at-a-time"].startswith("TensorFlow 2.4 (--target-tensorflow)")


def test_the_docs_example_of_the_release_prints_what_it_says(capsys, monkeypatch, tmp_path) -> None:
    """docs/lint.md's block under "The release the code runs on", command by command, on the docs' own
    pipeline.py (tests/test_docs_examples.py writes the same file for the docs run), the installed release
    fixed to the block's."""
    from pathlib import Path

    import test_docs_examples

    import tfdoctor.lint.target as target

    docs = (Path(__file__).resolve().parent.parent / "docs" / "lint.md").read_text(encoding="utf-8")
    section = docs.split("### The release the code runs on", 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipeline.py").write_text(test_docs_examples.PIPELINE_PY, encoding="utf-8")
    monkeypatch.setattr(target, "installed", lambda: Target((2, 21), "installed: tensorflow-cpu 2.21.0"))
    runs = block.split("$ ")[1:]
    assert len(runs) == 3
    for run_ in runs:
        command, *expected = run_.rstrip("\n").split("\n")
        args = command.split("  #")[0].split()[1:]  # after `tfdoctor`
        with pytest.raises(SystemExit):
            main(args)
        out, err = capsys.readouterr()
        assert (out + err).splitlines() == expected, command


def test_worker_processes_lint_for_the_same_release(tmp_path) -> None:
    """A tree large enough for worker processes: each forked worker lints for the release it was given."""
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths

    files = []
    for i in range(80):  # over runner._PARALLEL_FROM
        path = tmp_path / f"train{i:02}.py"
        path.write_text(TF + STATELESS + FIT, encoding="utf-8")
        files.append(path)
    rules = select_lint_rules(load_lint_rules().rules, ["SRC103"])
    old = lint_paths(files, rules, jobs=2, walked=files, target=OLD)
    assert (old.files, [f.severity.label for f in old.findings]) == (80, ["warning"] * 80)
    assert lint_paths(files, rules, jobs=2, walked=files, target=NEW).findings == []
    unknown = lint_paths(files, rules, jobs=2, walked=files)
    assert [f.severity.label for f in unknown.findings] == ["info"] * 80
