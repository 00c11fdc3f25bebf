"""Every example command of README.md and docs/*.md runs (issue 26 item 9): a doc example that stops working
fails here.

The examples are the fenced `sh`/`bash`/`console` blocks (and unlabelled blocks that start with a
`tfdoctor` command); a block with an elision line (`...`) is an excerpt of a file tfdoctor writes, not
commands. Each logical line (continuations and `while … done` joined) is one test case, run with `bash -c`
exactly as written, in a fresh folder holding the files the examples name (`train.py`, `train.log`,
`env.sh`, `facts.json`, …; each made by tfdoctor itself where tfdoctor makes it), except the files the
command itself writes. `tfdoctor` on the PATH is the package under test; a `check`, `fix`, `collect`,
`report` or `explain --log` that names no `--facts`, `--root` or `--python` is given `--root` of a healthy
fake machine, so the answers do not depend on the machine running the tests.

A command passes when it exits with 0 or 1 (the documented "nothing found" and "found something") within
its timeout, without a traceback; `--quiet` forms must also print nothing on standard error. Commands that
need TensorFlow (profile, fix --validate, tune's built-in benchmark) carry the `tensorflow` marker and may
run into their timeout: what is checked then is that they got past their options and started. Commands
that need Slurm, MPI or ssh access to nodes are marked and skip where those are absent; `pip`/`pipx` lines
are checked against pyproject.toml (the extra exists, the install is from the clone); the README's two
set-up commands are checked by test_readme_has_exactly_two_setup_commands; the first is run by
tests/test_readme_setup.py, the second by .ci/run.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGS = {"sh", "bash", "console"}
TIMEOUT = 120  # seconds for one command on a loaded 2-CPU machine (most take well under 2)
TENSORFLOW_TIMEOUT = 30  # a TensorFlow command still running then has started: that is what is checked
HEALTHY_SNAPSHOT = REPO / "tests" / "snapshots" / "gpu" / "healthy-cuda12-pip.json"


@dataclass(frozen=True)
class Example:
    doc: str  # path relative to the repository
    line: int  # 1-based line of the command in the doc
    lang: str
    command: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line of the first body line, language, body lines) of each fenced block, also of a block indented
    under a list item (its indent taken off its lines)."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        fence = re.match(r"^( *)```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent, start, body = fence.group(1), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].startswith(indent + "```"):
            body.append(lines[i].removeprefix(indent))
            i += 1
        blocks.append((start, fence.group(2), body))
        i += 1
    return blocks


def _logical_lines(first: int, body: list[str], lang: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    depth = 0
    for offset, raw in enumerate(body):
        line = raw
        if lang == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = first + offset
        pending.append(line)
        words = stripped.split()
        if words and words[0] in ("while", "for", "if"):
            depth += 1
        if words and words[0] in ("done", "fi"):
            depth -= 1
        if line.endswith("\\") or depth > 0:
            continue
        out.append((start, "\n".join(pending)))
        pending = []
    return out


def examples() -> list[Example]:
    found = []
    for doc in DOCS:
        for first, lang, body in _blocks(doc.read_text()):
            leading = next((b.strip() for b in body if b.strip()), "")
            if lang not in RUN_LANGS and not (lang == "" and leading.startswith("tfdoctor ")):
                continue
            if any(b.strip() in ("...", "…") for b in body):
                continue  # an excerpt of a file tfdoctor writes (docs/tune.md's env script), not commands
            for line, command in _logical_lines(first, body, lang):
                found.append(Example(str(doc.relative_to(REPO)), line, lang or "sh", command))
    return found


# -- what each command needs ------------------------------------------------------------------------------

def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def _tfdoctor_args(command: str) -> list[str]:
    """The arguments of the (first) tfdoctor call in the command, also inside eval "$(…)"."""
    inner = re.search(r"\$\((tfdoctor [^)]*)\)", command)
    words = _words(inner.group(1) if inner else command)
    for index, word in enumerate(words):
        if word == "tfdoctor" or word.endswith("/tfdoctor"):
            return words[index + 1:]
    return []


def needs_tensorflow(command: str) -> bool:
    args = _tfdoctor_args(command)
    if not args:
        return False
    if args[0] == "profile" or (args[0] == "fix" and "--validate" in args):
        return True
    return args[0] == "tune" and "--" not in args and "--resume" not in args  # the built-in benchmark


def kind(example: Example) -> str:
    """run, tensorflow, slurm, mpi, ssh, install, setup, repository (a command on the clone itself: its
    tools, its tests, its development environment), plumbing (a shell line with nothing to test beyond
    running it) or site (a path on the cluster: the site's own environment)."""
    words = _words(example.command)
    first = words[0] if words else ""
    if example.doc == "README.md" and ".venv" in example.command and "pip install" in example.command:
        return "setup"
    if first in ("pip", "pipx") or first == ".venv-test/bin/pip":
        return "install"
    if first.startswith(".venv-test/bin/") or (first in ("python", "python3") and len(words) > 1 and (
            words[1].startswith(("tools/", "tests/")) or words[1:3] == ["-m", "pytest"])):
        return "repository"
    if first == "srun" or " srun " in f" {example.command} ":
        return "slurm"
    if first == "mpirun":
        return "mpi"
    if "ssh " in example.command:
        return "ssh"
    if first == "source" and words[1:2] and words[1].startswith("/opt/"):
        return "site"
    if needs_tensorflow(example.command):
        return "tensorflow"
    return "run"


def _params() -> list[object]:
    marks = {"tensorflow": [pytest.mark.tensorflow], "slurm": [pytest.mark.slurm], "mpi": [pytest.mark.mpi]}
    return [pytest.param(e, id=e.id, marks=marks.get(kind(e), [])) for e in examples()]


# -- the folder every command runs in ----------------------------------------------------------------------

TRAIN_PY = """\
# A stand-in for a training script: prints what the examples read (a log line, a throughput).
import sys
print("2024-09-25 10:12:55.178344: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:32] Could not find cuda "
      "drivers on your machine, GPU will not be used.", file=sys.stderr)
print("Epoch 1/1")
print("images/sec: 123.4")
"""
NOTEBOOK = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": [
    "import tensorflow as tf\n", "ds = tf.data.Dataset.range(10).map(lambda x: x * 2)\n"]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tfdoctor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def materials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every file the examples name, made once; each test copies what it needs into a fresh folder."""
    from support.report_inputs import profile_document, write_tune_results

    from tfdoctor.testing import FakeRoot
    from tfdoctor.testing.fleet import write_fleet

    base = tmp_path_factory.mktemp("docs-materials")
    root = FakeRoot(base / "healthy-node").cpus(cores_per_socket=2).cgroup_v2().numa(["0-1"]).path
    files = base / "files"
    files.mkdir()
    (files / "train.py").write_text(TRAIN_PY)
    (files / "pipeline.py").write_text(PIPELINE_PY)  # docs/lint.md, the release the code runs on
    log = ("Epoch 1/10\n2020-06-29 14:30:40.010427: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed "
           "call to cuInit: CUDA_ERROR_NO_DEVICE\n469/469 - 3s - loss: 0.2\n")
    (files / "train.log").write_text(log)
    (files / "slurm-1234.out").write_text(log)
    made = [_cli(["fix", "--root", str(root), "--write", str(files / "env.sh")], base),
            _cli(["fix", "--root", str(root), "--write-launcher", str(files / "run.sh")], base),
            _cli(["collect", "--root", str(root), "-o", str(files / "facts.json")], base)]
    assert [m.returncode for m in made] == [0, 0, 0], [m.stderr for m in made]
    for name in ("before.sh", "after.sh", "a.sh", "b.sh"):
        shutil.copyfile(files / "env.sh", files / name)
    for name in ("facts-gpu01.json", "facts-gpu07.json"):
        shutil.copyfile(HEALTHY_SNAPSHOT, files / name)
    (files / "profile.json").write_text(json.dumps(profile_document(({"input": 20.0, "host_compute": 80.0},))))
    write_tune_results(files / "tune.jsonl")
    # A real (short) tune of train.py to resume: its objective is the command, not the TensorFlow benchmark.
    tuned = _cli(["tune", "--budget", "4", "--results", "tfdoctor-tune-20261122-041500.jsonl", "--metric",
                  r"images/sec: ([0-9.]+)", "--", sys.executable, "train.py"], files)
    assert tuned.returncode == 0, tuned.stderr
    (files / "notebooks").mkdir()
    (files / "notebooks" / "train.ipynb").write_text(json.dumps(NOTEBOOK))
    write_fleet(files / "facts", 3, {"node03": {"driver": "535.104.05"}})
    (files / "hosts.txt").write_text("localhost\n")
    home = base / "home"
    (home / "venvs" / "train" / "bin").mkdir(parents=True)
    (home / "venvs" / "train" / "bin" / "python").symlink_to(sys.executable)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tfdoctor"
    wrapper.write_text(f"#!{sys.executable}\n" + WRAPPER)
    wrapper.chmod(0o755)
    return {"root": root, "files": files, "home": home, "bin": bin_dir}


# docs/lint.md's example of the release evidence: a stateless map over files that fit trains on.
PIPELINE_PY = (
    "import tensorflow as tf\n\n\n"
    "def decode(path, label):\n"
    "    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
    "    return tf.image.resize(image, [224, 224]), label\n\n\n"
    'files = tf.io.gfile.glob("/data/train-*.tfrecord")\n'
    "ds = tf.data.TFRecordDataset(files).map(decode).batch(32)\n"
    "model.fit(ds, epochs=10)\n"
)


# The `tfdoctor` the examples call: the package under test, given the healthy fake machine where the
# command would otherwise probe the machine running the tests.
WRAPPER = """\
import os, sys
from tfdoctor.cli import main
args = sys.argv[1:]
probing = {"check", "fix", "collect", "report", "explain"}
named = {"--facts", "--root", "--python", "--list-checks", "--all", "--validate"}  # --validate: this machine
if args and args[0] in probing and not named & set(args) and (args[0] != "explain" or "--log" in args):
    args = [args[0], "--root", os.environ["TFDOCTOR_DOCS_ROOT"], *args[1:]]
