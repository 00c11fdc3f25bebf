"""A corpus of healthy machines: every check runs over each of them and none may warn (issue 16).

`MACHINES` lists them (registered in machines.py); `examine(machine, tmp_path)` runs every registered
check over one, through the same probes and facts file `tfdoctor check` uses."""

import importlib
import pkgutil

from .corpus import MACHINES, Examined, HealthyMachine, check_recorded, collect, examine, family, register

# Each module machines*.py registers its machines; they are found by name, so a new area is one new file.
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("machines")):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["MACHINES", "Examined", "HealthyMachine", "check_recorded", "collect", "examine", "family", "register"]
