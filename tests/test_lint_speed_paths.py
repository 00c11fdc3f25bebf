"""Issue 25 (speed) without changing output: a linted file's tree is freed by reference counting, the
garbage collector is paused per file and always resumed, calls are qualified once, display paths are
worked out per folder, and the corpus comparison script reports every difference."""

from __future__ import annotations

import ast
import gc
import os
import resource
import sys
import time
import weakref
from pathlib import Path

import pytest
from support.lint_support import FIXTURES, rules

from tfdoctor.lint import runner
from tfdoctor.lint.rule import LintRuleSpec, lint_rule
from tfdoctor.lint.runner import display_path, lint_paths, lint_text
from tfdoctor.lint.source import SourceModule
from tfdoctor.model import Severity

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

PIPELINE = """\
import tensorflow as tf
from tensorflow import keras

def make(files):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(parse)
    return ds.batch(32)

model = keras.Sequential([keras.layers.Conv2D(8, 3, data_format="channels_first")])
model.fit(make(["a.tfrecord"]), epochs=3)
"""


def test_a_linted_file_is_freed_without_the_garbage_collector(tmp_path, monkeypatch):
    # The dataset flow and the layer index refer back to their module; were they kept, the module and its
    # tree would be a cycle that only a collection frees.
    path = tmp_path / "train.py"
    path.write_text(PIPELINE, encoding="utf-8")
    made: list[weakref.ref] = []
    real_init = SourceModule.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(SourceModule, "__init__", recording_init)
    gc.disable()
    try:
        report = lint_paths([path], rules())
        assert {"SRC101", "SRC102", "SRC103"} <= set(report.codes())  # the shared analyses did run
        assert len(made) == 1 and made[0]() is None
    finally:
        gc.enable()


def test_release_drops_the_derived_analyses_and_they_are_made_again_on_demand():
    module = SourceModule.from_text(PIPELINE)
    calls: list[int] = []

    def count_calls(m: SourceModule) -> int:
        calls.append(1)
        return len(m.calls)

    assert module.derived(count_calls) == module.derived(count_calls) == 7
    module.release()
    assert module.derived(count_calls) == 7 and len(calls) == 2


@lint_rule("SRC998", "always-crashes", Severity.WARNING)
def _crashing(module):
    """A rule that raises, for the test below."""
    raise RuntimeError("boom")


def test_the_collector_resumes_after_each_file_even_when_a_rule_crashes(tmp_path):
    crashing = LintRuleSpec("SRC998", "always-crashes", Severity.WARNING, _crashing)
    path = tmp_path / "train.py"
    path.write_text(PIPELINE, encoding="utf-8")
    seen: list[bool] = []
    probe = LintRuleSpec("SRC997", "probe", Severity.WARNING, lambda m: seen.append(gc.isenabled()) or ())
    assert gc.isenabled()
    report = lint_paths([path], [crashing, probe])
    assert seen == [False]  # paused while the file is linted
    assert gc.isenabled()
    assert len(report.crashes) == 1
    assert report.crashes[0].split(": ", 1)[1].startswith("SRC998 crashed: RuntimeError: boom (at test_lint_speed")
    seen.clear()
    lint_text(PIPELINE, [probe])
    assert seen == [False] and gc.isenabled()


def test_a_caller_that_paused_the_collector_keeps_it_paused():
    gc.disable()
    try:
        lint_text(PIPELINE, rules())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_calls_by_name_agrees_with_call_name_on_every_call_of_the_fixtures():
    checked = 0
    for path in sorted(FIXTURES.glob("*.py")):
        module = SourceModule.from_path(path)
        by_name = module.calls_by_name
        fresh = SourceModule.from_path(path)  # nothing memoised: each call qualified on its own
        for call in fresh.calls:
            name = fresh.imports.qualified(call.func)
            if name is not None:
                assert any(c.lineno == call.lineno and c.col_offset == call.col_offset for c in by_name[name])
                checked += 1
        assert sum(len(v) for v in by_name.values()) == sum(
            fresh.imports.qualified(c.func) is not None for c in fresh.calls)
    assert checked > 100


