"""How lint's CPU time grows with the size of a hostile file, per shape of file (issue 39, item 7; "every read
bounded in size and time"): a scan made once per finding is linear on real code and quadratic on a generated
file of thousands of the same piece.

    python benchmarks/lint_growth.py [--n 300] [--baseline COMMIT] [--only SHAPE ...] [--fail-over 8]

Each shape is one piece of code repeated n times, then 4n times (a map of a file's pipeline, a function
compiled with XLA and its loop, a caller of a helper's pipeline, ...), linted with every rule, the preview
rules too, in a fresh interpreter per tree (this tree, and `--baseline`'s tfdoctor/ from `git archive`, in the
same run); the best of three CPU times of each is printed, and its growth (4n over n). Linear is about 4x;
quadratic about 16x once the quadratic part dominates. `--fail-over G` exits 1 when a shape of this tree grows
more than G times (on a loaded machine small n are noisy: compare with the baseline, same run).

Exit codes: 0 measured; 1 a shape grew over `--fail-over`; 2 usage error (an unknown shape, a baseline git does
not know, an n under 10).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
OUTPUT_LIMIT = 1024 * 1024  # what a measuring interpreter may print back: a few numbers per shape

_H = "import tensorflow as tf\nimport os\nfrom tensorflow.keras import layers\n"
_STEP = ("def step(x):\n    with tf.GradientTape() as t:\n        l = m(x)\n"
         "    opt.apply_gradients(zip(t.gradient(l, v), v))\n")
_MAKE = "def make():\n    return tf.data.TFRecordDataset('a').map(tf.io.decode_jpeg)\n"


def _fan(n: int) -> str:
    lines = [_H, "z1 = tf.data.Dataset.zip((tf.data.TFRecordDataset('a'), tf.data.TFRecordDataset('b')))\n"]
    for level in (1, 2, 3):
        lines += [f"m{level}_{i} = z{level}.map(tf.io.decode_jpeg)\n" for i in range(n // 3)]
        lines.append(f"z{level + 1} = tf.data.Dataset.zip(({', '.join(f'm{level}_{i}' for i in range(n // 3))},))\n")
    return "".join(lines) + "model.fit(z4.map(tf.io.decode_jpeg))\n"


# name -> (what it is, the file for n pieces). Each piece is a few lines; n = 300 is a 1,000-line file.
SHAPES: dict[str, tuple[str, object]] = {
    "chained-maps": ("`ds = ds.map(f)` n times, then fit", lambda n: _H + "ds = tf.data.TFRecordDataset('a')\n"
                     + "ds = ds.map(tf.io.decode_jpeg)\n" * n + "model.fit(ds)\n"),
    "fit-without-prefetch": ("n pipelines over files, each mapped and fit on", lambda n: _H + "".join(
        f"d{i} = tf.data.TFRecordDataset('a{i}').map(tf.io.decode_jpeg).batch(8)\nmodel.fit(d{i})\n"
        for i in range(n))),
    "merges-fanning-out-and-in": ("three rounds of n/3 maps of one zip, zipped again", _fan),
    "helper-called-everywhere": ("n functions fitting on a helper's pipeline", lambda n: _H + _MAKE + "".join(
        f"def use{i}():\n    model.fit(make().batch(8))\nuse{i}()\n" for i in range(n))),
    "helper-mapped-everywhere": ("n callers each mapping a helper's pipeline again", lambda n: _H + _MAKE + "".join(
        f"def use{i}():\n    model.fit(make().batch(8).map(tf.image.flip_left_right))\nuse{i}()\n"
        for i in range(n))),
    "helpers-returning-helpers": ("n helpers, each mapping the one before", lambda n: _H + "".join(
        f"def h{i}():\n    return {f'h{i - 1}()' if i else 'tf.data.TFRecordDataset(0)'}.map(tf.io.decode_jpeg)\n"
        for i in range(n)) + f"model.fit(h{n - 1}())\n"),
    "eager-steps": ("n eager steps, each called in a loop over files", lambda n: _H + "".join(
        f"def step{i}(x):\n    with tf.GradientTape() as t:\n        l = m(x)\n"
        f"    opt.apply_gradients(zip(t.gradient(l, v), v))\nfor x in tf.data.TFRecordDataset('a'):\n    step{i}(x)\n"
        for i in range(n))),
    "loops-over-files": ("n loops calling one eager step", lambda n: _H + _STEP + "".join(
        f"for e in range(100):\n    for x in tf.data.TFRecordDataset('a{i}'):\n        step(x)\n" for i in range(n))),
    "xla-functions": ("n functions compiled with XLA, each in a loop over a padded_batch", lambda n: _H + "".join(
        f"@tf.function(jit_compile=True)\ndef g{i}(x):\n    return x * 2\n"
        f"for b in tf.data.TFRecordDataset('a').padded_batch(8):\n    g{i}(b)\n" for i in range(n))),
    "loops-beside-functions": ("n loops over pipelines beside n functions", lambda n: _H + "".join(
        f"def f{i}(x):\n    return x\nfor b in tf.data.TFRecordDataset('a{i}').batch(8):\n    train_step(b)\n"
        for i in range(n))),
    "interleaves": ("n parallel interleaves of a reader of this file", lambda n: _H + "".join(
        f"def rd{i}(f):\n    return tf.data.TFRecordDataset(f).map(tf.io.decode_jpeg)\n"
        f"d{i} = tf.data.Dataset.list_files('*').interleave(rd{i}, num_parallel_calls=4)\nmodel.fit(d{i})\n"
        for i in range(n))),
    "py-functions": ("n maps running tf.py_function before a shard", lambda n: _H + "".join(
        f"d{i} = tf.data.Dataset.range(10).map(lambda x: tf.py_function(f, [x], tf.int64)).shard(2, 0)\n"
        f"model.fit(d{i})\n" for i in range(n))),
    "layers": ("n convolutions with a bias before a batch norm, channels first, in mixed precision",
               lambda n: _H + "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
               "m = tf.keras.Sequential([\n" + "".join(
                   "    layers.Conv2D(30, 3, use_bias=True, data_format='channels_first'),\n"
                   "    layers.BatchNormalization(),\n    layers.Dense(30, activation='softmax'),\n"
                   for _ in range(n)) + "])\n"),
    "profiler-steps": ("n loops pulling the next batch outside the profiler's step", lambda n: _H + "".join(
        f"it{i} = iter(ds)\nfor s in range(100):\n    b = next(it{i})\n"
        f"    with tf.profiler.experimental.Trace('train', step_num=s):\n        step(b)\n" for i in range(n))),
    "environment-and-sessions": ("n CUDA_VISIBLE_DEVICES writes and TF1 sessions", lambda n: _H + "".join(
        f"os.environ['CUDA_VISIBLE_DEVICES'] = '{i}'\n"
        f"c{i} = tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(report_tensor_allocations_upon_oom="
        f"True))\ns{i} = tf.compat.v1.Session(config=c{i})\n" for i in range(n))),
}

# Run with the tfdoctor to measure first on sys.path: reads {"shape": [text, text]} on standard input, prints
# {"shape": [seconds, seconds]}.
_MEASURE = r"""
import json, sys, time, importlib, pkgutil
import tfdoctor
assert tfdoctor.__file__.startswith(sys.argv[1]), tfdoctor.__file__
import tfdoctor.lint.rules as rules_pkg
from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import lint_text
modules = [importlib.import_module(f"tfdoctor.lint.rules.{m.name}") for m in pkgutil.iter_modules(rules_pkg.__path__)]
rules = select_lint_rules(load_lint_rules(modules).rules, preview=True)
out = {}
for shape, texts in json.load(sys.stdin).items():
    spent = []
    for text in texts:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            lint_text(text, rules, "script.py")
            best = min(best, time.process_time() - start)
        spent.append(best)
    out[shape] = spent
