"""Inputs for the report tests: a fleet with planted secrets, a profile document with a breakdown, and a
tune results file, each in the exact shape the producing command writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tfdoctor.testing.fleet import node_facts
from tfdoctor.tune.results import ResultsLog, TrialRecord
from tfdoctor.tune.space import choice_param, int_param

# Planted secrets in real formats; none may reach a page.
SECRET_URL_PASSWORD = "hunter2-Plant3d"
SECRET_HF_TOKEN = "hf_PlantedTokenAbcdefghijklmnop12345"
# A token pasted into a thread variable: THR001 quotes the value in its message and evidence.
SECRET_GH_TOKEN = "ghp_PlantedTokenAbcdefghijklmnopqrstuvwx"


def write_fleet(folder: Path) -> list[Path]:
    """Three nodes; gpu03 runs an older driver (the odd node), gpu02 carries the planted secrets."""
    paths = []
    for name, extra in (("gpu01", {}),
                        ("gpu02", {"env": {"PIP_INDEX_URL": f"https://alice:{SECRET_URL_PASSWORD}@pypi.example.org/simple",
                                           "HF_TOKEN": SECRET_HF_TOKEN, "OMP_NUM_THREADS": SECRET_GH_TOKEN}}),
                        ("gpu03", {"driver": "535.104.05"})):
        path = folder / f"{name}.json"
        path.write_text(json.dumps(node_facts(name, **extra)))  # type: ignore[arg-type]
        paths.append(path)
    return paths


def profile_document(steps_ms: tuple[dict[str, float], ...]) -> dict[str, Any]:
    """What `tfdoctor profile --format json` prints, with a step-time breakdown per step."""
    per_step = [{"step": i, "step_ms": sum(c.values()), "categories_ms": c} for i, c in enumerate(steps_ms)]
    keys = {k for c in steps_ms for k in c}
    mean = {k: sum(c.get(k, 0.0) for c in steps_ms) / len(steps_ms) for k in keys}
    return {"profile": {
        "ok": True, "workload": "cnn", "tf_version": "2.21.0", "devices": ["/device:CPU:0"],
        "steps": {"count": len(steps_ms), "median_seconds": 0.1, "spread": 0.05}, "input_share": 0.25,
        "input_bound": False, "policy": "float32", "low_precision_share": None, "cpu_steal": 0.01, "noisy": False,
        "top_ops": [{"where": "host", "op": "Conv2DBackpropFilter", "seconds": 1.5, "share": 0.5}],
        "breakdown": {"step_ms": sum(mean.values()), "categories_ms": mean, "per_step": per_step},
    }, "findings": []}


def verdict_document() -> dict[str, Any]:
    """What `tfdoctor profile --compare before.sh after.sh --format json` prints."""
    return {"baseline": "before.sh", "candidate": "after.sh", "verdict": "slower",
            "interval": {"ratio": 1.25, "low": 1.1, "high": 1.4, "confidence": 0.95},
            "baseline_step_seconds": [0.1, 0.1], "candidate_step_seconds": [0.125, 0.126], "rounds": 4,
            "seconds": 30.0, "error": "", "cpu_steal": 0.0, "foreign_cpu": 0.0}


def write_tune_results(path: Path) -> Path:
    """A finished tune over intra × inter × a choice: two seeds, eight search trials, a confirmation."""
    space = [int_param("TF_NUM_INTRAOP_THREADS", 1, 8), int_param("TF_NUM_INTEROP_THREADS", 1, 4),
             choice_param("KMP_BLOCKTIME", ("0", "1", "200"))]
    header = {"space": [p.to_json() for p in space], "seeds": {}, "maximize": True, "budget": 10,
              "time_limit": None, "seed": 1, "objective": {"command": ["python", "train.py"]}}
    log = ResultsLog.create(path, header)
    trials = [("current", 2, 2, "0", 80.0), ("rule", 4, 2, "1", 95.0), ("search", 8, 1, "200", 90.0),
              ("search", 6, 1, "0", 99.0), ("search", 1, 4, "1", 40.0), ("search", 3, 3, "200", 85.0),
              ("search", 5, 2, "0", 97.0), ("search", 7, 4, "1", 70.0), ("search", 2, 1, "200", 60.0),
              ("search", 6, 2, "1", 98.0)]
    for number, (phase, intra, inter, blocktime, value) in enumerate(trials):
        params = {"TF_NUM_INTRAOP_THREADS": intra, "TF_NUM_INTEROP_THREADS": inter, "KMP_BLOCKTIME": blocktime}
        log.append(TrialRecord(number, phase, params, "ok", value, 1.0))
    confirm = [("leader", 6, 1, "0", 101.0), ("leader", 6, 2, "1", 96.0), ("current", 2, 2, "0", 82.0),
               ("rule", 4, 2, "1", 93.0)]
    for offset, (role, intra, inter, blocktime, value) in enumerate(confirm):
        params = {"TF_NUM_INTRAOP_THREADS": intra, "TF_NUM_INTEROP_THREADS": inter, "KMP_BLOCKTIME": blocktime}
        log.append(TrialRecord(len(trials) + offset, "confirm", params, "ok", value, 1.0, role=role))
    log.append_summary({"stopped": "budget", "mattered": ["TF_NUM_INTRAOP_THREADS"], "effects": {
        "TF_NUM_INTRAOP_THREADS": {"effect": 0.31, "best_value": 6, "best_gain": 0.04, "steps": 3, "matters": True},
        "KMP_BLOCKTIME": {"effect": 0.012, "best_value": "1", "best_gain": 0.0, "steps": 2, "matters": False}}})
    return path
