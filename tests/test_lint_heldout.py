"""Issue 25, second round: the rule classes the first held-out sample revealed (benchmarks/lint_corpus/
heldout_labels.csv). Each case is modelled on a shape seen there; false positives stay silent, misses fire."""

from __future__ import annotations

from support.lint_support import lint

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


# --- SRC103: what training reads, and what it does not -------------------------------------------------

SPLITS = (TF + "import tensorflow_datasets as tfds\n"
          "splits, info = tfds.load('cats_vs_dogs', split=['train[:80%]', 'train[80%:90%]', 'train[90%:]'],"
          " with_info=True)\n(train_examples, validation_examples, test_examples) = splits\n"
          "def format_image(features):\n    image = tf.image.resize(features['image'], (224, 224)) / 255.0\n"
          "    return image, features['label']\n")


def test_every_split_unpacked_from_a_name_is_followed():
    # dlaicourse: `splits, info = tfds.load(..., with_info=True)` then `(train, val, test) = splits`; the
    # validation and test maps were missed (only the first name was bound to a split).
    text = SPLITS + ("train = train_examples.shuffle(100).map(format_image).batch(32)\n"
                     "val = validation_examples.map(format_image).batch(32)\n"
                     "model.fit(train, epochs=5, validation_data=val)\n")
    assert codes(text, ("SRC103",)) == ["SRC103:8", "SRC103:9"]


def test_retrieval_candidates_for_a_metric_are_not_training_input():
    # tensorflow/recommenders: candidate embeddings computed per batch for a FactorizedTopK metric.
    text = (TF + "import tensorflow_recommenders as tfrs\nmovies = tf.data.TFRecordDataset(files)\n"
            "metrics = tfrs.metrics.FactorizedTopK(candidates=movies.batch(128).map(movie_model))\n"
            "index = tfrs.layers.factorized_top_k.BruteForce(model)\n"
            "index.index_from_dataset(movies.batch(100).map(lambda t: (t, movie_model(t))))\n")
    assert codes(text, ("SRC103",)) == []


def test_a_loop_that_displays_images_does_not_train():
    text = (TF + "raw = tf.data.TFRecordDataset('images.tfrecords')\n"
            "def parse(p):\n    return tf.io.parse_single_example(p, spec)\n"
            "parsed = raw.map(parse)\nfor features in parsed:\n"
            "    image_raw = features['image_raw'].numpy()\n"
            "    display.display(display.Image(data=image_raw))\n")
    assert codes(text, ("SRC103",)) == []


# --- SRC107 --------------------------------------------------------------------------------------------

STEP = ("    for images, labels in train_dataset:\n        with tf.GradientTape() as tape:\n"
        "            loss = loss_fn(labels, model(images, training=True))\n"
        "        grads = tape.gradient(loss, model.trainable_variables)\n"
        "        optimizer.apply_gradients(zip(grads, model.trainable_variables))\n")


def test_an_eager_mode_chosen_by_flag_is_not_flagged():
    # yolov3-tf2: `if FLAGS.mode == 'eager_tf':` (for debugging) else model.fit(...) compiled.
    text = TF + "def main():\n  if FLAGS.mode == 'eager_tf':\n" + STEP.replace("\n    ", "\n      ")[2:] + \
        "  else:\n    model.fit(train_dataset, epochs=10)\n"
    assert codes(text, ("SRC107",)) == []


def test_the_same_loop_without_a_mode_switch_is_flagged():
    text = TF + "def main():\n" + STEP
    assert codes(text, ("SRC107",)) == ["SRC107:2"]


def test_a_step_that_updates_weights_through_a_helper_is_flagged():
    # deep-learning-with-python ch. 2: the from-scratch loop updates weights with assign_sub in a helper.
    text = (TF + "def one_training_step(model, images, labels):\n    with tf.GradientTape() as tape:\n"
            "        loss = tf.reduce_mean(loss_fn(labels, model(images)))\n"
            "    gradients = tape.gradient(loss, model.weights)\n    update_weights(gradients, model.weights)\n"
            "    return loss\ndef update_weights(gradients, weights):\n"
            "    for g, w in zip(gradients, weights):\n        w.assign_sub(g * 1e-3)\n"
            "def fit(model, images, labels, epochs):\n    for epoch in range(epochs):\n"
            "        for batch in range(images.shape[0] // 128):\n"
            "            one_training_step(model, images[batch * 128:], labels[batch * 128:])\n")
    assert codes(text, ("SRC107",)) == ["SRC107:2"]


def test_a_compiled_step_with_a_weight_helper_is_not_flagged():
    text = (TF + "@tf.function\ndef one_training_step(model, images, labels):\n    with tf.GradientTape() as tape:\n"
            "        loss = tf.reduce_mean(loss_fn(labels, model(images)))\n"
            "    gradients = tape.gradient(loss, model.weights)\n    update_weights(gradients, model.weights)\n"
            "def update_weights(gradients, weights):\n    for g, w in zip(gradients, weights):\n"
            "        w.assign_sub(g * 1e-3)\nfor step in range(1000):\n    one_training_step(model, x, y)\n")
    assert codes(text, ("SRC107",)) == []


def test_a_map_per_file_inside_a_parallel_interleave_is_parallel_across_files():
    # deep-learning-with-python ch. 16: read_file maps each text file; interleave runs 32 files at once.
    text = (TF + "def read_file(filename):\n    ds = tf.data.TextLineDataset(filename)\n"
            "    return ds.map(lambda x: tf.strings.regex_replace(x, 'a', 'b'))\n"
            "ds = tf.data.Dataset.from_tensor_slices(files).interleave(read_file, cycle_length=32, "
            "num_parallel_calls={n})\nmodel.fit(ds.batch(128).prefetch(8), epochs=3)\n")
    assert codes(text.format(n=32), ("SRC103",)) == []
    assert codes(text.format(n=1), ("SRC103",)) == ["SRC103:4"]


# --- the shared index (issue 25, "one pass"): what the rules read from it ------------------------------


def test_the_index_matches_a_plain_walk():
    import ast

    from tfdoctor.lint.source import SourceModule

    text = (TF + "class A(Base):\n    def f(self, x, *a, k=1, **kw):\n        for i in range(3):\n"
            "            with tf.GradientTape() as t:\n                y = [g(v) for v in x if v]\n"
            "        return {k: h(v) for k, v in kw.items()}, lambda q: q.map(p)\n"
            "try:\n    ds = tf.data.Dataset.range(3).map(lambda z: z * 2)\nexcept ValueError as e:\n    pass\n")
    module = SourceModule.from_text(text)
    expected_parents, order = {}, []

    def visit(node):  # a recursive pre-order reference: every child node, every type
        order.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
                continue
            expected_parents[child] = node
            visit(child)

    visit(module.tree)
    assert module.parents == expected_parents
    for kind in {type(n) for n in order}:
        wanted = [n for n in order if type(n) is kind]
        got = module.nodes(kind)
        if kind in (ast.Name, ast.Constant):  # leaves: indexed where found, compared as sets
            assert set(map(id, got)) == set(map(id, wanted))
        else:
            assert got == wanted, kind.__name__