print(json.dumps(out))
"""


def measure(source: Path, texts: dict[str, list[str]], timeout: float) -> dict[str, list[float]]:
    """CPU seconds of each text of each shape, linted by the tfdoctor package under `source`."""
    import packaging  # lint's only import outside the standard library: found beside it, not in site-packages

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(Path(packaging.__file__).parent.parent)])}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = subprocess.run([sys.executable, "-S", "-c", _MEASURE, str(source)], input=json.dumps(texts).encode(),
                                  stdout=out, stderr=err, env=env, cwd=source, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            sys.exit(f"lint_growth: the linter under {source} took over {timeout:g} s (--timeout) and was ended")
        out.seek(0)
        err.seek(0, os.SEEK_END)
        err.seek(max(0, err.tell() - 800))
        if done.returncode:
            sys.exit(f"lint_growth: the linter under {source} failed: {err.read().decode(errors='replace').strip()}")
        answer = out.read(OUTPUT_LIMIT + 1)  # a few numbers per shape
    if len(answer) > OUTPUT_LIMIT:
        sys.exit(f"lint_growth: the linter under {source} printed over {OUTPUT_LIMIT:,} bytes, not a measurement")
    return json.loads(answer)


def extract(ref: str, dest: Path) -> None:
    """tfdoctor/ as it is at `ref`, under `dest`; a ref git does not know is a message and exit 2."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--", ref, "tfdoctor"], capture_output=True,
                             check=False)
    if archive.returncode:
        print(f"lint_growth: --baseline {ref}: {archive.stderr.decode(errors='replace').strip()[-300:]}",
              file=sys.stderr)
        raise SystemExit(2)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def main(argv: list[str] | None = None) -> int:
    from tfdoctor.terminal import write  # fits lines to a terminal (and shows control characters, were any there)


    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="pieces in the smaller file (the larger has 4n)")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure tfdoctor/ at this commit, same run")
    parser.add_argument("--only", nargs="+", metavar="SHAPE", help=f"shapes to measure: {', '.join(SHAPES)}")
    parser.add_argument("--fail-over", type=float, metavar="G", help="exit 1 when a shape of this tree grows over G")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for one tree's measurement")
    args = parser.parse_args(argv)
    if args.n < 10:
        parser.error(f"--n {args.n}: give 10 or more")
    unknown = sorted(set(args.only or ()) - set(SHAPES))
    if unknown:
        parser.error(f"--only: no shape {', '.join(unknown)} (shapes: {', '.join(SHAPES)})")
    if args.fail_over is not None and not args.fail_over > 1:
        parser.error(f"--fail-over {args.fail_over:g}: give a growth above 1")
    chosen = [s for s in SHAPES if not args.only or s in args.only]
    texts = {s: [SHAPES[s][1](args.n), SHAPES[s][1](4 * args.n)] for s in chosen}  # type: ignore[operator]
    trees = {"this tree": measure(ROOT, texts, args.timeout)}
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="tfdoctor-growth-") as tmp:
            extract(args.baseline, Path(tmp))
            trees[args.baseline] = measure(Path(tmp), texts, args.timeout)
    lines = [f"lint's CPU seconds (best of 3, every rule with the preview ones) at n = {args.n} and 4n, and the growth"]
    header = f"{'shape':28}" + "".join(f"  {name[:12]:>12} n  {'4n':>7}  growth" for name in trees)
    lines.append(header)
    over = []
    for shape in chosen:
        row = f"{shape:28}"
        for name, spent in trees.items():
            small, large = spent[shape]
            growth = large / max(small, 1e-4)
            row += f"  {small:14.3f}  {large:7.3f}  {growth:5.1f}x"
            if name == "this tree" and args.fail_over is not None and growth > args.fail_over:
                over.append(f"{shape} ({growth:.1f}x)")
        lines.append(row)
    write("\n".join(lines) + "\n", wrap=True)
    if over:
        write(f"grew over {args.fail_over:g}x: {', '.join(over)}\n", err=True, wrap=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
