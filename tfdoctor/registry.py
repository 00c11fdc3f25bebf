"""Checks and probes, and how they are found.

The entry-point groups are the plugin API: `tfdoctor.checks` names modules (or single functions) that
hold `@check` functions, `tfdoctor.probes` names modules that hold `@probe` functions. tfdoctor's own
checks and probes are registered through the very same groups in its pyproject.toml, so a third-party
check is found, selected, documented and run exactly like a built-in one.
"""

from __future__ import annotations

import functools
import re
import sys
import types
from collections.abc import Callable, Iterable, Iterator

from tfdoctor.model import Finding, Severity
from tfdoctor.records import record, value_tuple

CHECK_GROUP = "tfdoctor.checks"
PROBE_GROUP = "tfdoctor.probes"
LINT_RULE_GROUP = "tfdoctor.lint_rules"  # rules of `tfdoctor lint` (tfdoctor/lint/rule.py)

CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Fix", "Fix safety")

CheckFunc = Callable[..., Iterable[Finding]]
ProbeFunc = Callable[..., object]

_CHECK_ATTR = "__tfdoctor_check__"
_PROBE_ATTR = "__tfdoctor_probe__"


@value_tuple
class CheckSpec:
    """A registered check: its code, name and severity, its function and where it came from."""

    code: str
    name: str
    severity: Severity
    func: CheckFunc
    origin: str = ""  # the entry point (or module) it came from

    @property
    def doc(self) -> str:
        return doc_of(self.func)

    @property
    def summary(self) -> str:
        return doc_summary(self.doc)


def doc_of(func: Callable[..., object]) -> str:
    """A check's (or lint rule's) documentation: its docstring, and under `python -OO`, which strips every
    docstring, the same text read from its source, so `explain`, `--list-rules` and docs/checks.md do not
    go blank there."""
    doc = func.__doc__
    if doc is None:
        doc = _source_docstring(func)
    return _dedent_doc(doc or "")


@functools.cache
def _source_docstring(func: Callable[..., object]) -> str | None:
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, ValueError):  # no source shipped (a zipped or compiled plugin)
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return ast.get_docstring(node, clean=False)
    return None


def doc_summary(doc: str) -> str:
    """One line for a listing: the doc's first line, or, when the doc opens with a section heading
    ("What it does:"), the first sentence of that section's body."""
    lines = doc.strip().splitlines()
    if not lines:
        return ""
    if lines[0].rstrip(":").strip() not in DOC_SECTIONS:
        return lines[0].strip()
    body: list[str] = []
    for line in lines[1:]:
        if not line.strip() or line.rstrip(":").strip() in DOC_SECTIONS:
            break
        body.append(line.strip())
    text = " ".join(body)
    # The first sentence: up to a full stop followed by a space (not "e.g. " or "v1.2").
    match = re.search(r"(?<!\be\.g)(?<!\bi\.e)\.(?=\s)", text)
    return text[: match.end()] if match else text


@value_tuple
class ProbeSpec:
    """A registered probe: the facts section it fills, its function, its own time limit."""

    section: str
    func: ProbeFunc
    # Seconds this probe may take before it is abandoned and its section reported unknown.
    timeout: float | None = None
    origin: str = ""
    # Whether, on this machine, the probe will wait on a child process (another interpreter): such a probe
    # starts first, in a lane of its own, so that the child runs on another CPU beside the other probes.
    waits_on_child: Callable[..., bool] | None = None


def validate_identity(kind: str, code: str, name: str) -> None:
    """Codes are PREFIX + 3 digits and names kebab-case, for checks and lint rules alike."""
    if not CODE_RE.match(code):
        raise ValueError(f"{kind} code {code!r} is not PREFIX + 3 digits")
    if not NAME_RE.match(name):
        raise ValueError(f"{kind} name {name!r} is not kebab-case")


def check(code: str, name: str, severity: Severity) -> Callable[[CheckFunc], CheckFunc]:
    """Mark a function as a check. Its docstring is its documentation (see DOC_SECTIONS)."""
    validate_identity("check", code, name)

    def mark(func: CheckFunc) -> CheckFunc:
        setattr(func, _CHECK_ATTR, CheckSpec(code, name, severity, func))
        return func

    return mark


def probe(section: str, timeout: float | None = None,
          waits_on_child: Callable[..., bool] | None = None) -> Callable[[ProbeFunc], ProbeFunc]:
    """Mark a function `f(machine) -> dict` as the probe that fills one facts section. `waits_on_child(machine)`
    says whether it will wait on a child process there (it then starts first, beside the others)."""

    def mark(func: ProbeFunc) -> ProbeFunc:
        setattr(func, _PROBE_ATTR, ProbeSpec(section, func, timeout, waits_on_child=waits_on_child))
        return func

    return mark