def test_qualified_names_a_bare_import_an_attribute_chain_and_nothing_else():
    module = SourceModule.from_text("import tensorflow as tf\nfrom keras import layers\nimport numpy\n"
                                    "tf.data.Dataset.range(3)\nlayers.Dense(1)\nnumpy.zeros(2)\nx.y()\nf()()\n")
    names = [module.call_name(c) for c in sorted(module.calls, key=lambda c: (c.lineno, c.col_offset))]
    assert names == ["tf.data.Dataset.range", "keras.layers.Dense", "numpy.zeros", None, None, None]
    assert module.qualified(ast.parse("tf", mode="eval").body) == "tf"


def test_display_paths_below_the_current_folder_through_links_and_outside(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (work / "src" / "a.py").write_text("x = 1\n")
    (outside / "b.py").write_text("x = 1\n")
    os.symlink(work / "src", outside / "linked_src")  # a folder outside that is a link to one inside
    os.symlink(work / "src" / "a.py", outside / "c.py")  # a file outside that links to one inside
    monkeypatch.chdir(work)
    runner._display_dir.cache_clear()
    assert display_path(work / "src" / "a.py") == "src/a.py"
    assert display_path(Path("src/a.py")) == "src/a.py"
    assert display_path(work / "top.py") == "top.py"
    assert display_path(outside / "linked_src" / "a.py") == "src/a.py"
    assert display_path(outside / "c.py") == "src/a.py"
    assert display_path(outside / "b.py") == (outside / "b.py").as_posix()


def test_the_corpus_comparison_names_every_difference():
    from lint_same_findings import differences

    finding = {"path": "a.py", "line": 3, "code": "SRC103", "message": "map without parallel calls"}
    before = {"/r": {"files": 2, "suppressed": 0, "crashes": [], "findings": [finding]}}
    assert differences(before, before) == []
    changed = {"/r": {"files": 2, "suppressed": 1, "crashes": ["a.py: SRC101 crashed"],
                      "findings": [dict(finding, message="other words")]}}
    lines = differences(before, changed)
    assert lines[0] == "/r: suppressed 0 before, 1 after"
    assert lines[1] == "+ /r: \"a.py: SRC101 crashed\""
    assert lines[2].startswith("- /r: ") and "map without parallel calls" in lines[2]
    assert lines[3].startswith("+ /r: ") and "other words" in lines[3]
    twice = {"/r": dict(before["/r"], findings=[finding, finding])}
    assert differences(twice, {"/r": dict(before["/r"], findings=[finding])}) == [
        "/r: the same findings in another order (or repeated)"]
    assert differences(before, {}) == ["/r: files 2 before, None after", "/r: suppressed 0 before, None after",
                                       "- /r: " + __import__("json").dumps(finding, sort_keys=True)]


def test_the_corpus_comparison_summary_and_its_results_file(tmp_path):
    from lint_same_findings import results_header, summary, write_results

    finding = {"path": "a.py", "line": 3, "code": "SRC103", "message": "map without parallel calls"}
    side = {"/r": {"files": 2, "suppressed": 0, "crashes": [], "findings": [finding]},
            "/s": {"files": 5, "suppressed": 1, "crashes": [], "findings": []}}
    assert summary("607f17b", side, side) == ["2 repositories, 7 files; findings at 607f17b: 1, working tree: 1",
                                              "identical"]
    other = {**side, "/s": dict(side["/s"], findings=[finding])}
    lines = summary("607f17b", side, other)
    assert lines[0] == "2 repositories, 7 files; findings at 607f17b: 1, working tree: 2"
    assert lines[1].startswith("+ /s: ") and lines[-1] == "1 differences"
    # a walked run: each repository twice, with the default rules and with the preview ones, counted once
    walked = {"/r (default)": side["/r"], "/r (preview)": dict(side["/r"], findings=[finding, finding]),
              "/s (default)": side["/s"], "/s (preview)": side["/s"]}
    assert summary("607f17b", walked, walked)[0] == (
        "2 repositories, 7 files, each linted with the default rules and with the preview rules; findings at "
        "607f17b: 1 and 2, working tree: 1 and 2")
    header = results_header(["--ref", "607f17b", "--output", "x.txt"], "1882bc7", False, 1795824000.0)
    assert header == ("# python benchmarks/lint_same_findings.py --ref 607f17b --output x.txt, working tree at "
                      "1882bc7, 2026-11-28T00:00:00Z")
    assert results_header([], "1882bc7", True, 1795824000.0) == (
        "# python benchmarks/lint_same_findings.py, working tree at 1882bc7 with uncommitted changes, "
        "2026-11-28T00:00:00Z")
    out = tmp_path / "lint_same_findings-2026-11-28.txt"
    write_results(out, header, lines)
    assert out.read_text().splitlines() == [header, *lines]


def test_a_linter_that_hangs_ends_the_comparison_with_a_message(tmp_path):
    """Either side is linted in a child with a time limit: one that never returns is ended, and said."""
    from lint_same_findings import dump

    (tmp_path / "tfdoctor").mkdir()
    (tmp_path / "tfdoctor" / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    started = time.monotonic()
    with pytest.raises(SystemExit) as exited:
        dump(tmp_path, [tmp_path], timeout=1)
    assert time.monotonic() - started < 60
    assert str(exited.value.code) == f"linting with {tmp_path} took over 1 s (--timeout) and was ended"


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_a_timeout_that_is_not_a_number_of_seconds_is_a_usage_error(value):
    import subprocess

    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" /
                                               "lint_same_findings.py"), "--timeout", value],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "give a number of seconds above 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_manifest_that_is_not_there_is_a_usage_error_naming_it():
    """`--manifest heldout27` and `--manifest heldout27.toml` name the same file; one not in
    benchmarks/lint_corpus/ is a message and exit 2 before anything is linted (it was a traceback)."""
    import subprocess

    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" /
                                               "lint_same_findings.py"), "--manifest", "heldout27",
                           "--manifest", "no-such-set", "--manifest", "heldout26.toml"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--manifest: no no-such-set.toml in benchmarks/lint_corpus/" in done.stderr


