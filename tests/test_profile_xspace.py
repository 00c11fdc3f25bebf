"""The XSpace summary from small synthetic XSpace files written here (with device planes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts
from support.xspace_builder import PlaneBuilder

from tfdoctor.facts import Unknown
from tfdoctor.profile.facts import profile_section
from tfdoctor.profile.runner import RunResult
from tfdoctor.profile.xspace import find_xspace_files, load_xspace, summarize_xspace
from tfdoctor.testing import facts_from


def host_plane(space, input_ms: float = 2.0):
    """Four 10 ms steps; each waits input_ms in IteratorGetNext and runs two ops on a compute thread."""
    plane = space.planes.add()
    plane.name = "/host:CPU"
    host = PlaneBuilder(plane)
    python = host.line("python", 1)
    compute = host.line("tf_Compute/1", 2)
    for step in range(4):
        start = step * 10.0
        host.event(python, "train", start, 10.0, step_num=step, _r=1)
        host.event(python, "EagerLocalExecute: IteratorGetNext", start, input_ms)
        host.event(python, "IteratorGetNextOp::DoCompute", start, input_ms)  # nested: not counted twice
        host.event(compute, "model/conv/Relu:_MklNativeFusedConv2D", start + input_ms, 5.0)
        host.event(compute, "model/dense/MatMul:_MklMatMul", start + input_ms + 5.0, 1.0)
    host.event(compute, "cluster_3:_XlaRun", 1.0, 0.5)
    return plane


def gpu_plane(space, events: bool):
    plane = space.planes.add()
    plane.name = "/device:GPU:0"
    gpu = PlaneBuilder(plane)
    if events:
        stream = gpu.line("Stream #14(Compute)", 7)
        gpu.event(stream, "volta_h884gemm_64x64_ldg8_nn", 2.0, 3.0)
        gpu.event(stream, "void tensorflow::BiasNHWCKernel<float>", 5.0, 1.0)
        modules = gpu.line("XLA Modules", 8)
        gpu.event(modules, "cluster_3(12345)", 2.0, 4.0)
    return plane


def write(space, tmp_path: Path) -> Path:
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    path = run / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


def test_cpu_profile_summary(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space)
    path = write(space, tmp_path)
    assert find_xspace_files(tmp_path) == [path]
    summary = summarize_xspace(load_xspace(path))
    assert summary["device_activity_captured"] is None  # no accelerator plane: nothing to capture
    assert summary["steps"]["count"] == 4
    assert summary["steps"]["median_seconds"] == pytest.approx(0.010)
    assert summary["input_share"] == pytest.approx(0.2)
    assert summary["host_op_seconds"] == pytest.approx(0.0245)
    assert [(r["where"], r["op"]) for r in summary["top_ops"][:2]] == [("host", "_MklNativeFusedConv2D"),
                                                                        ("host", "_MklMatMul")]
    assert summary["top_ops"][0]["share"] == pytest.approx(20 / 24.5)
    assert summary["xla_clusters"] == ["cluster_3"]
    assert summary["low_precision_share"] is None


def test_gpu_profile_with_device_events(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space)
    gpu_plane(space, events=True)
    summary = summarize_xspace(load_xspace(write(space, tmp_path)))
    assert summary["device_activity_captured"] is True
    assert summary["device_planes"] == [{"name": "/device:GPU:0", "events": 2,
                                         "busy_seconds": pytest.approx(0.004)}]
    assert summary["device_seconds"] == pytest.approx(0.004)
    assert summary["low_precision_share"] == pytest.approx(0.75)  # the h884 (fp16 tensor core) kernel
    assert summary["xla_clusters"] == ["cluster_3"]


def _gpu_run() -> RunResult:
    return RunResult(True, step_seconds=(0.01,) * 4, input_seconds=(0.001,) * 4, tf_version="2.21.0",
                     devices=({"name": "/device:CPU:0", "type": "CPU"}, {"name": "/device:GPU:0", "type": "GPU"}),
                     policy="float32")


def test_gpu_present_without_device_events(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space)
    gpu_plane(space, events=False)
    summary = summarize_xspace(load_xspace(write(space, tmp_path)))
    assert summary["device_activity_captured"] is False
    section = profile_section(_gpu_run(), "cnn", summary)
    assert section["device_activity_captured"] is False
    report = check_facts(facts_from({"profile": section}), select=["PROF"])
    assert report.codes() == ["PROF002"]


def test_gpu_present_but_no_device_plane_at_all(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space)
    section = profile_section(_gpu_run(), "cnn", summarize_xspace(load_xspace(write(space, tmp_path))))
    assert section["device_activity_captured"] is False


def test_gpu_captured_stays_silent(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space)
    gpu_plane(space, events=True)
    section = profile_section(_gpu_run(), "cnn", summarize_xspace(load_xspace(write(space, tmp_path))))
    assert check_facts(facts_from({"profile": section}), select=["PROF"]).codes() == []


def test_script_workload_takes_steps_from_markers(pb, tmp_path):
    space = pb.XSpace()
    host_plane(space, input_ms=8.0)
    summary = summarize_xspace(load_xspace(write(space, tmp_path)))
    run = RunResult(True, devices=({"name": "/device:CPU:0", "type": "CPU"},), policy="float32")
    section = profile_section(run, "script", summary)
    assert section["steps"]["count"] == 4
    assert section["input_share"] == pytest.approx(0.8)
    assert section["input_bound"] is True


def test_not_an_xspace(pb, tmp_path):
    bad = tmp_path / "x.xplane.pb"
    bad.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(ValueError, match="not an XSpace"):
        load_xspace(bad)


def test_unknown_xspace_leaves_timing_facts():
    run = RunResult(True, step_seconds=(0.02, 0.02), input_seconds=(0.0, 0.0), policy="float32")
    section = profile_section(run, "cnn", Unknown("no TensorFlow beside tfdoctor"))
    assert section["top_ops"] == Unknown("no TensorFlow beside tfdoctor")
    assert section["steps"]["median_seconds"] == pytest.approx(0.02)
    assert section["input_bound"] is False
