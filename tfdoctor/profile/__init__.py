"""The micro-profile: run a short TensorFlow workload in a fresh process and turn what it measured
(and what the TensorFlow Profiler recorded) into facts. It never yields findings: checks read the
"profile" facts section."""

from tfdoctor.profile.runner import WORKLOADS, RunResult, WorkloadError, run_workload

__all__ = ["WORKLOADS", "RunResult", "WorkloadError", "run_workload"]