def _dedent_doc(doc: str) -> str:
    import inspect

    return inspect.cleandoc(doc)


def _marked(obj: object, attr: str) -> Iterator[object]:
    if isinstance(obj, types.ModuleType):
        for value in vars(obj).values():
            spec = getattr(value, attr, None)
            if spec is not None and getattr(spec, "func", None) is value:
                yield spec
    else:
        spec = getattr(obj, attr, None)
        if spec is not None:
            yield spec


class PluginError(Exception):
    """A plugin that cannot be loaded, or that clashes with another (same code)."""


@functools.lru_cache(maxsize=1)
def _all_entry_points() -> tuple[tuple[str, str, str], ...]:
    """One scan of every installed distribution's entry points, shared by all plugin groups.

    This is the pre-job hook's hot path: importing importlib.metadata and walking its distribution
    objects costs 25-70 ms here, more than everything tfdoctor checks. The files themselves are tiny, so
    they are read directly: every `*.dist-info/entry_points.txt` (or `*.egg-info/`) on sys.path, first
    occurrence of a distribution winning, as the import system would. Zipped paths (eggs, zipapps) are
    left to importlib.metadata.
    """
    import os
    import sys

    wanted = {CHECK_GROUP, PROBE_GROUP, *EXTRA_GROUPS}
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    zipped = False
    for entry in sys.path:
        folder = entry or "."
        try:
            names = sorted(os.listdir(folder))
        except NotADirectoryError:
            zipped = True
            continue
        except OSError:
            continue
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if suffix not in ("dist-info", "egg-info") or not dot:
                continue
            dist = re.sub(r"[-_.]+", "-", stem.split("-", 1)[0]).lower()
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            found.extend(t for t in parse_entry_points(text) if t[0] in wanted)
    if zipped:
        from importlib.metadata import distributions

        for dist in distributions():
            if dist.metadata["Name"] and re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower() not in seen:
                found.extend((ep.group, ep.name, ep.value) for ep in dist.entry_points if ep.group in wanted)
    return tuple(found)


def parse_entry_points(text: str) -> list[tuple[str, str, str]]:
    """entry_points.txt (the PyPA entry-points file format: INI sections per group, `name = value`)."""
    entries: list[tuple[str, str, str]] = []
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if sep and group:
            entries.append((group, name.strip(), value.strip()))
    return entries


# Other plugin groups (e.g. lint rules) read through the same cached scan.
EXTRA_GROUPS: tuple[str, ...] = (LINT_RULE_GROUP,)


def _entry_points(group: str) -> list[tuple[str, str]]:
    found = sorted({(name, value) for g, name, value in _all_entry_points() if g == group})
    if not found and group in _BUILTIN_FALLBACK:
        # Running from a source tree that was never installed: no entry points exist at all.
        found = [(name, value) for name, value in _BUILTIN_FALLBACK[group]]
    return found


# Used only when tfdoctor's own metadata is missing (a clone put on PYTHONPATH, never installed); kept in
# step with pyproject.toml by test_fallback_list_matches_pyproject_entry_points.
_BUILTIN_FALLBACK: dict[str, list[tuple[str, str]]] = {
    CHECK_GROUP: [
        ("threads", "tfdoctor.checks.threads"),
        ("affinity_cpus", "tfdoctor.checks.affinity_cpus"),
        ("cpu", "tfdoctor.checks.cpu"),
        ("packages", "tfdoctor.checks.packages"),
        ("cuda", "tfdoctor.checks.cuda"),
        ("cupti", "tfdoctor.checks.cupti"),
        ("driver", "tfdoctor.checks.driver"),
        ("gpu_health", "tfdoctor.checks.gpu_health"),
        ("xla", "tfdoctor.checks.xla"),
        ("layout", "tfdoctor.checks.layout"),
        ("mixed_precision", "tfdoctor.checks.mixed_precision"),
        ("xla_settings", "tfdoctor.checks.xla_settings"),
        ("gpu_runtime", "tfdoctor.checks.gpu_runtime"),
        ("distribution", "tfdoctor.checks.distribution"),
        ("profile", "tfdoctor.checks.profile"),
        ("numa", "tfdoctor.checks.numa"),
        ("containers", "tfdoctor.checks.containers"),
        ("platforms", "tfdoctor.checks.platforms"),
        ("cupti_wsl", "tfdoctor.checks.cupti_wsl"),
        ("conda", "tfdoctor.checks.conda"),
        ("release", "tfdoctor.checks.release"),
        ("launchers", "tfdoctor.checks.launchers"),
    ],
    PROBE_GROUP: [
        ("env", "tfdoctor.facts.probes.environment"),
        ("host", "tfdoctor.facts.probes.host"),
        ("cpu", "tfdoctor.facts.probes.cpu"),
        ("cgroup", "tfdoctor.facts.probes.cgroup"),
        ("python", "tfdoctor.facts.probes.python_env"),
        ("keras", "tfdoctor.facts.probes.keras_config"),
        ("nvml", "tfdoctor.facts.probes.nvml"),
        ("cuda_libs", "tfdoctor.facts.probes.cuda_libs"),
        ("privileges", "tfdoctor.facts.probes.privileges"),
        ("xla_toolchain", "tfdoctor.facts.probes.xla_toolchain"),
        ("xla_flag_names", "tfdoctor.facts.probes.xla_flag_names"),
        ("network", "tfdoctor.facts.probes.network"),
        ("platform_io", "tfdoctor.facts.probes.platform_io"),
        ("numa", "tfdoctor.facts.probes.numa"),
        ("openmp", "tfdoctor.facts.probes.openmp"),
        ("container_runtime", "tfdoctor.facts.probes.container_runtime"),
        ("tegra", "tfdoctor.facts.probes.tegra"),
        ("darwin", "tfdoctor.facts.probes.darwin"),
        ("conda", "tfdoctor.facts.probes.conda"),
    ],
    LINT_RULE_GROUP: [
        ("source-files", "tfdoctor.lint.rules.source_files"),
        ("input-pipeline", "tfdoctor.lint.rules.input_pipeline"),
        ("training-loop", "tfdoctor.lint.rules.training_loop"),
        ("layers", "tfdoctor.lint.rules.layers"),
        ("gpu-setup", "tfdoctor.lint.rules.gpu_setup"),
    ],
}


