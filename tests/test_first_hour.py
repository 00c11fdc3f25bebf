"""A new user's first hour (issue 26): listings, quiet hooks, tables that fit, statuses that say what happened."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO
from support.command_line import run_cli

from tfdoctor.facts import Facts
from tfdoctor.registry import doc_summary


def test_list_checks_describes_each_check_by_its_first_sentence():
    done = run_cli(["check", "--list-checks"])
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert not [line for line in lines if "What it does" in line]
    thr101 = next(line for line in lines if line.startswith("THR101 "))
    assert thr101.endswith("Finds a job limited to fewer CPUs than it may run on — a CFS quota (cgroup v2 "
                           "cpu.max, v1 cpu.cfs_quota_us) or a Slurm/PBS allocation that no binding enforces "
                           "— whose thread counts are left unset.")
    descriptions = [line[62:] for line in lines if not line.startswith("plugin error")]
    assert len(set(descriptions)) == len(descriptions)


def test_doc_summary_first_sentence_of_the_first_section():
    doc = "What it does:\nFinds X (e.g. Y) in v1.2 of\nthe thing. Then more.\n\nWhy is this bad?\nZ."
    assert doc_summary(doc) == "Finds X (e.g. Y) in v1.2 of the thing."
    assert doc_summary("A lint rule's one line.\n\nWhat it does:\n  more") == "A lint rule's one line."
    assert doc_summary("") == ""


# -- item 7: a GPU check on a host with no GPU is "not applicable", not "passed" ----------------------

def _no_gpu_facts(pci: object) -> Facts:
    return Facts({"host": {"system": "Linux", "nvidia_driver": None}, "gpu_pci": {"devices": pci}},
                 {"hostname": "cpu01"})


def _gpu_module():
    import types

    from tfdoctor.model import Finding, Severity
    from tfdoctor.registry import check

    module = types.ModuleType("fake_gpu_checks")

    @check("CUDA901", "gpu-check-that-finds-nothing", Severity.WARNING)
    def quiet(facts):
        """What it does: x"""
        return iter(())

    @check("CUDA902", "gpu-check-that-finds-something", Severity.ERROR)
    def loud(facts):
        """What it does: x"""
        yield Finding("a CUDA build without a GPU")

    @check("GPU105", "log-level-like", Severity.INFO)
    def cpu_too(facts):
        """What it does: x"""
        return iter(())

    @check("THR901", "cpu-check", Severity.WARNING)
    def cpu(facts):
        """What it does: x"""
        return iter(())

    module.quiet, module.loud, module.cpu_too, module.cpu = quiet, loud, cpu_too, cpu
    return module


def _statuses(facts) -> dict[str, tuple[str, str]]:
    from tfdoctor.engine import run_checks
    from tfdoctor.registry import load_registry

    registry = load_registry(check_modules=[_gpu_module()], probe_modules=[])
    return {r.code: (r.status.value, r.reason) for r in run_checks(registry.checks, facts).results}


def test_gpu_checks_are_not_applicable_without_a_gpu_but_findings_stay():
    statuses = _statuses(_no_gpu_facts([]))
    assert statuses["CUDA901"] == ("not-applicable", "no NVIDIA GPU or driver on this host (the PCI bus lists "
                                                     "none, /proc/driver/nvidia is absent)")
    assert statuses["CUDA902"] == ("failed", "")  # a finding is never hidden
    assert statuses["GPU105"] == ("passed", "")  # matters on a CPU too
    assert statuses["THR901"] == ("passed", "")


def test_gpu_checks_keep_passed_when_the_bus_could_not_be_read_or_shows_a_gpu():
    from tfdoctor.facts import Unknown

    assert _statuses(_no_gpu_facts(Unknown("no /sys")))["CUDA901"] == ("passed", "")
    assert _statuses(_no_gpu_facts([{"address": "0000:3b:00.0"}]))["CUDA901"] == ("passed", "")


def test_check_verbose_and_json_say_not_applicable(tmp_path):
    import json

    facts = Facts.load(str(REPO / "tests" / "snapshots" / "cpu-only-vm-tensorflow-2.21.json"))
    facts.sections["gpu_pci"] = {"devices": []}
    path = tmp_path / "facts.json"
    path.write_text(facts.dumps())
    done = run_cli(["check", "--facts", str(path), "-v"])
    lines = done.stdout.splitlines()
    assert "- CUDA005 cuda-visible-devices-hides-every-gpu: not applicable: no NVIDIA GPU or driver on this " \
           "host (the PCI bus lists none, /proc/driver/nvidia is absent)" in lines
    assert not [line for line in lines if line.startswith("✓ CUDA")]
    assert any(line.startswith("✓ THR101 ") for line in lines)
    document = json.loads(run_cli(["check", "--facts", str(path), "--format", "json"]).stdout)
    assert document["schema_version"] == 3
    record = next(r for r in document["results"] if r["code"] == "CUDA005")
    assert (record["status"], record["reason"].startswith("no NVIDIA GPU")) == ("not-applicable", True)
    assert document["summary"]["not-applicable"] == sum(
        r["status"] == "not-applicable" for r in document["results"]) > 20
    import jsonschema

    jsonschema.validate(document, json.loads((REPO / "tfdoctor" / "schema" / "report.schema.json").read_text()))


# -- item 3: the batch-script hook says nothing about an info suggestion it deliberately left out ------

BF16_VM = REPO / "tests" / "snapshots" / "cpu-only-vm-tensorflow-2.21.json"  # avx512_bf16: MP105, info
MP105_NOTE = ("tfdoctor: MP105 not applied (unsafe in-process fix: add --unsafe-fixes --write-python FILE to write "
              "it): Set the Keras policy to "
              "mixed_bfloat16 (this CPU has avx512_bf16)\n")


def test_fix_print_quiet_is_silent_on_a_healthy_bf16_machine():
    loud = run_cli(["fix", "--print", "--facts", str(BF16_VM)])
    assert (loud.returncode, loud.stderr) == (0, MP105_NOTE)
    quiet = run_cli(["fix", "--print", "--quiet", "--facts", str(BF16_VM)])
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert quiet.stdout == loud.stdout
    assert "Nothing to change" in quiet.stdout


def test_fix_write_quiet_writes_the_script_and_says_nothing(tmp_path):
    done = run_cli(["fix", "--write", str(tmp_path / "env.sh"), "-q", "--facts", str(BF16_VM)])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (tmp_path / "env.sh").read_text().startswith("# shellcheck shell=sh")


def test_quiet_notes_keep_what_needs_attention():
    from tfdoctor.fixes.plan import plan_fixes
    from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env

    findings = [
        Finding("bf16 unused", fixes=(EnvFix("Set A", (set_env("A", "1"),), Applicability.UNSAFE),),
                severity=Severity.INFO, code="MP105", name="n"),
        Finding("bad", fixes=(EnvFix("Set B", (set_env("B", "1"),), Applicability.UNSAFE),),
                severity=Severity.WARNING, code="THR101", name="n"),
        Finding("no driver", fixes=(AdminFix("Load the driver", ("modprobe nvidia",)),),
                severity=Severity.ERROR, code="DRV001", name="n"),
    ]
    plan = plan_fixes(findings)
    assert plan.notes(quiet=True) == [
        "tfdoctor: DRV001 needs an administrator: Load the driver", "    modprobe nvidia",
        "tfdoctor: THR101 not applied (unsafe fix: add --unsafe-fixes to apply it): Set B"]
    assert len(plan.notes()) == 4


# -- Done when: `check --quiet` (and the batch form of fix) print nothing at all on every healthy machine --

def _healthy_params():
    from healthy import MACHINES

    return [pytest.param(m, id=m.name) for m in MACHINES]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from healthy import collect

    done: dict[str, object] = {}

    def get(machine):
        if machine.name not in done:
            done[machine.name] = collect(machine, tmp_path_factory.mktemp(machine.name))
        return done[machine.name]

    return get


@pytest.mark.parametrize("machine", _healthy_params())
def test_healthy_machine_hook_prints_nothing_at_all(machine, recorded, capsys):
    from tfdoctor.cli import main

    if machine.false_alarms:
        pytest.skip(f"known false alarms: {sorted(machine.false_alarms)}")
    facts = str(recorded(machine))
    for args in (["check", "--facts", facts, "--quiet"], ["fix", "--print", "--quiet", "--facts", facts]):
        with pytest.raises(SystemExit) as leaving:
            main(args)
        done = capsys.readouterr()
        assert leaving.value.code == 0, (args[0], done.err)
        assert done.err == "", (args[0], done.err)
        if args[0] == "check":
            assert done.out == ""


# -- item 5: explain --log sees what check sees, counts what it did not recognise, knows a host has no GPU --

VERSION_ERROR = ("google.protobuf.runtime_version.VersionError: Detected mismatched Protobuf Gencode/Runtime major "
                 "versions when loading tensorflow/core/framework/attr_value.proto: gencode 6.31.1 runtime 5.29.5. "
                 "Same major version is required.")
RETRACING = ("WARNING:tensorflow:5 out of the last 5 calls to <function TensorFlowTrainer.make_train_function.<locals>"
             ".one_step_on_iterator at 0x0000023D61AF5440> triggered tf.function retracing. Tracing is expensive.")
CUINIT = ("2023-10-02 09:14:11.441297: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:274] failed "
          "call to cuInit: UNKNOWN ERROR (303)")


def _facts_file(tmp_path, edit) -> str:
    facts = Facts.load(str(BF16_VM))
    edit(facts.sections)
    path = tmp_path / "facts.json"
    path.write_text(facts.dumps())
    return str(path)


def _explain(tmp_path, lines: list[str], facts: str) -> tuple[int, dict]:
    import json

    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    done = run_cli(["explain", "--log", str(log), "--facts", facts, "--format", "json"])
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout)


def test_protobuf_version_error_is_traced_to_the_finding_check_reports(tmp_path):
    def old_protobuf(sections):
        sections["python"]["watched"]["protobuf"]["version"] = "5.29.5"

    facts = _facts_file(tmp_path, old_protobuf)
    check = run_cli(["check", "--facts", facts, "--quiet"])
    assert any(line.startswith("tfdoctor: error: PKG005") and "protobuf" in line for line in check.stdout.splitlines())
    status, report = _explain(tmp_path, ["Traceback (most recent call last):", VERSION_ERROR], facts)
    assert status == 1
    (message,) = report["messages"]
    assert (message["id"], message["verdict"], message["line"]) == ("protobuf-runtime-version-error", "error", 2)
    assert "PKG005" in [c["code"] for c in message["checks"] if c["status"] == "failed"]


def test_retracing_warning_is_known(tmp_path):
    status, report = _explain(tmp_path, [RETRACING], str(BF16_VM))
    assert status == 0
    assert [(m["id"], m["verdict"]) for m in report["messages"]] == [("tf-function-retracing", "unconfirmed")]
    assert "reduce_retracing=True" in report["messages"][0]["advice"]


def test_unrecognised_lines_are_counted_and_the_error_looking_ones_listed(tmp_path):
    import json

    lines = ["Epoch 1/3", "", RETRACING, "RuntimeError: nobody knows this one",
             "E0000 00:00:1738697930.202924    7665 some_op.cc:12] an absl error line",
             "469/469 - 3s - loss: 0.2", "Traceback (most recent call last):"]
    status, report = _explain(tmp_path, lines, str(BF16_VM))
    assert status == 0
    assert report["unrecognised"] == {"lines": 5, "error_looking_total": 3, "error_looking": [
        {"line": 4, "text": "RuntimeError: nobody knows this one"},
        {"line": 5, "text": "E0000 00:00:1738697930.202924 7665 some_op.cc:12] an absl error line"},  # excerpt
        {"line": 7, "text": "Traceback (most recent call last):"}]}
    import jsonschema

    jsonschema.validate(report, json.loads((REPO / "tfdoctor" / "schema" / "explain-log.schema.json").read_text()))
    text = run_cli(["explain", "--log", str(tmp_path / "train.log"), "--facts", str(BF16_VM)]).stdout
    assert "5 non-blank line(s) not recognised, 3 of them look like errors:\n    line 4: RuntimeError: nobody" in text


def test_nothing_recognised_still_counts_the_lines(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("hello\nFATAL: out of cheese\n")
    done = run_cli(["explain", "--log", str(log)])
    assert done.stdout.splitlines()[-2:] == ["2 non-blank line(s) not recognised, 1 of them look like errors:",
                                             "    line 2: FATAL: out of cheese"]


def test_cuinit_failure_on_a_host_without_gpu_says_there_is_no_gpu(tmp_path):
    def no_gpu(sections):
        sections["gpu_pci"] = {"devices": []}

    status, report = _explain(tmp_path, [CUINIT], _facts_file(tmp_path, no_gpu))
    assert status == 0
    (message,) = report["messages"]
    assert message["id"] == "cuinit-failed"
    assert {c["status"] for c in message["checks"]} == {"not-applicable"}
    assert message["advice"].startswith("There is no GPU here")
    assert "reboot" not in message["advice"]
    text = run_cli(["explain", "--log", str(tmp_path / "train.log"), "--facts", str(tmp_path / "facts.json")]).stdout
    assert "cuinit-failed — line 1, from TensorFlow/XLA (cuda_driver): there is no GPU on this machine" in text
    assert "    what to do: There is no GPU here: the CUDA build of TensorFlow" in text


def test_cuinit_failure_on_a_gpu_host_keeps_the_driver_advice(tmp_path):
    _, report = _explain(tmp_path, [CUINIT], str(REPO / "tests" / "snapshots" / "gpu" / "healthy-cuda12-pip.json"))
    (message,) = report["messages"]
    assert "reboot" in message["advice"]


# -- item 4: terminal tables fit the terminal (80 columns), folding columns rather than words ------------

def _tune_result():
    from tfdoctor.derive.cpu_budget import CpuBudget
    from tfdoctor.tune.results import TrialRecord
    from tfdoctor.tune.search import TuneResult
    from tfdoctor.tune.space import default_space

    space = default_space(CpuBudget(16, "affinity", 16, tuple(range(16)), 8, 1))
    params = {"TF_NUM_INTRAOP_THREADS": 8, "TF_NUM_INTEROP_THREADS": 2, "OMP_NUM_THREADS": 8, "KMP_BLOCKTIME": "0",
              "KMP_AFFINITY": "granularity=fine,compact,1,0", "OMP_PROC_BIND": "close", "TF_ENABLE_ONEDNN_OPTS": "1"}
    records = [TrialRecord(1, "current", {**params, "TF_NUM_INTRAOP_THREADS": 16}, "ok", 101.5, 2.0),
               TrialRecord(2, "search", params, "ok", 130.25, 2.0)]
    return space, TuneResult(records, stopped="budget of 2 trials reached")


def _assert_fits(text: str, width: int, words: list[str]) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    for word in words:  # never broken across lines
        assert word in text, (word, text)


def test_tune_table_fits_80_columns_by_folding_the_parameters():
    from tfdoctor.tune.progress import render_summary

    space, result = _tune_result()
    narrow = render_summary(space, result, True, "tune.jsonl", width=80)
    _assert_fits(narrow, 80, ["KMP_AFFINITY=granularity=fine,compact,1,0", "INTRAOP=16", "OMP_PROC_BIND=close",
                              "130.2"])
    assert "settings" in narrow
    wide = render_summary(space, result, True, "tune.jsonl", width=200)
    _assert_fits(wide, 200, ["granularity=fine,compact,1,0", "INTRAOP", "OMP_PROC_BIND"])
    assert "settings" not in wide  # one column per parameter where they fit


def test_tune_table_takes_the_terminal_width(monkeypatch):
    from tfdoctor.tune.progress import render_summary

    monkeypatch.setenv("COLUMNS", "80")
    space, result = _tune_result()
    assert max(len(line) for line in render_summary(space, result, True, "t.jsonl").splitlines()) <= 80


def test_compare_fits_an_80_column_terminal(tmp_path):
    import json

    from tfdoctor.testing.fleet import write_fleet

    files = write_fleet(tmp_path, 3, {"node03": {"driver": "535.104.05", "gpus": 3}})
    done = run_cli(["compare", *map(str, files)], env={"COLUMNS": "80"})
    assert done.returncode == 1, done.stderr
    _assert_fits(done.stdout, 80, ["535.104.05", "node03", "550.54.15"])
    assert json.loads(run_cli(["compare", "--format", "json", *map(str, files)]).stdout)["differences"]


# -- item 6 and issue 22 item 7: the report page tells one story and leads with what to do next ----------

def _report(tmp_path, *args: str) -> str:
    out = tmp_path / "page.html"
    done = run_cli(["report", "-o", str(out), "--force", *args])
    assert done.returncode == 0, done.stderr
    return out.read_text()


def _input_bound_profile(tmp_path):
    import json

    from support.report_inputs import profile_document

    document = profile_document(({"input": 80.0, "host_compute": 20.0},))
    document["profile"].update(input_share=0.8, input_bound=True)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(document))
    return path


def test_report_title_names_the_checked_machine_not_this_one(tmp_path):
    import socket

    page = _report(tmp_path, "--facts", str(BF16_VM))
    assert "<title>tfdoctor report — vm</title>" in page
    assert socket.gethostname() == "vm" or f"— {socket.gethostname()}<" not in page


def test_report_leads_with_the_ordered_fixes_and_their_copy_buttons(tmp_path):
    import re

    snapshot = REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json"
    page = _report(tmp_path, "--facts", str(snapshot))
    sections = re.findall(r'<section id="report-([a-z]+)">', page)
    assert sections[:2] == ["next", "check"]
    nxt = page[page.index('<section id="report-next">'):page.index('<section id="report-check">')]
    items = re.findall(r"<li>(.*?)</li>", nxt, re.S)
    badges = [re.search(r'badge (\w+)', item).group(1) for item in items]
    assert badges == sorted(badges, key=["error", "warning", "info"].index)  # worst first
    assert badges[0] == "error" and all('class="copy"' in item for item in items)
    assert 'data-copy="export OMP_NUM_THREADS=' in nxt
    assert "tfdoctor fix --write env.sh &amp;&amp; . ./env.sh" in nxt


def test_report_check_section_runs_the_prof_checks_on_the_included_profile(tmp_path):
    page = _report(tmp_path, "--facts", str(BF16_VM), "--profile", str(_input_bound_profile(tmp_path)))
    check = page[page.index('<section id="report-check">'):page.index('<section id="report-profile">')]
    assert "profile was not collected" not in page
    assert "<b>PROF001</b>" in check and "waited for input 80% of each step" in check
    nxt = page[page.index('<section id="report-next">'):page.index('<section id="report-check">')]
    assert "Parallelize and prefetch the tf.data pipeline" in nxt
    alone = _report(tmp_path, "--facts", str(BF16_VM))  # without a profile: not checked, and said so
    assert "profile was not collected" in alone


def _tune_file(tmp_path, values: list[float], current: tuple[float, float], leader: float):
    from tfdoctor.tune.results import ResultsLog, TrialRecord
    from tfdoctor.tune.space import int_param

    space = [int_param("TF_NUM_INTRAOP_THREADS", 1, 8), int_param("TF_NUM_INTEROP_THREADS", 1, 4)]
    header = {"space": [p.to_json() for p in space], "seeds": {}, "maximize": True, "budget": len(values),
              "time_limit": None, "seed": 1, "objective": {"command": ["python", "train.py"]}}
    path = tmp_path / "tune.jsonl"
    if path.exists():
        path.unlink()
    log = ResultsLog.create(path, header)
    for number, value in enumerate(values):
        phase = "current" if number == 0 else "search"
        params = {"TF_NUM_INTRAOP_THREADS": 2 if number == 0 else 1 + number % 8,
                  "TF_NUM_INTEROP_THREADS": 2 if number == 0 else 1 + number % 4}
        log.append(TrialRecord(number, phase, params, "ok", current[0] if number == 0 else value, 1.0))
    best = {"TF_NUM_INTRAOP_THREADS": 2, "TF_NUM_INTEROP_THREADS": 3}
    log.append(TrialRecord(len(values), "confirm", best, "ok", leader, 1.0, role="leader"))
    log.append(TrialRecord(len(values) + 1, "confirm", {"TF_NUM_INTRAOP_THREADS": 2, "TF_NUM_INTEROP_THREADS": 2},
                           "ok", current[1], 1.0, role="current"))
    return path


def test_tune_plots_need_ten_trials_and_say_why_they_are_absent(tmp_path):
    page = _report(tmp_path, "--no-check", "--tune", str(_tune_file(tmp_path, [0, 90, 95, 99], (80, 82), 100)))
    assert 'id="plot-tune-history"' in page
    assert 'id="plot-tune-importances"' not in page and 'id="plot-tune-surface"' not in page
    assert "No parameter importances or surface: 4 trial(s) to replay, and these plots need at least 10" in page
    many = _report(tmp_path, "--no-check", "--tune", str(_tune_file(
        tmp_path, [0, 90, 95, 99, 40, 85, 97, 70, 60, 98, 91, 93], (80, 82), 100)))
    assert 'id="plot-tune-surface"' in many and "No parameter importances" not in many


def test_a_winner_worse_than_the_current_settings_is_said_so(tmp_path):
    page = _report(tmp_path, "--no-check", "--tune", str(_tune_file(tmp_path, [0, 90, 95, 99], (100, 104), 95)))
    assert ("<b>Verdict: keep your current settings</b> (the best configuration searched measured 6.9% slower "
            "than them)") in page
    assert "<td>winner</td>" not in page  # a configuration measured slower is never shown as the winner
    fine = _report(tmp_path, "--no-check", "--tune", str(_tune_file(tmp_path, [0, 90, 95, 99], (80, 82), 100)))
    assert "keep your current settings" not in fine and "<td>winner</td>" in fine


def test_fleet_of_two_nodes_shows_facts_as_rows_grouped_by_section(tmp_path):
    import re

    from tfdoctor.testing.fleet import write_fleet

    files = write_fleet(tmp_path / "two", 2, {"node02": {"driver": "535.104.05", "gpus": 2}})
    page = _report(tmp_path, "--no-check", "--compare", *map(str, files))
    assert "<title>tfdoctor report — 2 nodes</title>" in page
    groups = re.findall(r"<summary>([a-z_]+) — (\d+) fact\(s\) differ</summary>", page)
    assert [g for g, _ in groups] == sorted({g for g, _ in groups}, key=[g for g, _ in groups].index)
    assert {"nvml", "host"} <= {g for g, _ in groups}
    assert page.count('<table class="fleet facts-as-rows">') == len(groups)
    # Two nodes have no majority: neither is marked odd; each value sits under its node.
    assert "<tr><td>nvml.driver_version</td><td>550.54.15</td><td>535.104.05</td></tr>" in page
    nvml = int(dict(groups)["nvml"])
    assert nvml > 12 and re.search(r'<details class="group"><summary>nvml', page)  # a long group starts closed


def test_fleet_of_many_nodes_keeps_nodes_as_rows_per_group(tmp_path):
    from tfdoctor.testing.fleet import write_fleet

    files = write_fleet(tmp_path / "eight", 8, {"node05": {"driver": "535.104.05"}})
    page = _report(tmp_path, "--no-check", "--compare", *map(str, files))
    assert '<table class="fleet">' in page and "facts-as-rows" not in page
    assert '<span class="node odd" title="node05">node05</span>' in page


# -- the hook's fast path: `check` in its hook forms without click, exactly as the command line runs it ---

FAST_FORMS = [
    ["check", "--quiet"],
    ["check", "--fail-on", "error", "--quiet", "--timeout", "10"],
    ["check", "--fail-on=warning", "-q"],
    ["check", "--format", "json", "--select", "THR,CPU", "--ignore", "THR105"],
    ["check", "-v"],
    ["check"],
]


def test_parse_check_takes_only_the_hook_forms():
    from tfdoctor.hook import parse_check

    options = parse_check(["check", "--fail-on", "error", "--quiet", "--timeout", "10", "--select", "thr,cpu002",
                           "--select", "NUMA", "--root", "/r"])
    assert options is not None
    assert (options.fail_on, options.quiet, options.verbose, options.fmt) == ("error", True, False, "text")
    assert (options.gather.timeout, options.gather.root, options.gather.select) == (10.0, "/r",
                                                                                    ("THR", "CPU002", "NUMA"))
    for argv in (["fix", "--print"], ["check", "--help"], ["check", "--list-checks"], ["check", "-qv"],
                 ["check", "--fail-on", "fatal"], ["check", "--timeout", "soon"], ["check", "--timeout", "-1"],
                 ["check", "--timeout"], ["check", "extra"], ["check", "--bogus"], ["check", "--format", "yaml"],
                 [], ["--version"]):
        assert parse_check(argv) is None, argv


@pytest.mark.parametrize("argv", FAST_FORMS, ids=" ".join)
def test_fast_path_answers_exactly_as_the_command_line(argv, tmp_path):
    import os

    snapshot = str(REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json")
    args = [*argv, "--facts", snapshot]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    fast = subprocess.run([sys.executable, "-c", "import sys; from tfdoctor.console import main; "
                           f"sys.argv = ['tfdoctor', *{args!r}]; main()"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    full = subprocess.run([sys.executable, "-c", f"from tfdoctor.cli import main; main({args!r})"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr)
    assert fast.returncode in (0, 1) and fast.stdout.strip()  # it ran and leaves with check's own exit


def test_fast_path_never_imports_click_and_usage_errors_still_exit_2(tmp_path):
    import os

    code = ("import sys; from tfdoctor.console import main; sys.argv = ['tfdoctor', 'check', '--quiet', "
            "'--facts', sys.argv[1]]\ntry:\n    main()\nfinally:\n    print('click' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    healthy = str(REPO / "tests" / "snapshots" / "gpu" / "healthy-cuda12-pip.json")
    done = subprocess.run([sys.executable, "-c", code, healthy], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "False\n")
    missing = subprocess.run([sys.executable, "-c", code, str(tmp_path / "nope.json")], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2
    assert missing.stderr.startswith("tfdoctor: error: ") and missing.stderr.endswith("False\n")


# -- records: dataclass behaviour for the hook's classes, without importing dataclasses --------------------

def test_record_behaves_as_the_dataclass_it_replaces():
    import copy

    from tfdoctor.model import AdminFix, EnvFix, Finding, Severity, set_env
    from tfdoctor.records import FrozenInstanceError, field, record

    @record(frozen=True)
    class Point:
        """A test record."""

        x: int
        y: int = 0
        tags: dict = field(default_factory=dict)
        kind: str = field(default="point", init=False)

    p = Point(1, y=2)
    assert (p.x, p.y, p.tags, p.kind) == (1, 2, {}, "point")
    assert p == Point(x=1, y=2) and p != Point(1, 3) and Point(1).tags is not Point(1).tags
    assert repr(p) == "test_record_behaves_as_the_dataclass_it_replaces.<locals>.Point(x=1, y=2, tags={}, kind='point')"
    with pytest.raises(FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y
    for bad in (lambda: Point(), lambda: Point(1, 2, {}, "x"), lambda: Point(1, z=3), lambda: Point(1, x=2),
                lambda: Point(1, kind="other")):
        with pytest.raises(TypeError):
            bad()
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))  # type: ignore[arg-type]
    assert copy.deepcopy(p) == p and copy.copy(p) == p

    @record
    class Mutable:
        """A mutable one: assignable, unhashable as a dataclass with eq is."""

        items: list = field(default_factory=list)

    m = Mutable()
    m.items = [1]
    assert m == Mutable([1]) and Mutable.__hash__ is None
    finding = Finding("slow", evidence={"a": 1}, fixes=(EnvFix("Set A", (set_env("A", "1"),)),),
                      severity=Severity.WARNING, code="THR101", name="n")
    assert finding == Finding("slow", {"a": 1}, (EnvFix("Set A", (set_env("A", "1"),)),), Severity.WARNING,
                              "THR101", "n")
    assert AdminFix("Load it", ("modprobe x",)).kind == "admin"
    with pytest.raises(FrozenInstanceError):
        finding.message = "fast"  # type: ignore[misc]


def test_the_hook_imports_neither_click_nor_dataclasses(tmp_path):
    import os

    code = ("import sys\nfrom tfdoctor.console import main\nsys.argv = ['tfdoctor', 'check', '--quiet', '--facts', "
            "sys.argv[1]]\ntry:\n    main()\nfinally:\n    print(sorted(m for m in ('click', 'dataclasses', 'inspect') "
            "if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(BF16_VM)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "[]\n")


def test_the_hook_leaves_what_it_made_frozen_for_the_interpreters_exit(tmp_path):
    """The exit's garbage collections would walk every object the run made (the collector paused since the
    start left them all young): frozen first, after the run's output, with the exit code unchanged."""
    import os

    code = ("import atexit, gc, sys\nfrom tfdoctor.console import main\n"
            "atexit.register(lambda: print(gc.get_freeze_count(), len(gc.get_objects()), gc.isenabled(), "
            "file=sys.stderr))\n"
            "sys.argv = ['tfdoctor', 'check', '--quiet', '--facts', sys.argv[1]]\nmain()")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    healthy = subprocess.run([sys.executable, "-c", code, str(REPO / "tests" / "snapshots" / "gpu" /
                                                             "healthy-cuda12-pip.json")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    # What is still young at exit is what was made after the freeze: a few objects against the run's ~20000.
    frozen, young, enabled = healthy.stderr.split()
    assert (healthy.returncode, healthy.stdout, int(frozen) > 50 * int(young), enabled) == (0, "", True, "False")
    bad = str(REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json")
    failing = subprocess.run([sys.executable, "-c", code, bad], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=60, check=False)
    assert failing.returncode == 1 and failing.stdout.startswith("tfdoctor: error: ")
    frozen, young, _ = failing.stderr.split()[-3:]
    assert int(frozen) > 50 * int(young)


def test_value_tuple_makes_the_class_typing_namedtuple_would():
    import pickle
    import typing

    from tfdoctor.gather import GatherOptions
    from tfdoctor.records import value_tuple

    class Plain(typing.NamedTuple):
        """A pair."""

        x: int
        y: str | None = None

        def doubled(self) -> int:
            return self.x * 2

    @value_tuple
    class Made:
        """A pair."""

        x: int
        y: str | None = None

        def doubled(self) -> int:
            return self.x * 2

    for cls in (Plain, Made):
        value = cls(1)
        assert (value, value.doubled(), value._replace(y="a"), value._asdict()) == ((1, None), 2, (1, "a"),
                                                                                   {"x": 1, "y": None})
        assert (cls._fields, cls._field_defaults, cls.__doc__, cls.__mro__[1:]) == (("x", "y"), {"y": None},
                                                                                   "A pair.", (tuple, object))
        assert repr(value) == f"{cls.__name__}(x=1, y=None)" and value == (1, None) and hash(value) == hash((1, None))
        with pytest.raises(AttributeError):
            value.z = 3  # type: ignore[attr-defined]
    assert Made.__annotations__ == {"x": "int", "y": "str | None"}  # as written, never compiled
    assert Made.__qualname__ == "test_value_tuple_makes_the_class_typing_namedtuple_would.<locals>.Made"
    options = GatherOptions(None, "/r", None, 5.0, ("THR",), ())
    assert pickle.loads(pickle.dumps(options)) == options and options._replace(root=None).root is None
    with pytest.raises(TypeError, match="Non-default namedtuple field z cannot follow default field y"):
        @value_tuple
        class Wrong:
            """Out of order."""

            y: int = 0
            z: int


def test_the_hook_compiles_no_annotation(tmp_path):
    """typing.NamedTuple compiles every field's annotation string (~1.5 ms of the hook over 106 fields);
    the hook's value tuples are made by @value_tuple, which does not."""
    import os

    code = ("import sys, typing\nmade = []\nreal = typing.ForwardRef.__init__\n"
            "typing.ForwardRef.__init__ = lambda self, *a, **k: (made.append(a[0]), real(self, *a, **k))[1]\n"
            "from tfdoctor.console import main\nsys.argv = ['tfdoctor', 'check', '--quiet', '--facts', sys.argv[1]]\n"
            "try:\n    main()\nfinally:\n    print(made, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(BF16_VM)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "[]\n")
