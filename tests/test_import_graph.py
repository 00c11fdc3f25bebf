"""The package's import graph, read statically: no cycle, and nothing below the command line imports it.

Every `import tfdoctor…` and `from tfdoctor… import …` counts, at module level or inside a function
(a lazy import still closes a cycle the moment it runs), plus the implicit import of each package's
`__init__` on the way to a submodule, plus the lazily loaded commands of `tfdoctor.cli.LAZY_COMMANDS`
(imported by name, not by an import statement).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tfdoctor
from tfdoctor.cli import LAZY_COMMANDS

PACKAGE = Path(tfdoctor.__file__).parent


def module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["tfdoctor", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The tfdoctor modules `name` imports (and the packages it passes through to reach them)."""
    targets: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets.add(module)
            targets.update(f"{module}.{alias.name}" for alias in node.names)  # `from pkg import submodule`
    with_parents = set(targets)
    for target in targets:
        parts = target.split(".")
        with_parents.update(".".join(parts[:i]) for i in range(1, len(parts)))
    # A module's own enclosing packages are already being imported when it runs: not an edge.
    return {t for t in with_parents if t in modules and t != name and not name.startswith(t + ".")}


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    graph["tfdoctor.cli"] |= {target.partition(":")[0] for target in LAZY_COMMANDS.values()}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path [a, b, …, a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following):], following]
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_package_has_no_import_cycle():
    assert find_cycle(import_graph()) is None


def test_only_the_entry_point_imports_the_command_line():
    graph = import_graph()
    assert sorted(name for name, targets in graph.items() if "tfdoctor.cli" in targets) == ["tfdoctor.console"]
    assert sorted(name for name, targets in graph.items() if "tfdoctor.console" in targets) == ["tfdoctor.__main__"]


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def reaching(graph: dict[str, set[str]], sources: tuple[str, ...], targets: tuple[str, ...]) -> dict[str, list[str]]:
    """The modules under `sources` that import something under `targets`, with what they import."""
    found = {name: sorted(t for t in imported if any(within(t, p) for p in targets))
             for name, imported in graph.items() if any(within(name, p) for p in sources)}
    return {name: imported for name, imported in found.items() if imported}


