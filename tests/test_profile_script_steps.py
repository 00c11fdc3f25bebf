"""The steps of a user's script (issue 22): from its markers or found by the workload process, timed from
one step's start to the next, the wait between step calls counted as input, warm-up left out; and the
PROF checks for a script whose steps were not found. Synthetic XSpaces and results; the real runs are in
test_profile_script_steps_tf.py."""

from __future__ import annotations

import importlib.util
import re
from types import SimpleNamespace
from typing import ClassVar

import pytest
from conftest import REPO, check_facts
from support.xspace_builder import PlaneBuilder

from tfdoctor.facts import Unknown
from tfdoctor.model import Applicability, PythonFix, Severity, Status
from tfdoctor.profile.facts import profile_section
from tfdoctor.profile.render import render_profile
from tfdoctor.profile.runner import RunResult
from tfdoctor.profile.xspace import STEP_EVENT, step_spans, summarize_xspace
from tfdoctor.testing import facts_from

CPU = ({"name": "/device:CPU:0", "type": "CPU"},)


# -- the arithmetic --------------------------------------------------------------------------------


def test_a_step_runs_to_the_next_start_and_the_gap_is_input():
    # Three step calls of 5 (compute) separated by 95 of fetching: the steps take 100, the last one 5.
    windows = [(0.0, 5.0, 0), (100.0, 105.0, 0), (200.0, 205.0, 0)]
    spans, inputs = step_spans(windows, 0, gap_is_input=True)
    assert spans == [(0.0, 100.0), (100.0, 200.0), (200.0, 205.0)]
    assert inputs == [95.0, 95.0, 0.0]


def test_without_gap_input_only_the_waits_inside_count_once():
    windows = [(0.0, 90.0, 0), (100.0, 190.0, 0)]
    waits = [(10.0, 50.0), (30.0, 60.0), (95.0, 120.0)]  # overlapping waits are counted once
    spans, inputs = step_spans(windows, 0, gap_is_input=False, waits=waits)
    assert spans == [(0.0, 100.0), (100.0, 190.0)]
    assert inputs == [55.0, 20.0]  # 10-60 and 95-100; then 100-120
    _, with_gap = step_spans(windows, 0, gap_is_input=True, waits=waits)
    assert with_gap == [60.0, 20.0]  # the gap 90-100 and the wait 95-100 overlap: 10-60 + 90-100


def test_warmup_windows_are_not_timed_and_groups_do_not_run_into_each_other():
    windows = [(0.0, 900.0, 1), (900.0, 905.0, 1), (1000.0, 1005.0, 1), (5000.0, 5005.0, 2), (5100.0, 5105.0, 2)]
    spans, inputs = step_spans(windows, 1, gap_is_input=True)
    # The tracing step is left out; the last step of epoch 1 ends with its window, not at epoch 2's first.
    assert spans == [(900.0, 1000.0), (1000.0, 1005.0), (5000.0, 5100.0), (5100.0, 5105.0)]
    assert inputs == [95.0, 0.0, 95.0, 0.0]
    assert step_spans(windows, 5, gap_is_input=True) == ([], [])


# -- the XSpace ------------------------------------------------------------------------------------


def _mark(host: PlaneBuilder, line, start: float, length: float, source: str, n: int, group: int = 0):
    event = host.event(line, STEP_EVENT, start, length, n=n, group=group)
    stat = event.stats.add()
    stat.metadata_id = host.stat("source")
    stat.str_value = source


def docs_loop_space(pb, steps: int = 6, fetch_ms: float = 95.0, step_ms: float = 5.0, marked: bool = True):
    """The loop docs/profile.md shows: the marker holds train_step; the `for` fetches (eagerly) before it.
    The workload process's marks of the same calls are there too (function_1), and a second function."""
    space = pb.XSpace()
    plane = space.planes.add()
    plane.name = "/host:CPU"
    host = PlaneBuilder(plane)
    python = host.line("python", 1)
    compute = host.line("tf_Compute/1", 2)
    for step in range(steps):
        start = step * (fetch_ms + step_ms)
        host.event(python, "EagerLocalExecute: IteratorGetNext", start, fetch_ms)
        host.event(python, "EagerPyFunc:EagerPyFunc", start, fetch_ms - 1)
        if marked:
            host.event(python, "train", start + fetch_ms, step_ms, step_num=step, _r=1)
        _mark(host, python, start + fetch_ms, step_ms, "function_1", step)
        host.event(compute, "model/dense/MatMul:_MklMatMul", start + fetch_ms + 1, step_ms - 2)
    for n in range(2):
        _mark(host, python, 5000.0 + n * 10, 1.0, "function_2", n)
    return space


