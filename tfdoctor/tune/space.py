"""The search space: which settings a tune varies, over which values, as plain data.

The default space is bounded by the job's CPU budget (tfdoctor.derive.cpu_budget): proposing 64 intra-op threads
to a job that may keep 2 CPUs busy measures nothing but contention. A user space file (TOML or JSON) can
narrow a parameter, fix it, drop it, or add a new one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfdoctor.derive.cpu_budget import CpuBudget, recommended_threads
from tfdoctor.fixes.quoting import ScriptValueError, env_name

UNSET = "unset"  # the choice that removes the variable from the trial's environment
SPACE_FILE_LIMIT = 1024 * 1024
MAX_CHOICES = 10_000

# Presets rather than the full grammar of KMP_AFFINITY: these are the ones Intel's TensorFlow guides use.
KMP_AFFINITY_PRESETS = (UNSET, "granularity=fine,compact,1,0", "granularity=fine,scatter", "none")
OMP_PROC_BIND_PRESETS = (UNSET, "close", "spread", "false")
KMP_BLOCKTIME_VALUES = ("0", "1", "10", "50", "200")


class SpaceError(ValueError):
    """A space file that cannot be used (shown to the user as a usage error)."""


def _checked_name(name: object, where: str) -> str:
    """Every parameter name becomes an environment variable in trials and in the winner's env.sh."""
    try:
        return env_name(name, where)
    except ScriptValueError as exc:
        raise SpaceError(str(exc)) from None


