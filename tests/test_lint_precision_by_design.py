"""Issue 39: rules that speak only with evidence, loaders known to prefetch, pipelines followed into the
functions of the same file, and fixes that use only the APIs of the TensorFlow the file targets."""

from __future__ import annotations

import pytest
from support.lint_support import BEFORE_REWRITES, lint

from tfdoctor.model import Applicability

TF = "import tensorflow as tf\n"
# Reads, decodes and augments with a random op: work per element that tf.data leaves sequential on every
# release (a stateless function it parallelizes itself from 2.5: tfdoctor/knowledge/tfdata_automatic.toml).
DECODE = ("def decode(path, label):\n    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
          "    return tf.image.random_flip_left_right(tf.image.resize(image, [224, 224])), label\n")


def codes(text: str, select: tuple[str, ...] = ("SRC102", "SRC103")) -> list[str]:
    report = lint(text, select=select)
    assert report.crashes == []
    return [f"{f.code}:{f.line}" for f in report.findings]


def fixes(text: str, code: str) -> list[tuple[str, Applicability]]:
    report = lint(text, select=(code,))
    return [(e.text.lstrip(", "), f.fix.applicability) for f in report.findings for e in f.fix.edits]


# --- loaders that prefetch themselves (tf.data's CSV reader, Keras' timeseries and audio loaders) -------


@pytest.mark.parametrize("loader", [
    "tf.data.experimental.make_csv_dataset(files, batch_size=32, label_name='y')",
    "tf.data.experimental.make_batched_features_dataset(files, 32, features)",
    "tf.keras.utils.timeseries_dataset_from_array(data, targets, sequence_length=10)",
    "tf.keras.utils.audio_dataset_from_directory(folder)",
])
def test_loaders_that_end_with_their_own_prefetch_need_none(loader: str) -> None:
    assert codes(TF + f"train = {loader}\nmodel.fit(train, epochs=3)\n") == []


def test_a_csv_reader_told_not_to_prefetch_is_judged() -> None:
    text = TF + "train = tf.data.experimental.make_csv_dataset(files, 32, prefetch_buffer_size=0)\nmodel.fit(train)\n"
    assert codes(text) == ["SRC102:3"]


TFDS = TF + "import tensorflow_datasets as tfds\n"


@pytest.mark.parametrize("pipeline", [
    "train = tfds.load('mnist', split='train').batch(32)",
    "train = tfds.load('mnist', split='train').shuffle(1000).repeat().batch(32)",
    "train = tfds.load('mnist', split='train', read_config=tfds.ReadConfig(shuffle_seed=1)).batch(32)",
])
def test_a_tfds_pipeline_only_regrouped_after_its_own_prefetch_needs_none(pipeline: str) -> None:
    """TFDS's _build_single_dataset ends with prefetch(AUTOTUNE): batching what it prefetched leaves nothing
    to overlap (as for the Keras loaders and tf.data's CSV reader since issue 25)."""
    assert codes(TFDS + pipeline + "\nmodel.fit(train, epochs=3)\n", ("SRC102",)) == []


@pytest.mark.parametrize("pipeline", [
    "train = tfds.load('mnist', split='train').map(lambda x: (x['image'], x['label'])).shuffle(1000).batch(32)",
    "train = tfds.builder('mnist').as_dataset(split='train').map(lambda x: tf.cast(x['image'], tf.float32)).batch(32)",
])
def test_a_cheap_map_after_a_tfds_prefetch_is_a_lead_not_a_warning(pipeline: str) -> None:
    """A map that selects or casts after TFDS's own prefetch: little left to overlap, said at info with the
    reason (tensorflow/addons' triplet-loss tutorial is labelled true on the development corpus)."""
    report = lint(TFDS + pipeline + "\nmodel.fit(train, epochs=3)\n", select=("SRC102",))
    [finding] = report.findings
    assert (finding.code, finding.line, finding.severity.label) == ("SRC102", 4, "info")
    assert finding.grounds["work-not-overlapped"].startswith("not shown: tfds")
    assert "prefetches itself; only a map that selects or casts follows" in finding.message