def test_docs_marker_loop_counts_the_fetch_between_markers_as_input(pb):
    summary = summarize_xspace(docs_loop_space(pb), script=True, warmup=1, step_source="function_1")
    assert summary["step_source"] == "markers"  # the script's own markers win
    steps = summary["steps"]
    # 6 markers, the first not timed; 4 steps of 100 ms (start to next start) and the last of 5 ms.
    assert (steps["count"], steps["excluded_warmup"]) == (5, 1)
    assert steps["median_seconds"] == pytest.approx(0.100)
    assert summary["input_share"] == pytest.approx(4 * 95 / 405)
    breakdown = summary["breakdown"]
    assert [s["step"] for s in breakdown["per_step"]] == [1, 2, 3, 4, 5]
    assert breakdown["step_ms"] == pytest.approx(81.0)  # the same steps as the step time: (4 x 100 + 5) / 5
    assert breakdown["categories_ms"]["input"] == pytest.approx(4 * 95 / 5)


def test_keras2_fit_markers_are_the_train_steps_of_each_epoch(pb):
    """Keras 2 / tf-keras mark each batch of fit ("train", with epoch_num) and of its validation ("test")."""
    space = pb.XSpace()
    plane = space.planes.add()
    plane.name = "/host:CPU"
    host = PlaneBuilder(plane)
    python = host.line("python", 1)
    for epoch in range(2):
        base = epoch * 1000.0
        for step in range(4):
            host.event(python, "train", base + step * 100, 90.0, step_num=step, epoch_num=epoch, _r=1)
        for step in range(2):
            host.event(python, "test", base + 500 + step * 50, 40.0, step_num=step, _r=1)
    summary = summarize_xspace(space, script=True, warmup=1)
    # 8 train steps, the first left out; epoch 1: 100, 100, 90 (its last ends with its marker, not at
    # the validation); epoch 2: 100, 100, 100, 90.
    assert summary["steps"]["count"] == 7
    assert summary["steps"]["min_seconds"] == pytest.approx(0.090)
    assert summary["input_share"] == pytest.approx(5 * 10 / (5 * 100 + 2 * 90))
    assert [s["step"] for s in summary["breakdown"]["per_step"]] == [1, 2, 3, 0, 1, 2, 3]


def test_markers_named_per_step_are_all_steps(pb):
    space = pb.XSpace()
    plane = space.planes.add()
    plane.name = "/host:CPU"
    host = PlaneBuilder(plane)
    python = host.line("python", 1)
    for step in range(5):
        host.event(python, f"step {step}", step * 100.0, 90.0, step_num=step, _r=1)
    assert summarize_xspace(space, script=True)["steps"]["count"] == 5


def test_a_builtin_workloads_markers_hold_the_whole_step(pb):
    summary = summarize_xspace(docs_loop_space(pb))  # not a script: what the marker holds is the step
    assert summary["steps"]["count"] == 6
    assert summary["steps"]["median_seconds"] == pytest.approx(0.005)
    assert summary["input_share"] == 0.0


def test_without_markers_the_chosen_source_gives_the_steps(pb):
    space = docs_loop_space(pb, marked=False)
    summary = summarize_xspace(space, script=True, warmup=1, step_source="function_1", gap_is_input=True)
    assert summary["step_source"] == "function_1"
    assert (summary["steps"]["count"], summary["steps"]["excluded_warmup"]) == (5, 1)
    assert summary["input_share"] == pytest.approx(4 * 95 / 405)
    other = summarize_xspace(space, script=True, step_source="function_2", gap_is_input=True)
    assert other["steps"]["count"] == 2
    nothing = summarize_xspace(space, script=True, warmup=1)
    assert (nothing["step_source"], nothing["steps"]["count"], nothing["input_share"]) == (None, 0, None)
    assert isinstance(nothing["breakdown"], Unknown)
    # Without steps the op times cover the whole trace: EagerPyFunc is most of it.
    assert nothing["top_ops"][0]["op"] == "EagerPyFunc"