@dataclass(frozen=True)
class Parameter:
    """One dimension. `kind` "int": every integer in [low, high]; "choice": one of `choices`.

    `target` is "env" for an environment variable (the name is the variable) or "launcher" for a command
    prefix (NUMA binding), whose choices map to argv prefixes in `launchers`.
    """

    name: str
    kind: str
    low: int = 0
    high: int = 0
    log: bool = False
    choices: tuple[str, ...] = ()
    target: str = "env"
    launchers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def size(self) -> int:
        return self.high - self.low + 1 if self.kind == "int" else len(self.choices)

    def contains(self, value: Any) -> bool:
        if self.kind == "int":
            return isinstance(value, int) and self.low <= value <= self.high
        return value in self.choices

    def env_value(self, value: Any) -> str | None:
        """The variable's value for a trial; None means unset it."""
        if self.kind == "choice" and value == UNSET:
            return None
        return str(value)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "kind": self.kind, "target": self.target}
        if self.kind == "int":
            data.update(low=self.low, high=self.high, log=self.log)
        else:
            data["choices"] = list(self.choices)
        if self.launchers:
            data["launchers"] = {k: list(v) for k, v in self.launchers.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Parameter:
        """A parameter recorded in a results file; ValueError (SpaceError) for anything a tune never writes.

        A resumed tune writes these names into env.sh and these launchers into argv, so the file is checked
        like a space file: a name must be an environment variable name, a launcher a list of strings."""
        name, kind, target = data["name"], data["kind"], data.get("target", "env")
        if kind not in ("int", "choice") or target not in ("env", "launcher"):
            raise SpaceError(f"parameter {name!r}: kind {kind!r} / target {target!r} is not one a tune writes")
        _checked_name(name, "parameter")
        low, high = int(data.get("low", 0)), int(data.get("high", 0))
        choices = data.get("choices", [])
        launchers = data.get("launchers") or {}
        if not isinstance(choices, list) or len(choices) > MAX_CHOICES or not isinstance(launchers, dict):
            raise SpaceError(f"parameter {name}: malformed choices or launchers")
        if kind == "int" and not 0 <= low <= high:
            raise SpaceError(f"parameter {name}: need 0 <= low <= high, got {low}..{high}")
        if kind == "choice" and not choices:
            raise SpaceError(f"parameter {name}: no choices")
        for prefix in launchers.values():
            if not isinstance(prefix, list) or not all(isinstance(arg, str) for arg in prefix):
                raise SpaceError(f"parameter {name}: a launcher must be a list of strings")
        return cls(
            name=name, kind=kind, low=low, high=high,
            log=bool(data.get("log", False)), choices=tuple(str(c) for c in choices),
            target=target, launchers={str(k): tuple(v) for k, v in launchers.items()},
        )


@dataclass(frozen=True)
class Space:
    """The parameters a tune searches."""

    parameters: tuple[Parameter, ...]

    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def by_name(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(name)

    def size(self) -> int:
        return math.prod(p.size() for p in self.parameters)

    def clip(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A full assignment inside the space from partial or out-of-range values (seeds)."""
        out: dict[str, Any] = {}
        for p in self.parameters:
            value = values.get(p.name)
            if p.kind == "int":
                try:
                    number = int(value) if value is not None else p.high
                except (TypeError, ValueError):
                    number = p.high
                out[p.name] = min(p.high, max(p.low, number))
            else:
                text = UNSET if value is None else str(value)
                out[p.name] = text if text in p.choices else p.choices[0]
        return out

    def env_changes(self, params: Mapping[str, Any]) -> dict[str, str | None]:
        return {p.name: p.env_value(params[p.name]) for p in self.parameters if p.target == "env"}

    def launcher(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        prefix: list[str] = []
        for p in self.parameters:
            if p.target == "launcher":
                prefix.extend(p.launchers.get(str(params[p.name]), ()))
        return tuple(prefix)

    def accepts(self, env: Mapping[str, str | None], launcher: Sequence[str]) -> bool:
        """Whether a run's environment changes and launcher words are a configuration of this space: what a
        shared tune's helper checks before it runs a job read from the study (anyone who can write the
        journal or the database could otherwise make every node run any command or set LD_PRELOAD)."""
        for name, value in env.items():
            try:
                p = self.by_name(name)
            except KeyError:
                return False
            if p.target != "env":
                return False
            if p.kind == "int":
                if value is None or not (value.isascii() and value.isdigit() and len(value) <= 9
                                         and p.low <= int(value) <= p.high):
                    return False
            elif value not in {p.env_value(c) for c in p.choices}:
                return False
        prefixes: set[tuple[str, ...]] = {()}
        for p in self.parameters:
            if p.target == "launcher":
                prefixes = {(*prefix, *words) for prefix in prefixes for words in (*p.launchers.values(), ())}
                if len(prefixes) > 4096:  # far past any real space: refuse rather than enumerate
                    return False
        return tuple(launcher) in prefixes

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.parameters]

    @classmethod
    def from_json(cls, data: list[Mapping[str, Any]]) -> Space:
        if not isinstance(data, list) or not data:
            raise SpaceError("the space must be a non-empty list of parameters")
        parameters = tuple(Parameter.from_json(d) for d in data)
        if len({p.name for p in parameters}) != len(parameters):
            raise SpaceError("the space names a parameter twice")
        return cls(parameters)


def int_param(name: str, low: int, high: int, log: bool = False) -> Parameter:
    return Parameter(name, "int", low=low, high=max(low, high), log=log and high > low)


def choice_param(name: str, choices: tuple[str, ...]) -> Parameter:
    return Parameter(name, "choice", choices=choices)


def numa_parameter(launchers: Mapping[str, tuple[str, ...]]) -> Parameter | None:
    """NUMA binding is a dimension only with more than one node to bind to (tfdoctor.tune.numa_binding):
    each choice is a command prefix from the NUMA launcher ("none": no prefix)."""
    if len(launchers) <= 1:
        return None
    return Parameter("numa_bind", "choice", choices=tuple(launchers), target="launcher",
                     launchers=dict(launchers))


def default_space(budget: CpuBudget, numa_launchers: Mapping[str, tuple[str, ...]] | None = None) -> Space:
    """Thread counts from 1 to the budget (an oversubscribed pool only adds contention), inter-op up to
    half of it (at least 2 so it can vary); the OpenMP/oneDNN knobs as presets."""
    cpus = budget.cpus
    parameters = [
        int_param("TF_NUM_INTRAOP_THREADS", 1, cpus, log=cpus > 8),
        int_param("TF_NUM_INTEROP_THREADS", 1, max(2, min(cpus, max(budget.sockets, cpus // 2)))),
        int_param("OMP_NUM_THREADS", 1, cpus, log=cpus > 8),
        choice_param("KMP_BLOCKTIME", KMP_BLOCKTIME_VALUES),
        choice_param("KMP_AFFINITY", KMP_AFFINITY_PRESETS),
        choice_param("OMP_PROC_BIND", OMP_PROC_BIND_PRESETS),
        choice_param("TF_ENABLE_ONEDNN_OPTS", ("1", "0")),
    ]
    numa = numa_parameter(numa_launchers or {})
    if numa is not None:
        parameters.append(numa)
    return Space(tuple(parameters))


def rule_based_settings(budget: CpuBudget, space: Space) -> dict[str, Any]:
    """The rule-of-thumb recommendation (intra = cores, inter = sockets, OMP = intra; blocktime 1 and
    compact affinity as Intel's guides say), clipped into the space. It seeds the search."""
    rules: dict[str, Any] = dict(recommended_threads(budget))
    rules.update(KMP_BLOCKTIME="1", KMP_AFFINITY="granularity=fine,compact,1,0", OMP_PROC_BIND=UNSET,
                 TF_ENABLE_ONEDNN_OPTS="1", numa_bind="none")
    return space.clip(rules)


def current_settings(space: Space, environ: Mapping[str, str], budget: CpuBudget) -> dict[str, Any]:
    """The point of the space nearest to what the job runs with now. An unset thread count behaves like
    TensorFlow's default (all host CPUs), which the space clips to the budget."""
    values: dict[str, Any] = {}
    for p in space.parameters:
        raw = environ.get(p.name)
        if p.kind == "int":
            values[p.name] = raw if raw not in (None, "", "0") else budget.host_cpus
        else:
            values[p.name] = raw if raw is not None else (UNSET if UNSET in p.choices else "none")
    return space.clip(values)


# -- user space files ----------------------------------------------------------------------------

def load_space_file(path: str | Path) -> dict[str, Any]:
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    file = Path(path)
    try:
        text = read_input_file(file, SPACE_FILE_LIMIT, "--space").decode("utf-8")
    except InputFileError as exc:
        raise SpaceError(str(exc)) from None
    except UnicodeDecodeError:
        raise SpaceError(f"--space {path}: not UTF-8 text") from None
    try:
        if file.suffix == ".json":
            data = json.loads(text)
        else:
            try:
                import tomllib
            except ImportError:  # Python 3.10
                import tomli as tomllib  # type: ignore[no-redef]
            data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser follows
        raise SpaceError(f"--space {path}: not valid {'JSON' if file.suffix == '.json' else 'TOML'}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("parameters", {}), dict):
        raise SpaceError(f"--space {path}: expected a table [parameters.NAME] per parameter")
    stray = sorted(set(data) - {"parameters"})
    if stray:
        # A misspelt or missing [parameters] table would otherwise tune the default space silently.
        raise SpaceError(f"--space {path}: unknown top-level key(s) {', '.join(stray)}; "
                         "expected a table [parameters.NAME] per parameter")
    return data


def apply_space_file(space: Space, data: Mapping[str, Any], source: str = "--space") -> Space:
    """Each [parameters.NAME] table narrows (low/high/values), fixes (value), drops (drop = true) or,
    for a new NAME, adds a parameter. Unknown keys are errors: a typo must not be silently ignored."""
    parameters = {p.name: p for p in space.parameters}
    for name, spec in (data.get("parameters") or {}).items():
        where = f"{source}: parameters.{name!r}"
        if name not in parameters or parameters[name].target == "env":
            _checked_name(name, where)
        if not isinstance(spec, dict):
            raise SpaceError(f"{where}: expected a table")
        unknown = set(spec) - {"low", "high", "log", "values", "value", "drop"}
        if unknown:
            raise SpaceError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        if spec.get("drop"):
            parameters.pop(name, None)
            continue
        current = parameters.get(name)
        if "value" in spec:
            parameters[name] = choice_param(name, (str(spec["value"]),))
        elif "values" in spec:
            values = spec["values"]
            if not isinstance(values, list) or not values:
                raise SpaceError(f"{where}: values must be a non-empty list")
            parameters[name] = choice_param(name, tuple(str(v) for v in values))
        elif "low" in spec or "high" in spec:
            base = current if current is not None and current.kind == "int" else None
            try:
                low = int(spec.get("low", base.low if base else 1))
                high = int(spec.get("high", base.high if base else low))
            except (TypeError, ValueError):
                raise SpaceError(f"{where}: low and high must be integers") from None
            if low < 0 or high < low:
                raise SpaceError(f"{where}: need 0 <= low <= high, got {low}..{high}")
            log = bool(spec.get("log", base.log if base else False)) and low >= 1
            parameters[name] = replace(int_param(name, low, high, log))
        elif current is None:
            raise SpaceError(f"{where}: a new parameter needs low/high, values or value")
    if not parameters:
        raise SpaceError(f"{source}: the space has no parameter left")
    return Space(tuple(parameters.values()))