main(args)
"""

WRITES = r"(?:-o|--output|--write|--write-python|--write-launcher|--save-facts|--results|--html)\s+(\S+)"


def _workdir(materials: dict[str, Path], command: str, where: Path) -> Path:
    """A fresh copy of the materials, without the files this command writes (it must not find them)."""
    shutil.copytree(materials["files"], where)
    for written in re.findall(WRITES, command):
        target = where / written
        if target.is_file():
            target.unlink()
    return where


def _environment(materials: dict[str, Path], cwd: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{materials['bin']}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(materials["home"]), "TFDOCTOR_DOCS_ROOT": str(materials["root"]),
            "PBS_O_WORKDIR": str(cwd), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get(
                "PYTHONPATH", "")])), "COLUMNS": "80"}


def _as_run(command: str, materials: dict[str, Path]) -> str:
    # A site's own install path (/opt/tfdoctor/bin/tfdoctor, the TaskProlog's) is the tfdoctor under test.
    return command.replace("/opt/tfdoctor/bin/tfdoctor", str(materials["bin"] / "tfdoctor"))


# -- the tests --------------------------------------------------------------------------------------------

def test_every_doc_has_its_examples_found():
    found = examples()
    by_doc = {e.doc for e in found}
    assert {"README.md", "docs/batch.md", "docs/profile.md", "docs/tune.md", "docs/report.md", "docs/numa.md",
            "docs/lint.md", "docs/log-messages.md", "docs/python-environment.md"} <= by_doc
    assert len(found) >= 60
    commands = [e.command for e in found]
    assert "tfdoctor check --quiet              # pre-job hook: silent when healthy, one line per problem" in commands
    assert any(c.startswith("while read -r host; do\n") and c.endswith("done < hosts.txt") for c in commands)
    assert not [c for c in commands if c.startswith(("train.py:", "Facts that differ"))]  # outputs are not run
    # A block indented under a list item (a how-to's step) is an example like any other: its first line is found.
    indented = {f"{doc.relative_to(REPO)}:{number + 2}" for doc in DOCS
                for number, line in enumerate(doc.read_text().split("\n"))
                if re.match(r" +```(sh|bash|console)\s*$", line)}
    assert indented and indented <= {e.id for e in found}, sorted(indented - {e.id for e in found})


@pytest.mark.parametrize("example", _params())
def test_doc_example_runs(example: Example, materials: dict[str, Path], tmp_path: Path) -> None:
    what = kind(example)
    if what == "setup":
        pytest.skip("a README set-up command: tests/test_readme_setup.py runs the first, .ci/run the second")
    if what == "install":
        _check_install(example.command)
        return
    if what == "repository":
        _check_repository(example.command, (REPO / example.doc).read_text())
        return
    if what == "site":
        pytest.skip("activates the site's own environment (a path on the cluster)")
    if what == "slurm" and not slurm_cluster():
        pytest.skip("needs a Slurm cluster (srun, and a controller scontrol ping reaches)")
    if what == "mpi" and not shutil.which("mpirun"):
        pytest.skip("needs MPI (mpirun)")
    if what == "ssh" and not os.environ.get("TFDOCTOR_DOCS_SSH"):
        pytest.skip("needs ssh access to the nodes in hosts.txt (set TFDOCTOR_DOCS_SSH=1 where there is)")
    cwd = _workdir(materials, example.command, tmp_path / "work")
    if "[--" in example.command:  # a synopsis (`script [--option VALUE]`): the script answers --help
        script = _words(example.command)[:2]
        done = subprocess.run([sys.executable, str(REPO / script[1]), "--help"], capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
        assert done.returncode == 0 and "usage:" in done.stdout, done.stderr
        return
    same = " ".join(_words(example.command))  # README and docs/ share some commands: a TensorFlow one runs once
    if what == "tensorflow" and same in _TENSORFLOW_OUTCOMES:
        done = _TENSORFLOW_OUTCOMES[same]
    else:
        done = _run(example, materials, cwd, TENSORFLOW_TIMEOUT if what == "tensorflow" else TIMEOUT)
        if what == "tensorflow":
            _TENSORFLOW_OUTCOMES[same] = done
    if done is None:
        return  # a TensorFlow command still running at its timeout: past its options and started
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), f"{example.id}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    if "--quiet" in example.command or " -q" in example.command:
        assert done.stderr == "", done.stderr


@pytest.mark.tensorflow
def test_python_env_probe_runs_as_its_synopsis_says():
    """docs/python-environment.md's `python benchmarks/python_env_probe.py --python PATH …` is a synopsis,
    which test_doc_example_runs only asks for --help; here it runs, with this interpreter as PATH: every
    measurement is printed beside its baseline, and its exit is the budget's verdict (0 or 1), never a crash.
    (Its twin, python_env_truth.py, builds venvs from the package index: not run here.)"""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "python_env_probe.py"), "--python",
                           sys.executable, "--runs", "1"], capture_output=True, text=True, timeout=600,
                          check=False, env={**os.environ, "TFDOCTOR_CACHE_DIR": ""})
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stdout + done.stderr
    for line in ("1. snapshot in-process: ", "4. RECORD of tensorflow", "2. snapshot under ",
                 "3. running the PKG+CPU checks ", f"5. tfdoctor check --python {sys.executable}: "):
        assert line in done.stdout, done.stdout
    assert "baseline" in done.stdout.split("5. ")[1] and "(budget 3 %)" in done.stdout, done.stdout


@functools.cache
def slurm_cluster() -> bool:
    if not shutil.which("srun") or not shutil.which("scontrol"):
        return False
    try:
        done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and "UP" in done.stdout


_TENSORFLOW_OUTCOMES: dict[str, subprocess.CompletedProcess[str] | None] = {}


def _run(example: Example, materials: dict[str, Path], cwd: Path,
         timeout: float) -> subprocess.CompletedProcess[str] | None:
    """The command in its own process group, so that a timeout stops everything it started."""
    import signal

    command = ["bash", "-c", _as_run(example.command, materials)]
    process = subprocess.Popen(command, cwd=cwd, env=_environment(materials, cwd), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        assert timeout == TENSORFLOW_TIMEOUT, f"{example.id}: still running after {timeout} s"
        assert "Traceback" not in err and "Usage:" not in err and "error:" not in err, err
        return None
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _check_repository(command: str, doc: str) -> None:
    """A command on the clone (`python tools/regenerate.py`, `python -m pytest -m "not tensorflow" tests/…`):
    not run here, where it would rewrite or re-test the repository itself (tests/test_contributor_path.py
    runs the worked examples of the four contributor how-tos in a copy). Checked: the files it names exist
    (or the page says to write them), the markers it selects are declared, and a `.venv-test/bin/` program
    is one the test environment has."""
    words = _words(command)
    written = set(re.findall(r"[Ww]rite\s+`([^`]+)`", doc))  # "write `path`", the path maybe on the next line
    program = words[0].removeprefix(".venv-test/bin/")
    assert program in ("python", "python3", "pip") or shutil.which(program, path=str(Path(sys.executable).parent)), \
        f"{command}: no {program} in the test environment"
    for word in words[1:]:
        if word.startswith(("tools/", "tests/", "docs/")) and "<" not in word and word not in written:
            assert (REPO / word.split("::")[0]).exists(), f"{command}: {word} does not exist"
    # `-m pytest` names the module; a later `-m EXPR` selects by marker.
    expression = " ".join(after for before, after in itertools.pairwise(words) if before == "-m" and after != "pytest")
    declared = {line.split(":")[0].strip().strip('"') for line in _pytest_markers()}
    named = set(re.findall(r"[a-z_]+", expression)) - {"not", "and", "or"}
    assert named <= declared, f"{command}: markers {sorted(named - declared)} are not declared in pyproject.toml"


def _pytest_markers() -> list[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]


def _check_install(command: str) -> None:
    """`pip install '.[tune]'` / `pipx install .`: from the clone (tfdoctor is on no index), extras that exist."""
    words = _words(command)
    targets = [w for w in words[2:] if not w.startswith("-")]
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert targets, command
    for target in targets:
        match = re.fullmatch(r"\.(?:\[([a-z,-]+)\])?", target)
        assert match, f"{command}: installs {target!r}, not the clone ('.'): tfdoctor is not on a package index"
        assert set(filter(None, (match.group(1) or "").split(","))) <= set(extras), command


def test_no_doc_installs_tfdoctor_from_an_index():
    for doc in DOCS:
        text = doc.read_text()
        assert not re.search(r"pipx? install '?tfdoctor", text), doc


def test_readme_has_exactly_two_setup_commands():
    """One installs tfdoctor and runs `tfdoctor check`; one installs the test dependencies and runs the suite,
    and .ci/run runs that one verbatim."""
    readme = (REPO / "README.md").read_text()
    setup = readme[readme.index("## Set up"):readme.index("## Use")]
    commands = [body for _, lang, body in _blocks(setup) if lang in RUN_LANGS]
    assert len(commands) == 2 and all(len(body) == 1 for body in commands)
    install, tests = commands[0][0], commands[1][0]
    assert "pip install -q ." in install and install.endswith("tfdoctor check")
    assert "'.[test]'" in tests and tests.endswith("python -m pytest -q")
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == tests
    # What the set-up needs, time included (issue 38: the figures went stale; they now name their run).
    for need in ("network access to the package index", "3.6 GB of disk", "root or", "sudo", "5,000 tests",
                 "22 minutes"):
        assert need in " ".join(setup.split()), need


def _heading_anchors(doc: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces as
    hyphens, a repeated heading numbered (`-1`, `-2`); headings in fenced blocks are not headings."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text().split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"^#{1,6} (.*)$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).replace("`", "").strip().lower()).replace(" ", "-")
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_heading_anchors_are_made_as_github_makes_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('# Twenty-seventh: named with "gradienttape" (2026-12-07)\n## `tfdoctor lint`\n## `tfdoctor lint`\n'
                    "```sh\n# not a heading\n```\n")
    assert _heading_anchors(page) == {"twenty-seventh-named-with-gradienttape-2026-12-07", "tfdoctor-lint",
                                      "tfdoctor-lint-1"}


def test_every_link_to_a_heading_of_the_docs_resolves():
    """A link to `#a-heading` of README.md or docs/ (in the page or another) names a heading that is there:
    the long lint.md sections are linked by their dated titles, which a retitle silently breaks."""
    broken = []
    for doc in DOCS:
        for target, anchor in re.findall(r"\]\(([^)\s]*?)#([^)\s]+)\)", doc.read_text()):
            page = doc if not target else (doc.parent / target).resolve()
            if page.suffix == ".md" and page.is_file() and anchor not in _heading_anchors(page):
                broken.append(f"{doc.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, broken