def keras_space(pb, abandoned: bool = False):
    """Keras fit: the batch is fetched inside the train function (IteratorGetNextOp::DoCompute on the
    iterator's own line); between batches Keras runs its callbacks. Two epochs of four batches."""
    space = pb.XSpace()
    plane = space.planes.add()
    plane.name = "/host:CPU"
    host = PlaneBuilder(plane)
    python = host.line("python", 1)
    iterator = host.line("tf_data_iterator_get_next/123", 2)
    n = 0
    for epoch in range(2):
        for batch in range(4):
            start = epoch * 1000.0 + batch * 100.0
            _mark(host, python, start, 98.0, "keras_fit", n, group=epoch)
            host.event(iterator, "IteratorGetNextOp::DoCompute", start + 1, 80.0)
            n += 1
        if abandoned:  # the batch that found the end of the data (unknown length): never ended
            _mark(host, python, epoch * 1000.0 + 400, 3.0, "keras_fit", n, group=epoch)
            python.events[-1].stats.add(metadata_id=host.stat("abandoned"), int64_value=1)
    return space


def test_keras_steps_count_the_wait_inside_the_train_function_not_the_callbacks(pb):
    summary = summarize_xspace(keras_space(pb), script=True, warmup=1, step_source="keras_fit")
    steps = summary["steps"]
    assert (steps["count"], steps["excluded_warmup"]) == (7, 1)
    # Epoch 1: 100, 100, 98 (its last batch ends with its window); epoch 2: 100, 100, 100, 98.
    assert steps["min_seconds"] == pytest.approx(0.098)
    assert summary["input_share"] == pytest.approx(7 * 80 / (5 * 100 + 2 * 98))
    # The batch that found the end of the data of unknown length is not a step.
    assert summarize_xspace(keras_space(pb, abandoned=True), script=True, warmup=1,
                            step_source="keras_fit")["steps"] == steps


# -- the facts when there is no trace --------------------------------------------------------------


def script_run(source: str | None, windows: list, gap_is_input: bool, candidates: list | None = None) -> RunResult:
    found = {"source": source, "name": {"function_1": "tf.function train_step", "keras_fit": "keras fit"}.get(source),
             "gap_is_input": gap_is_input, "windows": windows, "candidates": candidates or []}
    return RunResult(True, devices=CPU, policy="float32", tf_version="2.21.0", extra={"script_steps": found})


def test_without_a_trace_the_workload_process_windows_give_the_steps():
    windows = [[i * 0.1, i * 0.1 + 0.01, 0] for i in range(12)]
    section = profile_section(script_run("function_1", windows, True), "script", Unknown("no protos"), warmup=2)
    assert section["step_source"] == "tf.function train_step"
    assert (section["steps"]["count"], section["steps"]["excluded_warmup"]) == (10, 2)
    assert section["input_share"] == pytest.approx(9 * 0.09 / (9 * 0.1 + 0.01))
    assert section["input_bound"] is True
    keras = profile_section(script_run("keras_fit", windows, False), "script", Unknown("no protos"), warmup=2)
    assert keras["steps"]["count"] == 10
    assert keras["input_share"] is None  # Keras waits inside its train function: only the trace shows it


def test_malformed_windows_are_left_out():
    windows = [[0.0, 0.01, 0], ["a", 0.2, 0], [0.1], None, [0.2, 0.21, 0], [0.3, 0.31, 0]]
    section = profile_section(script_run("function_1", windows, True), "script", Unknown("no protos"), warmup=0)
    assert section["steps"]["count"] == 3


def test_the_trace_outranks_the_workload_process_windows(pb):
    summary = summarize_xspace(docs_loop_space(pb), script=True, warmup=1, step_source="function_1")
    run = script_run("function_1", [[0.0, 0.001, 0]] * 3, True)
    section = profile_section(run, "script", summary, warmup=1)
    assert section["step_source"] == "step markers"
    assert section["steps"]["count"] == 5