def _load(value: str) -> object:
    module_name, _, attr = value.partition(":")
    # importlib.import_module's own work, without importing the importlib package (and warnings with it):
    # the pre-job hook loads every check and probe module here.
    __import__(module_name)
    module = sys.modules[module_name]
    obj: object = module
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


@record
class Registry:
    """The checks and probes found, and the plugins that failed to load."""

    checks: list[CheckSpec]
    probes: list[ProbeSpec]
    errors: list[str]  # plugins that failed to load: reported, never fatal

    def check_by_code(self, code: str) -> CheckSpec | None:
        code = code.upper()
        return next((c for c in self.checks if c.code == code), None)


def load_registry(
    check_modules: Iterable[object] | None = None, probe_modules: Iterable[object] | None = None
) -> Registry:
    """Discover checks and probes. Pass modules explicitly (tests) to bypass entry points."""
    errors: list[str] = []

    def collect(group: str, explicit: Iterable[object] | None, attr: str) -> list:
        sources: list[tuple[str, object]] = []
        if explicit is not None:
            sources = [(getattr(m, "__name__", repr(m)), m) for m in explicit]
        else:
            for name, value in _entry_points(group):
                try:
                    sources.append((f"{name} = {value}", _load(value)))
                except Exception as exc:  # a broken plugin must not take tfdoctor down
                    errors.append(f"{group} entry point '{name} = {value}' failed to load: {exc}")
        specs = []
        for origin, obj in sources:
            for spec in _marked(obj, attr):
                specs.append(spec._replace(origin=origin))
        return specs

    checks: list[CheckSpec] = collect(CHECK_GROUP, check_modules, _CHECK_ATTR)
    probes: list[ProbeSpec] = collect(PROBE_GROUP, probe_modules, _PROBE_ATTR)

    by_code: dict[str, CheckSpec] = {}
    for spec in checks:
        if spec.code in by_code:
            errors.append(
                f"check code {spec.code} is registered twice ({by_code[spec.code].origin} and "
                f"{spec.origin}); the second is ignored"
            )
            continue
        by_code[spec.code] = spec
    by_section: dict[str, ProbeSpec] = {}
    for spec in probes:
        if spec.section in by_section:
            errors.append(f"facts section {spec.section!r} has two probes; {spec.origin} is ignored")
            continue
        by_section[spec.section] = spec
    return Registry(
        checks=sorted(by_code.values(), key=lambda s: s.code),
        probes=sorted(by_section.values(), key=lambda s: s.section),
        errors=errors,
    )


def select_checks(
    checks: Iterable[CheckSpec], select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> list[CheckSpec]:
    """flake8's rule: codes match by prefix; the longest matching prefix decides; ties go to select."""
    select = [s.upper() for s in select if s]
    ignore = [s.upper() for s in ignore if s]
    chosen = []
    for spec in checks:
        sel = max((len(p) for p in select if spec.code.startswith(p)), default=-1 if select else 0)
        ign = max((len(p) for p in ignore if spec.code.startswith(p)), default=-1)
        if sel >= 0 and sel >= ign:
            chosen.append(spec)
    return chosen