def test_a_ref_git_does_not_know_is_a_message(tmp_path):
    from lint_same_findings import extract_tfdoctor

    with pytest.raises(SystemExit) as exited:
        extract_tfdoctor("no-such-ref-0000", tmp_path)
    assert str(exited.value.code).startswith("--ref no-such-ref-0000: ") and "no-such-ref-0000" in str(
        exited.value.code)[len("--ref no-such-ref-0000: "):]
    assert list(tmp_path.iterdir()) == []
    extract_tfdoctor("HEAD", tmp_path)
    assert (tmp_path / "tfdoctor" / "__init__.py").is_file()


def test_a_results_file_that_cannot_be_written_is_a_message(tmp_path):
    from lint_same_findings import write_results

    with pytest.raises(SystemExit) as exited:
        write_results(tmp_path, "# header", ["identical"])  # a folder, not a file
    assert str(exited.value.code) == f"lint_same_findings.py: {tmp_path} is a directory"


def test_the_results_file_replaces_a_link_and_never_writes_through_it(tmp_path):
    """A link planted at --output's path is replaced by the results file; the file it points to is left."""
    from lint_same_findings import write_results

    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    out = tmp_path / "lint_same_findings-2026-11-28.txt"
    out.symlink_to(outside)
    write_results(out, "# header", ["identical"])
    assert outside.read_text() == "kept\n"
    assert not out.is_symlink() and out.read_text() == "# header\nidentical\n"


def test_the_pool_benchmark_forks_lints_processes_from_a_frozen_heap_and_unfreezes_it(monkeypatch):
    """As lint does it (it is lint's own `_lint_in_processes`): one process forked besides this one for two
    workers, while the heap is frozen (so they do not copy it as the collector walks it); afterwards the
    parent's heap is as it was."""
    import os

    from lint_speed import start_pool, timed_once

    before = gc.get_freeze_count()
    frozen: list[int] = []
    fork, parent = os.fork, os.getpid()
    monkeypatch.setattr(os, "fork", lambda: (frozen.append(gc.get_freeze_count()) if os.getpid() == parent else None,
                                             fork())[1])
    start_pool(2)
    assert len(frozen) == 1 and frozen[0] > before  # forked once, the heap frozen when it forked
    assert gc.get_freeze_count() == before  # and only while the processes started
    elapsed, cpu = timed_once(lambda: start_pool(2))
    assert elapsed > 0 and cpu > 0


