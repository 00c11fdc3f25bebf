"""A corpus of real reports, each rebuilt as the machine it describes (issues 35 and 36).

Every module `reports_<area>.py` in this folder registers its reports with `register(RealReport(...))`;
they are found by name, so adding an area touches no other file. See README.md here."""

import importlib
import pkgutil

from .corpus import CATEGORIES, REPORTS, SPLITS, RealReport, diagnosed, examine, register

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("reports_")):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["CATEGORIES", "REPORTS", "SPLITS", "RealReport", "diagnosed", "examine", "register"]