@pytest.mark.parametrize("pipeline", [
    # work per element after the loader's prefetch: the map runs on the consumer's side
    "train = tfds.load('mnist', split='train').map(augment).batch(32)",
    # told not to prefetch
    "train = tfds.load('mnist', split='train', read_config=tfds.ReadConfig(skip_prefetch=True)).batch(32)",
])
def test_a_tfds_pipeline_that_works_after_the_loader_or_skips_its_prefetch_is_judged(pipeline: str) -> None:
    augment = "def augment(x):\n    return tf.image.random_flip_left_right(tf.io.decode_jpeg(x['raw'])), x['label']\n"
    assert codes(TFDS + augment + pipeline + "\nmodel.fit(train, epochs=3)\n", ("SRC102",)) == ["SRC102:6"]


def test_a_tfds_read_config_lint_cannot_read_makes_the_prefetch_unknown_not_absent() -> None:
    """`read_config=config` may or may not skip TFDS's prefetch: an info naming why, never a warning; a
    literal ReadConfig without skip_prefetch is read (silent), one with it is a warning (above)."""
    text = TFDS + "train = tfds.load('mnist', split='train', read_config=config).batch(32)\nmodel.fit(train)\n"
    [finding] = lint(text, select=("SRC102",)).findings
    assert finding.severity.label == "info"
    assert finding.grounds["work-not-overlapped"] == (
        "not shown: tfds.load's read_config is not visible here: it may or may not skip its prefetch")
    literal = TFDS + ("train = tfds.load('mnist', split='train', read_config=tfds.ReadConfig(shuffle_seed=1))"
                      ".batch(32)\nmodel.fit(train)\n")
    assert lint(literal, select=("SRC102",)).findings == []


# --- fixes in the TensorFlow the file targets ---------------------------------------------------------

TF2_SCRIPT = TF + DECODE + "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"


def test_a_tensorflow_2_script_gets_the_core_autotune() -> None:
    assert fixes(TF2_SCRIPT, "SRC103") == [("num_parallel_calls=tf.data.AUTOTUNE", Applicability.SAFE)]
    assert fixes(TF2_SCRIPT, "SRC102") == [(".prefetch(tf.data.AUTOTUNE)", Applicability.SAFE)]