# -- the checks ------------------------------------------------------------------------------------


def no_steps_section(**overrides):
    run = script_run(None, [], False, candidates=[{"source": "function_1", "name": "tf.function export", "calls": 2}])
    section = profile_section(run, "script", Unknown("no protos"), warmup=3)
    section["top_ops"] = [{"where": "host", "op": "EagerPyFunc", "seconds": 2.3, "share": 0.93},
                          {"where": "host", "op": "_MklMatMul", "seconds": 0.1, "share": 0.05}]
    return section | overrides


def test_steps_not_found_is_an_info_finding_with_the_marker():
    report = check_facts(facts_from({"profile": no_steps_section()}), select=["PROF"])
    assert report.codes() == ["PROF010", "PROF011"]
    note = report.findings()[0]
    assert note.severity is Severity.INFO
    assert "(seen: tf.function export ×2)" in note.message
    assert note.evidence == {"profile.steps.count": 0, "profile.steps.excluded_warmup": 0,
                             "profile.step_candidates": ["tf.function export"]}
    (fix,) = note.fixes
    assert isinstance(fix, PythonFix) and fix.applicability is Applicability.MANUAL
    assert 'with tf.profiler.experimental.Trace("train", step_num=step, _r=1):' in fix.code
    assert report.result("PROF001").reason == "the profile measured no input wait: no steps were found (PROF010)"


def test_all_steps_warm_up_says_so():
    run = script_run("function_1", [[0.0, 0.1, 0], [0.2, 0.3, 0]], True)
    section = profile_section(run, "script", Unknown("no protos"), warmup=3)
    assert section["steps"] == {"count": 0, "median_seconds": None, "spread": None, "excluded_warmup": 2}
    (note,) = check_facts(facts_from({"profile": section}), select=["PROF010"]).findings()
    assert note.message.startswith("no training steps were found in the script: all 2 steps found were warm-up")


def test_python_function_finding_needs_an_unmeasured_input_wait_and_a_dominant_share():
    (finding,) = check_facts(facts_from({"profile": no_steps_section()}), select=["PROF011"]).findings()
    assert finding.severity is Severity.WARNING
    assert finding.evidence == {"profile.top_ops.python_function_share": 0.93, "profile.top_ops.ops": "EagerPyFunc"}
    assert "num_parallel_calls=tf.data.AUTOTUNE" in finding.fixes[0].code
    measured = no_steps_section(input_share=0.9, input_bound=True, steps={"count": 20})
    assert check_facts(facts_from({"profile": measured}), select=["PROF011"]).codes() == []
    small = no_steps_section(top_ops=[{"where": "host", "op": "EagerPyFunc", "seconds": 1.0, "share": 0.4}])
    assert check_facts(facts_from({"profile": small}), select=["PROF011"]).codes() == []
    unknown = no_steps_section(top_ops=Unknown("no protos"))
    assert check_facts(facts_from({"profile": unknown}), select=["PROF011"]).result("PROF011").status \
        is Status.NOT_CHECKED


def test_builtin_workloads_and_scripts_with_steps_raise_no_step_note():
    windows = [[i * 0.1, i * 0.1 + 0.09, 0] for i in range(12)]
    found = profile_section(script_run("function_1", windows, True), "script", Unknown("no protos"), warmup=3)
    builtin = profile_section(RunResult(True, step_seconds=(0.1,) * 5, input_seconds=(0.0,) * 5, devices=CPU,
                                        policy="float32"), "cnn", Unknown("no protos"))
    for section in (found, builtin):
        assert check_facts(facts_from({"profile": section}), select=["PROF010", "PROF011"]).codes() == []


# -- the summary -----------------------------------------------------------------------------------


def test_the_summary_says_where_the_steps_came_from_and_what_was_left_out():
    windows = [[i * 0.1, i * 0.1 + 0.01, 0] for i in range(12)]
    section = profile_section(script_run("function_1", windows, True), "script", Unknown("no protos"), warmup=3)
    report = check_facts(facts_from({"profile": section}), select=["PROF"])
    text = render_profile(section, report)
    assert "over 9 steps" in text
    assert "  steps           from tf.function train_step; the first 3 (warm-up, tracing) not timed\n" in text
    all_timed = profile_section(script_run("function_1", windows, True), "script", Unknown("no protos"), warmup=0)
    assert "from tf.function train_step; all timed (--warmup 0" in render_profile(all_timed, report)
    none = render_profile(no_steps_section(), check_facts(facts_from({"profile": no_steps_section()}),
                                                          select=["PROF"]))
    assert "  steps           none found (seen: tf.function export ×2); see the finding below\n" in none
    assert "PROF010" in none


