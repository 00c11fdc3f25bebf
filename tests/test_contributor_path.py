"""The contributor how-tos, walked (issue 29): in a copy of the repository, every step of a page's worked
example is done exactly as the page says — its code blocks written to the files it names (or inserted at the
lines it names), its commands run in order (with a virtual environment of the copy's own standing for
`.venv-test`) — and the tests of its last step must pass. Afterwards only the files the page writes by hand
and the generated files its regenerate step rewrites may differ from the repository. The page is the
script: a step it leaves out, or a file it does not list, fails here.

One walker, four pages: docs/writing-a-check.md, docs/adding-a-fact.md, docs/writing-a-lint-rule.md and
docs/adding-a-report-section.md. What differs between them is data (`Walk`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

LEFT_BEHIND = {".git", ".hypothesis", ".pytest_cache", ".ruff_cache", "__pycache__", "tfdoctor.egg-info"}
TIMEOUT = 300  # seconds for one command on a loaded 2-CPU machine
REGENERATE = ".venv-test/bin/python tools/regenerate.py"


@dataclass(frozen=True)
class Step:
    """One thing the page says to do: write `text` to `path` — a new file, or inserted after or before the
    line `anchor` (a line that starts with it, when `prefix`), or in place of it (`where` "replace") — or
    run `command`."""

    path: str = ""
    text: str = ""
    where: str = ""  # "", "after", "before" or "replace"
    anchor: str = ""
    prefix: bool = False
    command: str = ""


@dataclass(frozen=True)
class Walk:
    """What one page's worked example must do, beyond its own tests passing."""

    doc: str
    by_hand: frozenset[str]  # the files its steps write or edit, all of them
    regenerates: tuple[str, ...]  # the generated files (prefixes) its regenerate step must change; () none
    prints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # part of a command: what it prints
    # Before the page writes this file, this pytest run fails and says so: the suite names the missing step.
    missing: Mapping[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    shows: Mapping[str, str] = field(default_factory=dict)  # a file of the copy afterwards: what it holds


WALKS = [
    Walk("docs/writing-a-check.md",
         frozenset({"tfdoctor/checks/debugging.py", "pyproject.toml", "tfdoctor/registry.py",
                    "tests/snapshots/checks/dbg001-cuda-launch-blocking-left-on.json",
                    "tests/test_checks_debugging.py"}),
         regenerates=("docs/checks.md", "tests/golden/"),
         shows={"docs/checks.md": "DBG001"},
         prints={" explain DBG001": ("cuda-launch-blocking-left-on", "Fix safety")},
         missing={"tests/snapshots/checks/dbg001-cuda-launch-blocking-left-on.json": (
             ("tests/test_checks.py", "-k", "fires_on_its_fixture and DBG001"),
             "DBG001 has no triggering fixture: add tests/snapshots/checks/dbg001-<situation>.json")}),
    Walk("docs/adding-a-fact.md",
         frozenset({"tfdoctor/facts/probes/thp.py", "pyproject.toml", "tfdoctor/registry.py",
                    "tfdoctor/schema/facts.schema.json", "tests/test_probes_thp.py"}),
         regenerates=(),
         prints={"tfdoctor collect": ('"thp": {', '"enabled": ', '"defrag": ')}),
    Walk("docs/writing-a-lint-rule.md",
         frozenset({"tfdoctor/lint/rules/debugging.py", "pyproject.toml", "tfdoctor/registry.py",
                    "tests/lint_fixtures/debugging_bad.py", "tests/lint_fixtures/debugging_good.py",
                    "tests/test_lint_rules.py", "tests/test_lint_rules_debugging.py", "docs/lint.md"}),
         regenerates=(),
         prints={" explain SRC116": ("check-numerics-left-on", "Fix safety")},
         missing={"tests/lint_fixtures/debugging_bad.py": (
             ("tests/test_lint_rules.py", "-k", "every_rule_has_a_triggering"), "SRC116")}),
    Walk("docs/adding-a-report-section.md",
         frozenset({"tfdoctor/report/html/lint_section.py", "tfdoctor/report/html/build.py",
                    "tfdoctor/report/html/command.py", "tests/test_report_lint_section.py",
                    "tests/test_report_html.py", "docs/report.md"}),
         regenerates=()),
]


def steps(doc: str, name: str = "the page") -> list[Step]:
    """The worked example's blocks, in order: a block follows the paragraph that says what to do with it
    ("Write `path`:", "In `path`, after the line `anchor`:", "… before the line starting `anchor`:",
    "In `path`, replace the line `anchor` with:"); a `sh` block is commands, one a line."""
    assert "\n## Worked example" in doc, f"{name} has no worked example"
    section = doc[doc.index("\n## Worked example"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    found: list[Step] = []
    for match in re.finditer(r"(?P<lead>(?:[^\n]+\n)+)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", section, re.S):
        # The paragraph's lines joined (a named line keeps its inner spaces), the block as it is.
        lead = " ".join(line.strip() for line in match["lead"].splitlines())
        lang, body = match["lang"], match["body"] + "\n"
        if lang == "sh":
            found += [Step(command=line) for line in body.splitlines() if line.strip()]
            continue
        insert = re.search(r"`([^`]+)`, (after|before) the line (starting )?`([^`]+)`:$", lead)
        replace = re.search(r"`([^`]+)`, replace the line `([^`]+)` with:$", lead)
        write = re.search(r"[Ww]rite `([^`]+)`:$", lead)
        if insert:
            found.append(Step(insert[1], body, insert[2], insert[4], prefix=bool(insert[3])))
        elif replace:
            found.append(Step(replace[1], body, "replace", replace[2]))
        else:
            assert write, f"{name}: a {lang} block with no file to write it to: {lead!r}"
            found.append(Step(write[1], body))
    return found


def apply(step: Step, repo: Path) -> None:
    target = repo / step.path
    if not step.where:
        assert not target.exists(), f"the page writes {step.path}, which exists already"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text)
        return
    lines = target.read_text().splitlines(keepends=True)
    anchor = [i for i, line in enumerate(lines) if (line.strip().startswith(step.anchor.strip()) if step.prefix
                                                    else line.strip() == step.anchor.strip())]
    assert len(anchor) == 1, f"{step.path}: the line `{step.anchor}` the page names is not there exactly once"
    at = anchor[0]
    lines[at:at + 1] = {"after": [lines[at], step.text], "before": [step.text, lines[at]],
                        "replace": [step.text]}[step.where]
    target.write_text("".join(lines))


def as_run(command: str, venv: Path) -> list[str]:
    """The page's command for the copy: its `.venv-test` is `venv`. A reinstall leaves out dependencies
    (the copy's environment reaches the test environment's) and build isolation (no network)."""
    words = shlex.split(command)
    if words[0] == ".venv-test/bin/pip":
        return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *words[1:],
                "--no-deps", "--no-build-isolation"]
    assert words[0].startswith(".venv-test/bin/"), f"{command}: the page's commands run from .venv-test"
    return [str(venv / "bin" / words[0].removeprefix(".venv-test/bin/")), *words[1:]]


def environment_of(copy: Path, tmp: Path) -> Path:
    """A virtual environment that sees the test environment's packages (a .pth file) but in which only
    the copy is installed, as README's set-up leaves a clone's `.venv-test` before any how-to: its entry
    points and its `tfdoctor` script are the copy's. (The install takes about 2 s: one per walk.)"""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = run(as_run(".venv-test/bin/pip install -q -e .", venv), copy)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def digests(top: Path) -> dict[str, str]:
    return {str(p.relative_to(top)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(top.rglob("*"))
            if p.is_file() and not (set(p.relative_to(top).parts) & LEFT_BEHIND)
            and not p.relative_to(top).parts[0].startswith(".venv")}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "UPDATE_GOLDEN")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False, env=env)


