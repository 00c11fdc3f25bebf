"""Healthy twins of the info notes on settings whose cost only a run can tell (issue 12 item 5): CPU101
(oneDNN on one thread), DIST109 (a multi-worker start-up waits for every task), XLA104 (auto-clustering,
unmeasured). Each machine is configured right; the note may appear (info), nothing may warn."""

from __future__ import annotations

import json

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV, _laptop
from .machines_gpu import _second_toolkit

# A laptop running a hyper-parameter sweep: eight single-threaded trials side by side, each pinned to one
# thread as the sweep tool's guide says (TF_NUM_INTRAOP_THREADS=1 OMP_NUM_THREADS=1).
SWEEP_ENV = {**USER_ENV, "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1"}
register(HealthyMachine(
    "laptop-single-thread-sweep-trial", ("CPU", "THR"),
    "one trial of an 8-trial sweep on a Tiger Lake laptop, TensorFlow pinned to one thread",
    _laptop, env=SWEEP_ENV, python=VENV))


def _worker_node(root: FakeRoot) -> None:
    parts.cpus(root, parts.ROME, sockets=2, cores_per_socket=64, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "cpu-w0", mem_gib=512, address="10.1.0.10", nic="ens1f0", nic_mbps=100000)
    parts.tensorflow_2_21(root, VENV)


TF_CONFIG = json.dumps({"cluster": {"worker": ["cpu-w0:2222", "cpu-w1:2222", "cpu-w2:2222", "cpu-w3:2222"]},
                        "task": {"type": "worker", "index": 0}})
register(HealthyMachine(
    "multi-worker-cpu-node", ("DIST",),
    "worker 0 of four MultiWorkerMirroredStrategy CPU workers launched by one srun step",
    _worker_node, env={**USER_ENV, "TF_CONFIG": TF_CONFIG}, python=VENV))

register(HealthyMachine(
    "gpu-workstation-auto-jit", ("XLA",),
    "the RTX 4090 workstation with TF_XLA_FLAGS=--tf_xla_auto_jit=2 for a fixed-shape image model",
    _second_toolkit, env={**USER_ENV, "TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}, python=VENV))
