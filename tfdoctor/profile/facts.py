"""The "profile" facts section: what a workload run measured, plus what its XSpace shows (pure).

Timing facts come from the workload's own clock (step time, input wait per step); the XSpace adds what
only the profiler sees (devices and whether device activity was captured, op times, XLA clusters,
float16/bfloat16 kernels). For a user's script, whose steps tfdoctor does not drive, step times and the
input share come from the XSpace: the script's step markers, else the steps the workload process found
(Keras batches, the most-called tf.function), whose windows it also wrote into its result — the fallback
when there is no trace. The first `warmup` steps of a script are not timed.
"""

from __future__ import annotations

from typing import Any

from tfdoctor.facts import Unknown
from tfdoctor.profile.runner import RunResult
from tfdoctor.profile.xspace import step_spans, step_summary

INPUT_BOUND_SHARE = 0.5  # more than half of every step waits for the next batch
NOISY_STEAL = 0.05  # 5 % of CPU time taken by the hypervisor: the timings are suspect
XSPACE_KEYS = ("device_activity_captured", "host_op_seconds", "device_seconds", "top_ops",
               "low_precision_share", "xla_clusters", "breakdown")


def profile_section(run: RunResult, workload: str, xspace: dict[str, Any] | Unknown,
                    xspace_path: str | None = None, warmup: int = 0) -> dict[str, Any]:
    if not run.ok:
        return {"workload": workload, "ok": False, "error": run.error or "the workload failed",
                "cpu_steal": run.cpu_steal, "wall_seconds": run.wall_seconds}
    device_names = [d.get("name", "") for d in run.devices]
    gpu_present = any(d.get("type") == "GPU" for d in run.devices)
    section: dict[str, Any] = {
        "workload": workload,
        "ok": True,
        "tf_version": run.tf_version,
        "devices": device_names,
        "gpu_present": gpu_present,
        "policy": run.policy,
        "jit_compile": run.jit_compile,
        "steps": step_summary(list(run.step_seconds)),
        "input_share": run.input_share,
        "cpu_steal": run.cpu_steal,
        "noisy": bool(run.cpu_steal is not None and run.cpu_steal > NOISY_STEAL),
        "import_seconds": run.import_seconds,
        "wall_seconds": run.wall_seconds,
        "logdir": run.logdir,
        "xspace_file": xspace_path,
    }
    if isinstance(xspace, Unknown):
        for key in XSPACE_KEYS:
            section[key] = xspace
    else:
        for key in XSPACE_KEYS:
            section[key] = xspace.get(key)
        section["planes"] = xspace.get("planes", [])
        if gpu_present and not xspace.get("device_planes"):
            # TensorFlow saw a GPU but the profile holds no device plane at all: nothing captured.
            section["device_activity_captured"] = False
    if workload == "script":
        section.update(script_steps(run, xspace, warmup))
    share = section.get("input_share")
    section["input_bound"] = (share >= INPUT_BOUND_SHARE) if isinstance(share, float) else None
    return section


def found_steps(run: RunResult) -> dict[str, Any]:
    """What the workload process found in a script (workload_main.ScriptSteps.to_json), or nothing."""
    found = run.extra.get("script_steps")
    return found if isinstance(found, dict) else {}


def script_steps(run: RunResult, xspace: dict[str, Any] | Unknown, warmup: int) -> dict[str, Any]:
    """steps, input_share, step_source and step_candidates of a script's run."""
    found = found_steps(run)
    candidates = [c for c in found.get("candidates") or () if isinstance(c, dict)]
    facts: dict[str, Any] = {"step_candidates": candidates}
    source = xspace.get("step_source") if isinstance(xspace, dict) else None
    if source:
        return facts | {"steps": xspace["steps"], "input_share": xspace.get("input_share"),
                        "step_source": "step markers" if source == "markers" else found.get("name") or source}
    windows = [(float(w[0]), float(w[1]), int(w[2])) for w in found.get("windows") or ()
               if isinstance(w, list) and len(w) == 3 and all(isinstance(v, (int, float)) for v in w)]
    spans, inputs = step_spans(windows, warmup, bool(found.get("gap_is_input")))
    total = sum(stop - start for start, stop in spans)
    steps = step_summary([stop - start for start, stop in spans]) | {"excluded_warmup": min(warmup, len(windows))}
    # Without the trace Keras's wait inside its train function (IteratorGetNext) is not visible.
    share = min(1.0, sum(inputs) / total) if total and found.get("gap_is_input") else None
    return facts | {"steps": steps, "input_share": share, "step_source": found.get("name") if windows else None}