@pytest.mark.parametrize("era", [
    "sess = tf.Session()\n",
    "x = tf.placeholder(tf.float32, [None, 10])\n",
    "if not hasattr(tf.data, 'AUTOTUNE'):\n    print('old TensorFlow')\n",
])
def test_a_tensorflow_1_script_gets_the_autotune_every_release_since_1_13_has(era: str) -> None:
    text = TF + DECODE + era + "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"
    assert fixes(text, "SRC103") == [("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.SAFE)]
    assert fixes(text, "SRC102") == [(".prefetch(tf.data.experimental.AUTOTUNE)", Applicability.SAFE)]


@pytest.mark.parametrize("binding", [
    "try:\n    AUTOTUNE = tf.data.AUTOTUNE\nexcept AttributeError:\n    AUTOTUNE = tf.data.experimental.AUTOTUNE\n",
    "AUTOTUNE = tf.data.AUTOTUNE if hasattr(tf.data, 'AUTOTUNE') else tf.data.experimental.AUTOTUNE\n",
    "AUTOTUNE = getattr(tf.data, 'AUTOTUNE', tf.data.experimental.AUTOTUNE)\n",
    "AUTOTUNE = tf.data.experimental.AUTOTUNE\n",
])
def test_the_files_own_guard_that_binds_autotune_is_the_name_used(binding: str) -> None:
    text = TF + binding + DECODE + "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"
    assert fixes(text, "SRC103") == [("num_parallel_calls=AUTOTUNE", Applicability.SAFE)]


@pytest.mark.parametrize("holder", [
    # james77777778/keras-aug's guides/quick_start.py (tenth held-out set): the finding's own statement
    # ends with .prefetch(tf.data.AUTOTUNE); stop 45 wrote `num_parallel_calls=train_dataset`
    "train = (tf.data.TFRecordDataset(files)\n    .map(decode)\n    .prefetch(tf.data.AUTOTUNE))\n",
    # an earlier pipeline that names AUTOTUNE somewhere in its value: a dataset, not AUTOTUNE
    "other = tf.data.TFRecordDataset(files).map(decode, num_parallel_calls=tf.data.AUTOTUNE)\n"
    "train = tf.data.TFRecordDataset(files).map(decode).prefetch(1)\n",
])
def test_a_name_whose_value_only_holds_autotune_is_not_written_as_autotune(holder: str) -> None:
    text = TF + DECODE + holder + "model.fit(train)\n"
    assert fixes(text, "SRC103") == [("num_parallel_calls=tf.data.AUTOTUNE", Applicability.SAFE)]


def test_a_name_bound_after_the_line_is_not_used() -> None:
    text = TF + DECODE + ("ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"
                          "AUTOTUNE = tf.data.experimental.AUTOTUNE\n")
    # the file binds its own AUTOTUNE only later, and names the experimental one: a TF1-era file
    assert fixes(text, "SRC103") == [("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.SAFE)]


def test_a_contrib_data_script_gets_no_safe_edit() -> None:
    text = TF + DECODE + ("ds = tf.data.TFRecordDataset(files).map(decode)\n"
                          "ds = ds.apply(tf.contrib.data.batch_and_drop_remainder(32))\nmodel.fit(ds)\n")
    assert fixes(text, "SRC103") == [("num_parallel_calls=tf.data.experimental.AUTOTUNE", Applicability.UNSAFE)]


# --- a pipeline handed to a training function of the same file -----------------------------------------

TRAIN_LOOP = ("def train(model, data, epochs):\n    for epoch in range(epochs):\n"
              "        for images, labels in data:\n            model.train_on_batch(images, labels)\n")


def test_a_pipeline_handed_to_a_training_loop_of_the_same_file_is_followed() -> None:
    text = TF + DECODE + TRAIN_LOOP + ("ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\n"
                                       "train(model, ds, 10)\n")
    assert codes(text) == ["SRC103:9", "SRC102:10"]
    [finding] = lint(text, select=("SRC102",)).findings
    assert "consumed by train()" in finding.message


def test_by_keyword_and_through_a_method_of_the_class() -> None:
    text = TF + DECODE + ("class Trainer:\n    def fit_loop(self, data):\n        for x, y in data:\n"
                          "            self.step(x, y)\n    def run(self, files):\n"
                          "        ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\n"
                          "        self.fit_loop(data=ds)\n")
    assert codes(text) == ["SRC103:10", "SRC102:11"]


def test_a_function_that_only_prints_its_pipeline_is_not_training() -> None:
    text = TF + DECODE + ("def show(data):\n    for images, labels in data:\n        print(images.shape)\n"
                          "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nshow(ds)\n")
    assert codes(text) == []


def test_the_splits_of_a_tfds_builder_unpacked_into_a_tuple_are_followed() -> None:
    text = TF + "import tensorflow_datasets as tfds\n" + DECODE + (
        "builder = tfds.builder('imagenet2012')\n"
        "train, test = builder.as_dataset(split=('train', 'validation'), as_supervised=True)\n"
        "train = train.map(decode).batch(64)\nmodel.fit(train)\n")
    assert codes(text) == ["SRC103:8", "SRC102:9"]


# --- the default rule set is decided by held-out precision ---------------------------------------------


def test_rules_below_the_bar_are_preview_and_none_is_kept_on() -> None:
    """Issue 39, item 3: SRC102 and SRC103 were kept on by default as recorded exceptions; both were under the
    bar on the issue's measurement (52 %, 60 %) and on the third held-out set (2 of 3, 77.3 % strict), so they
    became preview rules, like every rule under the bar. Measured by tier on the fifth to seventh held-out
    sets, SRC103's findings that show their evidence clear it and are on again (34 of 41 to the fifteenth with
    the release evidence: a stateful function, TensorFlow 1 code; 34 of 43, under the bar, before the smoke-run
    rules); its info findings (85 of 142) and all of SRC102 (20 of 31 shown) are not. SRC107's shown findings
    clear it on the fifth to fifteenth (64 of 73), its info findings do not (35 of 54). SRC113 was measured
    under it on five sets (8 of 30)."""
    from tfdoctor.knowledge import table
    from tfdoctor.lint.rule import below_the_bar, load_lint_rules, quiet_unproven, select_lint_rules

    assert below_the_bar() == {"SRC101": 0.0, "SRC102": 0.8, "SRC105": 0.0, "SRC106": 0.0,
                               "SRC109": 0.67, "SRC112": 0.0, "SRC113": 0.181, "SRC115": 0.0}
    # SRC102's shown tier reached the bar with the fix its own false findings shaped: held back, with the reason
    assert {row["code"] for row in table("lint_rule_precision").rows if row.get("held_back")} == {"SRC102"}
    assert quiet_unproven() == {"SRC103", "SRC107"}
    rules = load_lint_rules().rules
    default = {r.code for r in select_lint_rules(rules)}
    assert default.isdisjoint(below_the_bar())
    assert {"SRC103", "SRC107"} <= default  # over the bar by their shown tiers
    assert {r.code for r in select_lint_rules(rules) if r.quiet_unproven} == {"SRC103", "SRC107"}
    assert {row["code"] for row in table("lint_rule_precision").rows if row.get("kept_on")} == set()
    # Still there when asked for: by exact code, or all of them with --preview.
    assert {r.code for r in select_lint_rules(rules, select=["SRC101"])} == {"SRC101"}
    assert {r.code for r in select_lint_rules(rules, select=["SRC102", "SRC103"])} == {"SRC102", "SRC103"}
    assert not any(r.quiet_unproven for r in select_lint_rules(rules, select=["SRC102", "SRC103"]))
    assert set(below_the_bar()) <= {r.code for r in select_lint_rules(rules, preview=True)}


def test_a_channels_first_script_is_silent_by_default_and_flagged_when_asked() -> None:
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_text

    text = TF + "x = tf.keras.layers.Conv2D(64, 3, data_format='channels_first')(x)\n"
    assert [f.code for f in lint_text(text, select_lint_rules(load_lint_rules().rules), "train.py").findings] == []
    assert [f.code for f in lint(text, select=("SRC101",)).findings] == ["SRC101"]


# --- toy and in-memory data is not an input pipeline that can starve an accelerator ---------------------

AUG = "def aug(x):\n    return tf.image.random_flip_left_right(x)\n"


@pytest.mark.parametrize("data", [
    "ds = tf.data.Dataset.from_tensors(tf.random.normal([8, 32, 32, 3])).repeat(64).map(aug)\n",
    "vecs = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]\nds = tf.data.Dataset.from_tensor_slices(vecs).map(aug).batch(2)\n",
    "x = np.random.rand(300, 8)\nds = tf.data.Dataset.from_tensor_slices(x).map(aug).batch(32)\n",
])
def test_toy_data_written_in_the_script_is_silent(data: str) -> None:
    assert codes(TF + "import numpy as np\n" + AUG + data + "model.fit(ds, epochs=2)\n") == []


@pytest.mark.parametrize("data, severity", [
    # a synthetic stream without end: large; a name bound twice (which one reaches the call is unknown): the
    # size is not visible, said at info with the reason (issue 39, item 1: evidence, tests/test_lint_evidence.py)
    ("ds = tf.data.Dataset.from_tensors(tf.random.normal([8, 32, 32, 3])).repeat().map(aug)\n", "warning"),
    ("x = np.random.rand(300, 8)\nx = load_features()\nds = tf.data.Dataset.from_tensor_slices(x).map(aug)\n",
     "info"),
])
def test_without_evidence_of_a_small_source_the_rules_still_speak(data: str, severity: str) -> None:
    report = lint(TF + "import numpy as np\n" + AUG + data + "model.fit(ds, epochs=2)\n", select=("SRC102", "SRC103"),
                  target=BEFORE_REWRITES)
    assert [(f.code, f.severity.label) for f in report.findings] == [("SRC103", severity), ("SRC102", severity)]


# --- a rule measured by tier: on for findings that show their evidence, its unproven info findings held back --


def test_the_table_decides_each_tier_of_a_rule_measured_by_tier() -> None:
    from tfdoctor.lint.rule import default_verdicts

    rows = [
        {"code": "SRC900", "precision": 0.5, "shown": {"precision": 0.9}, "unproven": {"precision": 0.3}},
        {"code": "SRC901", "precision": 0.95, "shown": {"precision": 0.7}},  # the tier figure decides, not the old
        {"code": "SRC902", "precision": 0.5, "shown": {"precision": 0.85}, "unproven": {"precision": 0.8}},
        {"code": "SRC903", "precision": 0.6, "kept_on": "a reason"},
        {"code": "SRC904", "precision": 0.6},
        {"code": "SRC905", "precision": 0.8},  # at the bar: on
        {"code": "SRC906", "precision": 0.5, "shown": {"precision": 0.8}, "unproven": {"precision": 0.9},
         "held_back": "a reason"},  # at the bar, held back: preview, every tier
        {"code": "SRC907", "precision": 0.9, "held_back": "a reason"},
    ]
    got = {code: (v.on, v.unproven_on, v.tier) for code, v in default_verdicts(rows, 0.80).items()}
    assert got == {"SRC900": (True, False, "shown"), "SRC901": (False, False, "shown"),
                   "SRC902": (True, True, "shown"), "SRC903": (True, True, "rule"), "SRC904": (False, False, "rule"),
                   "SRC905": (True, True, "rule"), "SRC906": (False, False, "shown"), "SRC907": (False, False, "rule")}


def test_a_rule_on_by_its_shown_tier_holds_back_its_unproven_findings_unless_asked_for_by_code() -> None:
    from dataclasses import replace

    from tfdoctor.lint.render_text import render_summary
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_text

    spec = replace(load_lint_rules().by_code("SRC102"), preview=False, quiet_unproven=True)
    unseen_size = TF + AUG + ("x = load_features()\nds = tf.data.Dataset.from_tensor_slices(x).map(aug).batch(32)\n"
                               "model.fit(ds)\n")
    from_files = TF + DECODE + "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\nmodel.fit(ds)\n"

    default = lint_text(unseen_size, select_lint_rules([spec]), "train.py")
    assert (default.findings, default.held_back) == ([], 1)
    assert "1 held back without the evidence to report them (--select SRC102 shows them at info)" in \
        render_summary(default)
    for asked in (select_lint_rules([spec], select=["SRC102"]), select_lint_rules([spec], preview=True)):
        report = lint_text(unseen_size, asked, "train.py")
        assert [(f.code, f.severity.label) for f in report.findings] == [("SRC102", "info")]
        assert report.held_back == 0
    shown = lint_text(from_files, select_lint_rules([spec]), "train.py", BEFORE_REWRITES)
    assert [(f.code, f.severity.label) for f in shown.findings] == [("SRC102", "warning")]
    # a prefix does not ask for the held-back tier, as it does not switch a preview rule on
    assert lint_text(unseen_size, select_lint_rules([spec], select=["SRC1"]), "train.py").held_back == 1


def test_the_summary_names_the_rules_that_held_something_back_in_this_run(tmp_path) -> None:
    """SRC103 and SRC107 both hold back their info findings by default; the summary's `--select` names the
    ones that did in this run, so a user who copies it gets those findings and no more."""
    from tfdoctor.lint.render_text import render_summary
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths

    step = tmp_path / "train.py"
    step.write_text("import tensorflow as tf\n\nfor x, y in batches:\n    with tf.GradientTape() as tape:\n"
                    "        loss = model(x)\n    grads = tape.gradient(loss, model.trainable_variables)\n"
                    "    opt.apply_gradients(zip(grads, model.trainable_variables))\n", encoding="utf-8")
    data = tmp_path / "data.py"
    data.write_text("import tensorflow as tf\n\n\ndef make_eval(files):\n"
                    "    return tf.data.TFRecordDataset(files).map(tf.io.parse_single_example)\n", encoding="utf-8")
    rules = select_lint_rules(load_lint_rules().rules)
    report = lint_paths([step], rules, walked=[step])
    assert (report.findings, report.held_back_by) == ([], {"SRC107": 1})
    assert render_summary(report).endswith("1 held back without the evidence to report them "
                                           "(--select SRC107 shows them at info)\n")
    report = lint_paths([step, data], rules, walked=[step, data])
    assert (report.findings, report.held_back_by) == ([], {"SRC103": 1, "SRC107": 1})
    assert "2 held back without the evidence to report them (--select SRC103,SRC107 shows them at info)" in \
        render_summary(report)


def test_workers_that_held_back_more_findings_than_there_are_chunks_neither_crash_nor_lose_files(tmp_path) -> None:
    """Merging a worker's held-back counts once rebound the chunk count (stop 45): a tree whose workers held
    back more findings than there were chunks ended in an IndexError (the tenth and eleventh held-out sets
    in benchmarks/lint_speed_others.py), one with fewer re-linted too few of a lost worker's chunks."""
    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths

    steps = ("for x, y in batches:\n    with tf.GradientTape() as tape:\n        loss = model(x)\n"
             "    grads = tape.gradient(loss, model.trainable_variables)\n"
             "    opt.apply_gradients(zip(grads, model.trainable_variables))\n")
    files = []
    for i in range(80):  # enough for worker processes (runner._PARALLEL_FROM): 16 chunks, 80 held back
        path = tmp_path / f"train{i:02}.py"
        path.write_text("import tensorflow as tf\n\n" + steps, encoding="utf-8")
        files.append(path)
    report = lint_paths(files, select_lint_rules(load_lint_rules().rules), jobs=2, walked=files)
    assert (report.files, report.findings, report.held_back_by) == (80, [], {"SRC107": 80})


SHOWN_AND_UNPROVEN = (
    "import tensorflow as tf\n\n\n"
    "def load(path):\n"
    "    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
    "    return tf.image.random_flip_left_right(tf.image.resize(image, (224, 224)))\n\n\n"
    "def make_eval(files):\n"
    "    return tf.data.TFRecordDataset(files).map(tf.io.parse_single_example)\n\n\n"
    "ds = tf.data.Dataset.list_files('/data/train/*.jpg').map(load).batch(64).prefetch(2)\n"
    "model = tf.keras.applications.ResNet50()\n"
    "model.fit(ds, epochs=10)\n")


def test_by_default_src103_reports_what_it_shows_and_holds_back_the_rest(tmp_path, monkeypatch, capsys):
    """The table as committed: SRC103 is on by its shown tier (fifth and sixth held-out sets), so the serial
    decode-and-augment map fit trains on (a random flip: sequential on every release) is a warning, and the
    map returned to callers in other files is held back, counted, and shown at info when SRC103 is asked for
    by its code."""
    import json

    from tfdoctor.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SHOWN_AND_UNPROVEN, encoding="utf-8")

    def lint(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main(["lint", *args, "train.py"])
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    code, out, err = lint()
    assert code == 0
    assert out.splitlines() == ["train.py:13:54: SRC103 map-without-parallel-calls Dataset.map() without "
                                "num_parallel_calls processes one element at a time"]
    assert err == ("tfdoctor lint: 1 file(s): 1 warning; 1 held back without the evidence to report them "
                   "(--select SRC103 shows them at info)\n")
    assert json.loads(lint("--format", "json")[1])["summary"]["held_back"] == 1
    code, out, err = lint("--select", "SRC103")
    assert [line.split(": SRC103")[0] for line in out.splitlines()] == ["train.py:10:43", "train.py:13:54"]
    assert "(info: returned to callers in other files; TensorFlow 2.5 and later parallelize a stateless map" \
        in out.splitlines()[0]
    assert err == "tfdoctor lint: 1 file(s): 1 info, 1 warning\n"


# --- what runs ahead without a .prefetch() (knowledge table lint_running_ahead) ---------------------------

FILES = TF + DECODE
PARSE = "def parse(record):\n    return tf.io.parse_single_example(record, features)\n"


@pytest.mark.parametrize("fused", [
    "tf.data.experimental.map_and_batch(lambda r: parse(r), batch_size=64, num_parallel_batches=4)",
    "tf.contrib.data.map_and_batch(map_func=parse, batch_size=64)",
])
def test_map_and_batch_keeps_a_batch_in_flight_so_its_finding_is_an_info_with_the_reason(fused: str) -> None:
    # the fifth held-out set's ALBERT and ELECTRA pretraining inputs were judged false as missing a prefetch;
    # NVIDIA's BERT input_fns, the same construct, were labelled true on the development corpus before the
    # rubric: kept, at info, with the reason
    records = TF + PARSE + "d = tf.data.TFRecordDataset(files).repeat()\n"
    [finding] = lint(records + f"d = d.apply({fused})\nmodel.fit(d, epochs=3)\n", select=("SRC102",)).findings
    assert (finding.line, finding.severity.label) == (6, "info")
    assert finding.message.endswith("(info: map_and_batch keeps the next batch in flight itself: a prefetch after "
                                    "it overlaps little more)")
    # its healthy twin: the same work, then another transformation applied last, keeps nothing in flight
    report = lint(records + "d = d.map(parse).batch(64).apply(tf.data.experimental.ignore_errors())\n"
                  "model.fit(d, epochs=3)\n", select=("SRC102",), target=BEFORE_REWRITES)
    assert [(f.line, f.severity.label) for f in report.findings] == [(6, "warning")]


PIPELINE = "ds = tf.data.Dataset.list_files(pattern).map(decode, num_parallel_calls=8).batch(64)\n"


@pytest.mark.parametrize("strategy", ["tf.distribute.MirroredStrategy()",
                                      "tf.distribute.experimental.MultiWorkerMirroredStrategy()",
                                      "tf.distribute.TPUStrategy(resolver)"])
def test_fit_in_a_file_that_builds_a_prefetching_strategy_is_an_info_with_the_reason(strategy: str) -> None:
    # the seventh held-out set's lambdal scripts: MirroredStrategy built in one branch, fit after both
    text = (FILES + PIPELINE + "if NUM_GPUS == 1:\n    model = make()\nelse:\n"
            f"    strategy = {strategy}\n    with strategy.scope():\n        model = make()\n"
            "model.fit(ds, epochs=10)\n")
    [finding] = lint(text, select=("SRC102",)).findings
    assert (finding.code, finding.line, finding.severity.label) == ("SRC102", 12, "info")
    name = strategy.split("(")[0].rsplit(".", 1)[-1]
    assert finding.message.endswith(f"(info: the file builds a {name}, whose distributed iterator prefetches a "
                                    "batch to each device when this runs under it)")


@pytest.mark.parametrize("text", [
    FILES + PIPELINE + "model.fit(ds, epochs=10)\n",  # no strategy at all
    FILES + PIPELINE + "strategy = tf.distribute.OneDeviceStrategy('/gpu:0')\nmodel.fit(ds, epochs=10)\n",
    # a strategy in the file, but a plain loop over the undistributed pipeline
    FILES + PIPELINE + "strategy = tf.distribute.MirroredStrategy()\nfor x, y in ds:\n    train_step(x, y)\n",
])
def test_without_a_prefetching_strategy_for_the_consumer_the_warning_stays(text: str) -> None:
    findings = lint(text, select=("SRC102",), target=BEFORE_REWRITES).findings
    assert [(f.code, f.severity.label) for f in findings] == [("SRC102", "warning")]


def test_the_docs_evidence_row_says_what_lint_does_with_what_runs_ahead() -> None:
    """docs/lint.md's work-not-overlapped row once said map_and_batch was silent after it became an info:
    the row's silent and info halves are held to the behaviour tested above."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parent.parent / "docs" / "lint.md").read_text(encoding="utf-8")
    [row] = [line for line in docs.splitlines() if line.startswith("| work-not-overlapped |")]
    silent, info = row.rsplit(" | ", 1)[1].split("; info when ", 1)
    assert "map_and_batch" not in silent and "MirroredStrategy" not in silent
    assert "map_and_batch" in info and "MirroredStrategy" in info and "TPUStrategy" in info
    records = TF + PARSE + "d = tf.data.TFRecordDataset(files).repeat()\n"
    [finding] = lint(records + "d = d.apply(tf.data.experimental.map_and_batch(parse, 64))\nmodel.fit(d)\n",
                     select=("SRC102",)).findings
    assert finding.severity.label == "info"