def checks_importing_checks(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Check modules that import another check module: what two families share is a derivation
    (tfdoctor/derive), and a family must load, fail and be selected on its own."""
    found = {name: sorted(t for t in imported if within(t, "tfdoctor.checks") and t != "tfdoctor.checks")
             for name, imported in graph.items() if within(name, "tfdoctor.checks") and name != "tfdoctor.checks"}
    return {name: imported for name, imported in found.items() if imported}


# What a check may stand on: facts, their derivations and the release knowledge, the data model and the
# registry it is declared with, and the one quoting of words written into a command (a fix's steps). Not the
# engine that runs it, nor anything above.
CHECK_FOUNDATIONS = ("tfdoctor.derive", "tfdoctor.facts", "tfdoctor.knowledge", "tfdoctor.model",
                     "tfdoctor.records", "tfdoctor.registry", "tfdoctor.fixes.quoting")
# The commands the report draws pages of (it imports their results), so they must not import its pages:
# they reach the writer through tfdoctor.usage.write_section_page, installed by the command line.
BELOW_THE_REPORT = ("tfdoctor.tune", "tfdoctor.fleet", "tfdoctor.profile", "tfdoctor.lint", "tfdoctor.logs")


def test_checks_never_import_probe_code():
    assert reaching(import_graph(), ("tfdoctor.checks",), ("tfdoctor.facts.probes",)) == {}


def test_checks_never_import_another_check_module():
    assert checks_importing_checks(import_graph()) == {}


def test_checks_stand_only_on_facts_derivations_knowledge_and_the_model():
    graph = import_graph()
    above = {t for targets in graph.values() for t in targets
             if not any(within(t, p) for p in (*CHECK_FOUNDATIONS, "tfdoctor.checks"))
             and not any(p.startswith(t + ".") for p in CHECK_FOUNDATIONS)}  # a foundation's own package
    assert reaching(graph, ("tfdoctor.checks",), tuple(sorted(above))) == {}


def test_probes_never_import_derivations_or_checks():
    # Probes read the machine; what facts mean is decided above them (a constant both need lives in facts).
    # The engine runs the probes: a probe that notes a stuck thread of its own does so in facts.abandoned.
    assert reaching(import_graph(), ("tfdoctor.facts.probes",),
                    ("tfdoctor.derive", "tfdoctor.checks", "tfdoctor.engine")) == {}


def test_commands_below_the_report_never_import_its_pages():
    assert reaching(import_graph(), BELOW_THE_REPORT, ("tfdoctor.report.html",)) == {}
    # The other direction is what makes it upward: the report's pages do read their results.
    graph = import_graph()
    assert reaching(graph, ("tfdoctor.report.html",), ("tfdoctor.tune", "tfdoctor.fleet"))


def test_the_layer_rules_catch_a_check_importing_another(tmp_path):
    # The detectors themselves, on a made-up package: a lazy import of a sibling check counts.
    (tmp_path / "threads.py").write_text("def f():\n    from tfdoctor.checks.numa import g\n")
    (tmp_path / "numa.py").write_text("from tfdoctor.derive.cpu_budget import cpu_budget\n")
    (tmp_path / "runner.py").write_text("from tfdoctor.report.html.command import write_named_section\n")
    modules = {"tfdoctor.checks": tmp_path / "__init__.py", "tfdoctor.checks.threads": tmp_path / "threads.py",
               "tfdoctor.checks.numa": tmp_path / "numa.py", "tfdoctor.derive": tmp_path / "d.py",
               "tfdoctor.derive.cpu_budget": tmp_path / "d.py", "tfdoctor.tune.runner": tmp_path / "runner.py",
               "tfdoctor.report.html.command": tmp_path / "c.py"}
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items() if path.exists()}
    assert checks_importing_checks(graph) == {"tfdoctor.checks.threads": ["tfdoctor.checks.numa"]}
    assert reaching(graph, BELOW_THE_REPORT, ("tfdoctor.report.html",)) == {
        "tfdoctor.tune.runner": ["tfdoctor.report.html.command"]}


def test_the_cycle_finder_finds_a_function_level_cycle(tmp_path):
    # The detector itself: a cycle closed only by an import inside a function is still a cycle.
    (tmp_path / "a.py").write_text("def f():\n    from tfdoctor import b\n")
    (tmp_path / "b.py").write_text("from tfdoctor.a import f\n")
    modules = {"tfdoctor.a": tmp_path / "a.py", "tfdoctor.b": tmp_path / "b.py"}
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    assert graph == {"tfdoctor.a": {"tfdoctor.b"}, "tfdoctor.b": {"tfdoctor.a"}}
    assert find_cycle(graph) == ["tfdoctor.a", "tfdoctor.b", "tfdoctor.a"]
    assert find_cycle({"tfdoctor.a": {"tfdoctor.b"}, "tfdoctor.b": set()}) is None



def test_the_terminal_module_is_below_every_command():
    # What reaches the person is made safe and fitted in one module (tfdoctor/terminal.py) that every
    # command may use: it stands on nothing of tfdoctor's, and the commands the report sits above take their
    # table width from it, never from the report.
    graph = import_graph()
    assert {t for t in graph["tfdoctor.terminal"] if t != "tfdoctor"} == set()
    assert reaching(graph, ("tfdoctor.tune", "tfdoctor.fleet", "tfdoctor.lint"), ("tfdoctor.report",)) == {}
    assert "tfdoctor.terminal" in graph["tfdoctor.usage"]
    for printer in ("tfdoctor.report.text", "tfdoctor.report.html.page", "tfdoctor.fleet.render",
                    "tfdoctor.tune.progress"):
        assert "tfdoctor.terminal" in graph[printer], printer
