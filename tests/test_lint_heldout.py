"""Issue 25, second round: the rule classes the first held-out sample revealed (benchmarks/lint_corpus/
heldout_labels.csv). Each case is modelled on a shape seen there; false positives stay silent, misses fire."""

from __future__ import annotations

from lint_support import lint

TF = "import tensorflow as tf\n"
DECODE = ("def decode(path, label):\n    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
          "    return tf.image.resize(image, [224, 224]), label\n")
READ = TF + DECODE + "ds = tf.data.Dataset.from_tensor_slices((paths, labels))\n"


def codes(text: str, select: tuple[str, ...] = ("SRC102", "SRC103", "SRC107")) -> list[str]:
    report = lint(text, select=select)
    assert report.crashes == []
    return [f"{f.code}:{f.line}" for f in report.findings]


# --- SRC102: work that already overlaps the step -------------------------------------------------------


def test_cached_batches_need_no_prefetch():
    # tensorflow/recommenders: `cached_train = train.shuffle(100_000).batch(8192).cache()` then fit.
    text = READ + "train = ds.map(decode, num_parallel_calls=8).batch(64).cache()\nmodel.fit(train, epochs=3)\n"
    assert codes(text, ("SRC102",)) == []


def test_cache_passed_straight_to_fit_needs_no_prefetch():
    text = READ + "train = ds.map(decode, num_parallel_calls=8).batch(64)\nmodel.fit(train.cache(), epochs=3)\n"
    assert codes(text, ("SRC102",)) == []


def test_parallel_map_feeding_fit_directly_runs_ahead():
    # deep-learning-with-python: a batched loader, then `.map(prepare, num_parallel_calls=4)` into fit.
    text = READ + "train = ds.batch(64).map(decode, num_parallel_calls=4)\nmodel.fit(train, epochs=3)\n"
    assert codes(text, ("SRC102",)) == []


def test_batch_after_a_parallel_map_still_needs_prefetch():
    text = READ + "train = ds.map(decode, num_parallel_calls=4).batch(64)\nmodel.fit(train, epochs=3)\n"
    assert codes(text, ("SRC102",)) == ["SRC102:7"]


def test_work_after_the_cache_still_needs_prefetch():
    text = READ + "train = ds.cache().map(decode, num_parallel_calls=4).batch(64)\nmodel.fit(train, epochs=3)\n"
    assert codes(text, ("SRC102",)) == ["SRC102:7"]
