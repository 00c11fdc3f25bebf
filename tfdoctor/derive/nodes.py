"""Whether a job spans several nodes, from what its launcher announced (pure; the pre-job hook uses it,
so plain functions and no imports).

Slurm says how many nodes the job has (SLURM_JOB_NUM_NODES, and SLURM_NNODES for srun's step); an MPI
launcher says how many ranks the world has and how many of them run on this host: a world larger than
its local part lives on several hosts (Open MPI's OMPI_COMM_WORLD_SIZE and _LOCAL_SIZE, MPICH's and Intel
MPI's Hydra PMI_SIZE and MPI_LOCALNRANKS, MVAPICH's MV2_COMM_WORLD_SIZE and _LOCAL_SIZE).
"""

from __future__ import annotations

from collections.abc import Callable

NODE_COUNT_VARIABLES = ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")
WORLD_AND_LOCAL_SIZES = (("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"), ("PMI_SIZE", "MPI_LOCALNRANKS"),
                         ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"))


def _number(value: str | None) -> int | None:
    digits = (value or "").strip()
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 9 else None


def spans_several_nodes(env: Callable[[str], str | None]) -> bool:
    """True when the launcher's variables (read through `env`) say the job runs on more than one node."""
    for name in NODE_COUNT_VARIABLES:
        nodes = _number(env(name))
        if nodes is not None and nodes > 1:
            return True
    for world_name, local_name in WORLD_AND_LOCAL_SIZES:
        world, local = _number(env(world_name)), _number(env(local_name))
        if world is not None and local is not None and 0 < local < world:
            return True
    return False
