"""A corpus of healthy machines: every check runs over each of them and none may warn (issue 16).

`MACHINES` lists them (registered in machines.py); `examine(machine, tmp_path)` runs every registered
check over one, through the same probes and facts file `tfdoctor check` uses."""

from . import (  # noqa: F401  (each module registers its machines)
    machines,
    machines_cluster,
    machines_gpu,
    machines_gpu_stack,
    machines_only_a_run_can_tell,
    machines_pyenv,
    machines_threads,
)
from .corpus import MACHINES, Examined, HealthyMachine, check_recorded, collect, examine, family, register

__all__ = ["MACHINES", "Examined", "HealthyMachine", "check_recorded", "collect", "examine", "family", "register"]
