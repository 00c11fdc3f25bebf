"""XSpace fixtures shaped like real GPU traces of TensorFlow's profiler (CUPTI on), built with the
wheel's own xplane_pb2.

The structure follows what TensorFlow writes (and xprof reads, xplane_to_step_events.cc):
- "/host:CPU": one line per thread. The Python thread carries the step markers
  (`train` with step_num and _r=1) and eager dispatch (`EagerLocalExecute: IteratorGetNext`); the
  executor threads (`tf_Compute/…`) carry TensorFlow ops as "name:Type" with a group_id, and inside an
  op that runs on the GPU the CUDA API calls CUPTI recorded (`cuLaunchKernel`, `cuMemcpyHtoDAsync_v2`)
  with their correlation_id.
- "/device:GPU:0": one line per CUDA stream ("Stream #14(Compute)" …) holding kernels (stats
  correlation_id, group_id, kernel_details, tf_op), memcpy events (`MemcpyH2D` with memcpy_details) and
  NCCL kernels; plus the lines TensorFlow derives from them ("TensorFlow Ops", "XLA Modules"), which
  repeat the kernels' time and must not be counted twice.

A scenario is a list of segments laid end to end inside each 10 ms step; each segment is one kind of
activity, and `hide` adds activity that overlaps it and must not change the breakdown (a memcpy or a
launch under a running kernel). `expected_ms` gives the breakdown the segments imply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from support.xspace_builder import MS, numbered

STEP_GAP_MS = 0.5  # Python between steps: outside the step markers, never counted
KIND_CATEGORY = {"input": "input", "launch": "launch", "kernel": "device_compute", "h2d": "copies",
                 "d2h": "copies", "nccl": "communication", "compile": "compilation", "host": "host_compute",
                 "gap": "other"}
FLOAT32_KERNELS = ("volta_sgemm_128x64_nn", "implicit_convolve_sgemm",
                   "void tensorflow::functor::ApplyAdamKernel<float>")
TENSOR_CORE_KERNELS = ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
                       "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwckrsc_nhwc_tilesize128x128x32_stage4")


@dataclass(frozen=True)
class Segment:
    kind: str
    ms: float
    kernel: str = "volta_sgemm_128x64_nn"
    hide: tuple[str, ...] = ()


@dataclass
class Scenario:
    name: str
    segments: list[Segment]
    steps: int = 3
    policy: str = "float32"
    extra_gpus: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def expected_ms(self) -> dict[str, float]:
        totals = dict.fromkeys(("input", "launch", "host_compute", "device_compute", "copies", "communication",
                                "compilation", "other"), 0.0)
        for segment in self.segments:
            totals[KIND_CATEGORY[segment.kind]] += segment.ms
        return totals

    def step_ms(self) -> float:
        return sum(segment.ms for segment in self.segments)


class Plane:
    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}
        self.lines: dict[str, Any] = {}

    def line(self, name: str) -> Any:
        if name not in self.lines:
            line = self.plane.lines.add()
            line.id = len(self.lines) + 1
            line.name = line.display_name = name
            line.timestamp_ns = 1_700_000_000_000_000_000 // 1000  # lines start at a wall-clock time
            self.lines[name] = line
        return self.lines[name]

    def event(self, line_name: str, name: str, start_ms: float, length_ms: float, **stats: Any) -> None:
        event = self.line(line_name).events.add()
        event.metadata_id = numbered(self.events, self.plane.event_metadata, name)
        event.offset_ps = round(start_ms * MS)
        event.duration_ps = round(length_ms * MS)
        for key, value in stats.items():
            stat = event.stats.add()
            stat.metadata_id = numbered(self.stats, self.plane.stat_metadata, key)
            if isinstance(value, str):
                stat.str_value = value
            else:
                stat.int64_value = value


PYTHON, COMPUTE = "python3", "tf_Compute/27"
STREAMS = {"kernel": "Stream #14(Compute)", "h2d": "Stream #15(MemcpyH2D)", "d2h": "Stream #16(MemcpyD2H)",
           "nccl": "Stream #22(nccl)"}


class TraceWriter:
    def __init__(self, pb: Any, gpus: int) -> None:
        self.space = pb.XSpace()
        self.space.hostnames.append("gpu-node-07")
        host = self.space.planes.add()
        host.id, host.name = 0, "/host:CPU"
        self.host = Plane(host)
        self.gpus = []
        for index in range(gpus):
            plane = self.space.planes.add()
            plane.id, plane.name = index + 1, f"/device:GPU:{index}"
            self.gpus.append(Plane(plane))
        self.correlation = 1000

    def launch(self, start: float, length: float, step: int, op: str = "model/dense/MatMul:MatMul") -> int:
        """The host side of a GPU op: the op on an executor thread, its cuLaunchKernel at the end."""
        self.correlation += 1
        self.host.event(COMPUTE, op, start, length, group_id=step)
        call = min(0.02, length / 2)
        self.host.event(COMPUTE, "cuLaunchKernel", start + length - call, call, correlation_id=self.correlation)
        return self.correlation

    def kernel(self, start: float, length: float, step: int, name: str, correlation: int, gpu: int = 0) -> None:
        device = self.gpus[gpu]
        device.event(STREAMS["kernel"], name, start, length, correlation_id=correlation, group_id=step,
                     kernel_details="regs:64 static_shared:0 dynamic_shared:49152 grid:216,1,1 block:128,1,1 "
                                    "occ_pct:50",
                     tf_op="model/dense/MatMul:MatMul")
        device.event("TensorFlow Ops", "model/dense/MatMul", start, length)  # derived: repeats the kernel

    def copy(self, kind: str, start: float, length: float, step: int, gpu: int = 0) -> None:
        self.correlation += 1
        name, detail = (("MemcpyH2D", "kind_src:pageable kind_dst:device size:62914560 dest:0 async:1")
                        if kind == "h2d" else
                        ("MemcpyD2H", "kind_src:device kind_dst:pageable size:4 dest:0 async:0"))
        api = "cuMemcpyHtoDAsync_v2" if kind == "h2d" else "cuMemcpyDtoH_v2"
        self.host.event(COMPUTE, api, start, min(0.01, length), correlation_id=self.correlation)
        self.gpus[gpu].event(STREAMS[kind], name, start, length, correlation_id=self.correlation, group_id=step,
                             memcpy_details=detail)

    def segment(self, segment: Segment, start: float, step: int) -> None:
        kind, length = segment.kind, segment.ms
        if kind == "input":
            self.host.event(PYTHON, "EagerLocalExecute: IteratorGetNext", start, length)
            self.host.event(PYTHON, "IteratorGetNextOp::DoCompute", start, length)
        elif kind == "launch":
            self.launch(start, length, step)
        elif kind == "kernel":
            for gpu in range(len(self.gpus)):
                self.kernel(start, length, step, segment.kernel, self.correlation, gpu)
        elif kind in ("h2d", "d2h"):
            self.copy(kind, start, length, step)
        elif kind == "nccl":
            for gpu, device in enumerate(self.gpus):
                device.event(STREAMS["nccl"], "ncclDevKernel_AllReduce_Sum_f32_RING_LL", start, length,
                             correlation_id=9000 + gpu, group_id=step, tf_op="Adam/NcclAllReduce:NcclAllReduce")
        elif kind == "compile":
            self.host.event(COMPUTE, "cluster_12:_XlaCompile", start, length, group_id=step)
            self.host.event(COMPUTE, "GpuCompiler::RunHloPasses", start + 0.1 * length, 0.5 * length)
        elif kind == "host":
            self.host.event(COMPUTE, "model/augment/DecodeJpeg:DecodeJpeg", start, length, group_id=step)
        # "gap": nothing is recorded
        for hidden in segment.hide:  # activity that overlaps this segment and must not change the result
            inner_start, inner_length = start + 0.1 * length, 0.5 * length
            if hidden == "launch":
                self.launch(inner_start, inner_length, step, op="model/conv2d/Conv2D:Conv2D")
            elif hidden in ("h2d", "d2h"):
                self.copy(hidden, inner_start, inner_length, step)
            elif hidden == "input":
                self.host.event(PYTHON, "EagerLocalExecute: IteratorGetNext", inner_start, inner_length)
            elif hidden == "host":
                self.host.event(COMPUTE, "model/augment/DecodeJpeg:DecodeJpeg", inner_start, inner_length,
                                group_id=step)


def build(pb: Any, scenario: Scenario) -> Any:
    writer = TraceWriter(pb, 1 + scenario.extra_gpus)
    start = 1.0
    for step in range(scenario.steps):
        writer.host.event(PYTHON, "train", start, scenario.step_ms(), step_num=step, _r=1, group_id=step)
        position = start
        for segment in scenario.segments:
            writer.segment(segment, position, step)
            position += segment.ms
        # Python between steps, outside the markers: must not count
        writer.host.event(PYTHON, "EagerLocalExecute: AssignAddVariableOp", position + 0.1, 0.3)
        start = position + STEP_GAP_MS
    writer.gpus[0].event("XLA Modules", "cluster_12(1234567)", 1.0, 0.5)  # derived line: not counted
    return writer.space


def kernels(name: str, count: int, launch_ms: float, kernel_ms: float) -> list[Segment]:
    """count small kernels, each launched by the host while the GPU waits."""
    return [seg for _ in range(count) for seg in (Segment("launch", launch_ms), Segment("kernel", kernel_ms, name))]


SCENARIOS = {
    "healthy": Scenario("healthy", [
        Segment("input", 0.2), Segment("launch", 0.3),
        Segment("kernel", 6.5, TENSOR_CORE_KERNELS[0], hide=("h2d", "launch", "input")),
        Segment("kernel", 1.5, TENSOR_CORE_KERNELS[1], hide=("host",)), Segment("kernel", 0.5, FLOAT32_KERNELS[2]),
        Segment("h2d", 0.4), Segment("gap", 0.6)], policy="mixed_float16"),
    "launch_bound": Scenario("launch_bound", [
        Segment("input", 0.5), *kernels("void Eigen::internal::EigenMetaKernel<float>", 16, 0.4, 0.1),
        Segment("gap", 1.5)]),
    "copy_bound": Scenario("copy_bound", [
        Segment("input", 0.3), Segment("h2d", 4.0), Segment("launch", 0.2),
        Segment("kernel", 4.3, "implicit_convolve_sgemm", hide=("h2d",)), Segment("d2h", 0.5),
        Segment("gap", 0.7)]),
    "communication_bound": Scenario("communication_bound", [
        Segment("launch", 0.2), Segment("kernel", 4.8, "volta_sgemm_128x64_nn", hide=("launch",)),
        Segment("nccl", 4.0), Segment("gap", 1.0)], extra_gpus=1),
    "compilation_bound": Scenario("compilation_bound", [
        Segment("compile", 5.0), Segment("launch", 0.5), Segment("kernel", 4.0, "fusion_3", hide=("launch",)),
        Segment("gap", 0.5)]),
    "mixed_precision_fallback": Scenario("mixed_precision_fallback", [
        Segment("input", 0.2), Segment("launch", 0.3),
        Segment("kernel", 6.5, FLOAT32_KERNELS[0], hide=("h2d",)), Segment("kernel", 2.0, FLOAT32_KERNELS[1]),
        Segment("h2d", 0.4), Segment("gap", 0.6)], policy="mixed_float16"),
    "half_without_tensor_cores": Scenario("half_without_tensor_cores", [
        Segment("input", 0.2), Segment("launch", 0.3),
        Segment("kernel", 6.5, "void Eigen::internal::EigenMetaKernel<Eigen::half>"),
        Segment("kernel", 2.0, "maxwell_fp16_sgemm_fp16_128x64_nn"),
        Segment("h2d", 0.4), Segment("gap", 0.6)], policy="mixed_float16"),
}