def ids(walk: Walk) -> str:
    return Path(walk.doc).stem


def test_each_how_to_is_walked():
    """A new how-to beside these (a page that links the other extension points) gets its walk too."""
    pages = {str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md") if "## Worked example" in p.read_text()}
    assert pages == {w.doc for w in WALKS}


@pytest.mark.parametrize("walk", WALKS, ids=ids)
def test_the_page_lists_what_its_example_writes_and_runs(walk: Walk) -> None:
    found = steps((REPO / walk.doc).read_text(), walk.doc)
    assert {s.path for s in found if s.path} == walk.by_hand
    commands = [s.command for s in found if s.command]
    assert commands[-2] == REGENERATE, commands
    assert commands[-1].startswith(".venv-test/bin/python -m pytest -q -p no:cacheprovider tests/"), commands
    # A page whose example adds an entry point says to install again before anything reads it.
    registers = any(s.path == "pyproject.toml" for s in found)
    assert registers == commands[0].startswith(".venv-test/bin/pip install"), commands
    for part in (*walk.prints, *walk.missing):
        assert any(part in c for c in commands) or any(s.path == part for s in found), part


@pytest.mark.parametrize("walk", WALKS, ids=ids)
def test_the_page_alone_does_what_it_says(walk: Walk, tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=lambda _, names: [n for n in names if n in LEFT_BEHIND
                                                          or n.startswith(".venv")])
    before = digests(copy)
    venv = environment_of(copy, tmp_path)
    found = steps((REPO / walk.doc).read_text(), walk.doc)
    regenerated = ""
    for step in found:
        if step.path in walk.missing:
            args, says = walk.missing[step.path]
            done = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], copy)
            assert done.returncode == 1 and says in done.stdout, done.stdout + done.stderr
        if step.command:
            done = run(as_run(step.command, venv), copy)
            assert done.returncode == 0, f"{step.command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            for part, printed in walk.prints.items():
                if part in step.command:
                    assert all(p in done.stdout for p in printed), done.stdout
            if step.command == REGENERATE:
                regenerated = done.stdout
        else:
            apply(step, copy)
    # Nothing but what the page lists changed: the files it writes by hand and the generated ones.
    after = digests(copy)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    generated = {name for name in changed - walk.by_hand if name.startswith(("docs/checks.md", "tests/golden/",
                                                                              "tests/snapshots/gpu/"))}
    assert changed == walk.by_hand | generated, sorted(changed - walk.by_hand)
    # The generated files the page says its example changes, and only those; the regenerate step names them.
    assert {p for p in walk.regenerates if any(name.startswith(p) for name in generated)} == set(walk.regenerates)
    assert all(name.startswith(walk.regenerates) for name in generated), sorted(generated)
    assert all(f"  {name}\n" in regenerated for name in generated), regenerated
    if not walk.regenerates:
        assert "nothing changed: every generated file was up to date" in regenerated, regenerated
    for name, text in walk.shows.items():
        assert text in (copy / name).read_text(), name
