"""Whether this job can use NCCL at all (pure): collectives need several GPUs in one process, or several
workers. One GPU and no multi-worker configuration never calls NCCL."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfdoctor.derive.gpu_inventory import visible_gpus
from tfdoctor.derive.tf_config import parse_tf_config
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.facts.parse import count

# Launchers' world sizes: several of them means several workers, each with its own GPUs.
WORLD_SIZE_VARIABLES = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "MV2_COMM_WORLD_SIZE")


@dataclass(frozen=True)
class CollectiveLayout:
    """Whether the job will call collectives: the GPUs this process sees and the workers of the job."""

    gpus: int | None  # GPUs this process sees; None: unknown (NVML could not list them)
    workers: int  # processes of the job (1 without a multi-worker configuration)
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def uses_collectives(self) -> bool | None:
        """True with several GPUs or workers; False with one GPU and one worker; None when unknown."""
        if self.workers > 1 or (self.gpus or 0) > 1:
            return True
        return None if self.gpus is None else False


def collective_layout(facts: Facts) -> CollectiveLayout:
    evidence: dict[str, Any] = {}
    try:
        gpus: int | None = len(visible_gpus(facts))
        evidence["visible_gpus"] = gpus
    except NotChecked as exc:
        gpus = None
        evidence["visible_gpus"] = f"unknown: {exc.reason}"
    workers = 1
    raw = facts.env("TF_CONFIG")
    if raw:
        config, _ = parse_tf_config(raw)
        if config is not None:
            replicas = sum(len(config.cluster.get(job, [])) for job in ("chief", "worker", "master"))
            if replicas > 1:
                workers, evidence["env.TF_CONFIG"] = replicas, f"{replicas} chief/worker tasks"
    for name in WORLD_SIZE_VARIABLES:
        value = facts.env(name)
        size = count(value) if value else None
        if size is not None and size > workers:
            workers, evidence[f"env.{name}"] = size, value
    return CollectiveLayout(gpus, workers, evidence)