def test_the_benchmarks_cpu_time_counts_the_children_it_waited_for():
    """A child that computes for a fixed amount of CPU (about half a second here; a loaded machine stretches
    its wall time, not its CPU time) while this process only waits: its CPU is in the figure."""
    import subprocess

    from lint_speed import timed_once

    def child() -> None:
        subprocess.run([sys.executable, "-c", "sum(range(5 * 10**7))"], check=True, timeout=300)

    own = resource.getrusage(resource.RUSAGE_SELF)
    _elapsed, cpu = timed_once(child)
    waiting = resource.getrusage(resource.RUSAGE_SELF)
    own_cpu = waiting.ru_utime + waiting.ru_stime - own.ru_utime - own.ru_stime
    assert cpu - own_cpu > 0.1, (cpu, own_cpu)


def test_workers_and_one_process_report_the_same(tmp_path, monkeypatch):
    from tfdoctor.lint import runner

    for i in range(70):  # above the worker threshold (64 files)
        (tmp_path / f"s{i:02}.py").write_text(PIPELINE if i % 3 == 0 else "x = 1\n", encoding="utf-8")
    files = sorted(tmp_path.glob("*.py"))
    one = lint_paths(files, rules(), jobs=1)
    pools: list[int] = []
    in_processes = runner._lint_in_processes
    monkeypatch.setattr(runner, "_lint_in_processes",
                        lambda *args, **kwargs: (pools.append(args[3]), in_processes(*args, **kwargs))[1])
    report = lint_paths(files, rules(), jobs=2)
    assert pools == [2]  # the worker processes ran: not a silent fall-back to one process
    assert [f.to_json() for f in report.findings] == [f.to_json() for f in one.findings]
    per_file = len(lint_text(PIPELINE, rules()).findings)
    assert per_file >= 3 and report.files == 70 and len(report.findings) == 24 * per_file
    assert gc.isenabled()


def _growth(*args: str):
    import subprocess

    return subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" / "lint_growth.py"),
                           *args], capture_output=True, text=True, timeout=600)


def test_the_growth_benchmark_measures_each_shape_at_n_and_4n():
    done = _growth("--n", "10", "--only", "chained-maps", "layers")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("lint's CPU seconds (best of 3, every rule with the preview ones) at n = 10 and 4n")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(rows) == {"chained-maps", "layers"}
    for small, large, growth in rows.values():
        assert float(large) >= 0 and float(small) >= 0 and growth.endswith("x")


def test_the_growth_benchmark_fails_a_shape_over_the_bound_it_is_given(monkeypatch, capsys):
    """The bound is applied to the figures measured (here given, so no timing decides the test): a shape over it
    is named and exits 1; one under it passes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import lint_growth

    figures = {"layers": [0.10, 0.45], "chained-maps": [0.10, 1.60]}  # 4.5x and 16x
    monkeypatch.setattr(lint_growth, "measure", lambda source, texts, timeout: {s: figures[s] for s in texts})
    assert lint_growth.main(["--n", "10", "--only", "layers", "chained-maps", "--fail-over", "8"]) == 1
    out, err = capsys.readouterr()
    assert "grew over 8x: chained-maps (16.0x)" in err and "layers" not in err
    assert [line.split()[-1] for line in out.splitlines()[2:]] == ["16.0x", "4.5x"]
    assert lint_growth.main(["--n", "10", "--only", "layers", "--fail-over", "8"]) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "5"], "--n 5: give 10 or more"),
    (["--only", "no-such-shape"], "--only: no shape no-such-shape"),
    (["--fail-over", "1"], "--fail-over 1: give a growth above 1"),
    (["--n", "10", "--only", "layers", "--baseline", "no-such-ref"], "--baseline no-such-ref:"),
])
def test_the_growth_benchmark_refuses_bad_input_with_a_message(args, message):
    done = _growth(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
