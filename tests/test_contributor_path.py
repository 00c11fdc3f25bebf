"""docs/writing-a-check.md, walked (issue 29): in a copy of the repository, every step of its worked
example is done exactly as the page says — its code blocks written to the files it names, its commands run
in order (with a virtual environment of the copy's own standing for `.venv-test`) — and the tests of its
last step must pass. The page is the script: a step it leaves out, or a file it does not list, fails here.
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
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

DOC = REPO / "docs" / "writing-a-check.md"
LEFT_BEHIND = {".git", ".hypothesis", ".pytest_cache", ".ruff_cache", "__pycache__", "tfdoctor.egg-info"}
TIMEOUT = 300  # seconds for one command on a loaded 2-CPU machine


@dataclass(frozen=True)
class Step:
    """One thing the page says to do: write `text` to `path` (after the line `after`, when given), or run
    `command`."""

    path: str = ""
    text: str = ""
    after: str = ""
    command: str = ""


def steps(doc: str) -> list[Step]:
    """The worked example's blocks, in order: a block follows the paragraph that says what to do with it
    ("Write `path`:", "In `path`, after the line `anchor`:"); a `sh` block is commands, one a line."""
    section = doc[doc.index("## Worked example"):]
    section = section[:section.index("\n## ", 1)]
    found: list[Step] = []
    for match in re.finditer(r"(?P<lead>(?:[^\n]+\n)+)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", section, re.S):
        lead, lang, body = " ".join(match["lead"].split()), match["lang"], match["body"] + "\n"
        if lang == "sh":
            found += [Step(command=line) for line in body.splitlines() if line.strip()]
            continue
        insert = re.search(r"`([^`]+)`, after the line `([^`]+)`:$", lead)
        write = re.search(r"[Ww]rite `([^`]+)`:$", lead)
        assert insert or write, f"docs/writing-a-check.md: a {lang} block with no file to write it to: {lead!r}"
        found.append(Step(path=insert[1], text=body, after=insert[2]) if insert else Step(path=write[1], text=body))
    return found


def apply(step: Step, repo: Path) -> None:
    target = repo / step.path
    if not step.after:
        assert not target.exists(), f"the page writes {step.path}, which exists already"
        target.write_text(step.text)
        return
    lines = target.read_text().splitlines(keepends=True)
    anchor = [i for i, line in enumerate(lines) if line.strip() == step.after.strip()]
    assert len(anchor) == 1, f"{step.path}: the line `{step.after}` the page names is not there exactly once"
    lines.insert(anchor[0] + 1, step.text)
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
    the copy gets installed: its entry points are the copy's, as after `pip install -e .` in a clone."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def digests(top: Path) -> dict[str, str]:
    return {str(p.relative_to(top)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(top.rglob("*"))
            if p.is_file() and not (set(p.relative_to(top).parts) & LEFT_BEHIND)
            and not p.relative_to(top).parts[0].startswith(".venv")}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "UPDATE_GOLDEN")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False, env=env)


def test_the_page_has_every_kind_of_step():
    found = steps(DOC.read_text())
    written = {s.path for s in found if s.path}
    assert {"tfdoctor/checks/debugging.py", "pyproject.toml", "tfdoctor/registry.py",
            "tests/snapshots/checks/dbg001-cuda-launch-blocking-left-on.json",
            "tests/test_checks_debugging.py"} == written
    commands = [s.command for s in found if s.command]
    assert commands[0].startswith(".venv-test/bin/pip install") and "tools/regenerate.py" in commands[-2]
    assert commands[-1].startswith(".venv-test/bin/python -m pytest")


def test_a_check_added_by_the_page_alone_passes_the_suite(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=lambda _, names: [n for n in names if n in LEFT_BEHIND
                                                          or n.startswith(".venv")])
    before = digests(copy)
    venv = environment_of(copy, tmp_path)
    fixture_step = "tests/snapshots/checks/dbg001-cuda-launch-blocking-left-on.json"
    for step in steps(DOC.read_text()):
        if step.path == fixture_step:
            # Before the fixture exists, the registry-wide test names the file to add.
            done = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/test_checks.py", "-k", "fires_on_its_fixture and DBG001"], copy)
            assert done.returncode == 1, done.stdout + done.stderr
            assert "DBG001 has no triggering fixture: add tests/snapshots/checks/dbg001-<situation>.json" in done.stdout
        if step.command:
            done = run(as_run(step.command, venv), copy)
            assert done.returncode == 0, f"{step.command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            if " explain DBG001" in step.command:
                assert "cuda-launch-blocking-left-on" in done.stdout and "Fix safety" in done.stdout
        else:
            apply(step, copy)
    # Nothing but what the page lists changed: the files it writes by hand and the generated ones.
    after = digests(copy)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    by_hand = {s.path for s in steps(DOC.read_text()) if s.path}
    generated = {name for name in changed if name == "docs/checks.md" or name.startswith("tests/golden/")}
    assert changed == by_hand | generated, sorted(changed - by_hand)
    assert "DBG001" in (copy / "docs" / "checks.md").read_text()
    # Both kinds the page says a new check regenerates: the checks page and the golden reports (their counts).
    assert "docs/checks.md" in generated and any(name.startswith("tests/golden/") for name in generated)