# -- the choice of the step in the workload process ------------------------------------------------


@pytest.fixture(scope="module")
def workload_main():
    spec = importlib.util.spec_from_file_location("tfdoctor_workload_main", REPO / "tfdoctor/profile/workload_main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Trace:
    """The profiler's Trace context, for a ScriptSteps outside TensorFlow (nothing is being profiled)."""

    ended: ClassVar[list[dict]] = []

    def __init__(self, name: str, **stats: object) -> None:
        assert name == STEP_EVENT and set(stats) == {"source", "n", "group"}
        self.stats = dict(stats)

    def set_metadata(self, **stats: object) -> None:
        self.stats.update(stats)

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        Trace.ended.append(self.stats)


def recorder(workload_main, calls: dict[str, int]):
    tf = SimpleNamespace(profiler=SimpleNamespace(experimental=SimpleNamespace(Trace=Trace)))
    steps = workload_main.ScriptSteps(tf)
    for source, count in calls.items():
        if source.startswith("function"):
            source = steps.function_key(SimpleNamespace(__name__=source))
        for _ in range(count):
            steps.end(steps.begin(source, 0))
    return steps


def test_the_workload_process_marks_steps_under_the_name_the_summary_reads(workload_main):
    assert workload_main.STEP_EVENT == STEP_EVENT  # the child cannot import tfdoctor: two constants


def test_keras_fit_wins_then_the_function_called_most_at_least_five_times(workload_main):
    assert recorder(workload_main, {"function_a": 30, "keras_predict": 2, "keras_fit": 3}).chosen() == "keras_fit"
    assert recorder(workload_main, {"function_a": 30, "keras_predict": 2}).chosen() == "keras_predict"
    steps = recorder(workload_main, {"function_a": 6, "function_b": 24, "function_c": 4})
    found = steps.to_json()
    assert (found["source"], found["name"], found["gap_is_input"]) == ("function_2", "tf.function function_b", True)
    assert len(found["windows"]) == 24 and all(start <= end for start, end, _group in found["windows"])
    assert found["candidates"][0] == {"source": "function_2", "name": "tf.function function_b", "calls": 24}
    few = recorder(workload_main, {"function_a": 4}).to_json()
    assert (few["source"], few["windows"], few["candidates"][0]["calls"]) == (None, [], 4)


def test_the_docs_show_the_marker_the_marked_test_script_uses():
    docs = (REPO / "docs/profile.md").read_text()
    block = re.search(r"```python\n(for step, \(x, y\) in enumerate\(dataset\):\n.*?)```", docs, re.S)
    assert block is not None
    script = (REPO / "tests/data/scripts/loop_input_bound_marked.py").read_text()
    assert block.group(1) in script


class Callback:
    """What the injected callback needs of keras.callbacks.Callback."""

    def set_model(self, model: object) -> None:
        self.model = model

    def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
        pass

    def on_train_batch_begin(self, batch: int, logs: object = None) -> None:
        pass

    def on_train_batch_end(self, batch: int, logs: object = None) -> None:
        pass


class CallbackList:
    def __init__(self, callbacks: list) -> None:
        self.callbacks = callbacks


class Model:
    """The shape of Keras's fit and evaluate as the wrapper meets them: fit calls its callbacks per epoch
    and batch, then evaluate for validation with the same callbacks."""

    def fit(self, x=None, y=None, epochs=1, callbacks=None):
        given = callbacks.callbacks if isinstance(callbacks, CallbackList) else callbacks
        for epoch in range(epochs):
            for callback in given:
                callback.on_epoch_begin(epoch)
            for batch in range(3):
                for callback in given:
                    callback.on_train_batch_begin(batch)
                for callback in given:
                    callback.on_train_batch_end(batch)
        self.evaluate(x, callbacks=callbacks)
        return given

    def evaluate(self, x=None, callbacks=None):
        self.validation_callbacks = callbacks
        return callbacks


def test_the_keras_wrapper_adds_one_callback_per_call_and_keeps_the_scripts(workload_main, monkeypatch):
    import inspect

    steps = recorder(workload_main, {})
    step_callback = workload_main._callback_class(Callback, steps)
    calls = [0]
    for method, source in (("fit", "keras_fit"), ("evaluate", "keras_evaluate")):
        original = getattr(Model, method)
        monkeypatch.setattr(Model, method, workload_main._keras_method(
            original, inspect.signature(original), source, step_callback, steps, calls))
    model, mine = Model(), Callback()
    seen = model.fit("x", epochs=2, callbacks=[mine])
    assert seen[0] is mine and [type(c) for c in seen[1:]] == [step_callback]
    assert model.validation_callbacks is seen  # fit's own evaluate gets no callback of its own
    groups = [group for _start, _end, group in steps.windows["keras_fit"]]
    assert groups == [1_000_001] * 3 + [1_000_002] * 3  # a group per epoch: no step runs into the next
    script_list = CallbackList([mine])
    model.fit("x", callbacks=script_list)  # a CallbackList the script built gets the callback appended
    assert [type(c) for c in script_list.callbacks] == [Callback, step_callback]
    assert script_list.callbacks[1].model is model
    model.evaluate("x")
    assert len(steps.windows["keras_fit"]) == 9 and "keras_evaluate" not in steps.windows  # no test batches ran
    with pytest.raises(TypeError):
        model.fit("x", no_such_argument=1)  # a bad call reaches Keras, which reports it


def test_a_keras_batch_that_never_ends_is_abandoned_not_a_step(workload_main):
    steps = recorder(workload_main, {})
    callback = workload_main._callback_class(Callback, steps)("keras_fit", 0)
    Trace.ended.clear()
    callback.on_train_batch_begin(0)
    callback.on_train_batch_end(0)
    callback.on_train_batch_begin(1)  # the data ran out: Keras calls no batch end
    callback.on_epoch_end(0)
    callback.on_train_batch_begin(0)
    callback.on_train_batch_begin(1)  # a begin after a begin: the first one never ended
    callback.on_train_end()
    assert len(steps.windows["keras_fit"]) == 1
    assert [t.get("abandoned") for t in Trace.ended] == [None, 1, 1, 1]  # every trace event ends, marked


def test_tf_function_calls_are_timed_at_the_top_only_and_a_raising_call_is_no_step(workload_main):
    class Function:
        """What the wrapper needs of tf.function's Function: a class whose instances are called."""

        def __init__(self, python_function) -> None:
            self.python_function, self.__name__ = python_function, python_function.__name__

        def __call__(self, *args):
            return self.python_function(*args)

    eager = [True]
    tf = SimpleNamespace(function=Function, executing_eagerly=lambda: eager[0],
                         profiler=SimpleNamespace(experimental=SimpleNamespace(Trace=Trace)))
    steps = workload_main.ScriptSteps(tf)
    workload_main._wrap_functions(tf, steps)

    def inner(x):
        return x + 1

    inner_step = Function(inner)

    def train_step(x):
        if x < 0:
            raise StopIteration  # the end of the data, found inside the step
        return inner_step(x)  # a function called inside another is not a step

    step = Function(train_step)
    assert [step(i) for i in range(6)] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(StopIteration):
        step(-1)
    eager[0] = False
    step(7)  # called while tracing another function (graph mode): not a step
    found = steps.to_json()
    assert (found["name"], len(found["windows"])) == ("tf.function train_step", 6)
    assert found["candidates"] == [{"source": "function_1", "name": "tf.function train_step", "calls": 6}]


def test_a_malformed_share_in_a_profile_file_is_not_checked_not_a_crash():
    bad = no_steps_section(top_ops=[{"where": "host", "op": "EagerPyFunc", "seconds": 1.0, "share": "most"}])
    result = check_facts(facts_from({"profile": bad}), select=["PROF011"]).result("PROF011")
    assert result.status is Status.NOT_CHECKED and result.reason == "malformed top_ops share"
