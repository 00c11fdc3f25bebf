"""Registry, engine, facts and redaction: the backbone every family plugs into."""

from __future__ import annotations

import json
import sys
import threading
import time
import types

import pytest
from conftest import REPO
from support.snapshot_facts import edited_facts

from tfdoctor.engine import gather_facts, run_checks
from tfdoctor.facts import Facts, FactsFileError, NotChecked, Unknown, abandoned
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.redact import REDACTED, redact
from tfdoctor.model import Finding, Severity, Status
from tfdoctor.registry import (
    _BUILTIN_FALLBACK,
    CHECK_GROUP,
    DOC_SECTIONS,
    NAME_RE,
    PROBE_GROUP,
    check,
    load_registry,
    probe,
    select_checks,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_builtin_check_is_documented_and_unique():
    registry = load_registry()
    assert registry.errors == []
    codes = [spec.code for spec in registry.checks]
    assert len(codes) == len(set(codes))
    for spec in registry.checks:
        assert NAME_RE.match(spec.name), spec.name
        positions = [spec.doc.find(section) for section in DOC_SECTIONS]
        assert all(p >= 0 for p in positions), f"{spec.code} lacks a doc section"
        assert positions == sorted(positions), f"{spec.code} doc sections out of order"


def test_fallback_list_matches_pyproject_entry_points():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    entry_points = pyproject["project"]["entry-points"]
    for group in (CHECK_GROUP, PROBE_GROUP):
        assert sorted(entry_points[group].items()) == sorted(_BUILTIN_FALLBACK[group]), group


def test_select_and_ignore_longest_prefix_wins():
    registry = load_registry()
    chosen = [s.code for s in select_checks(registry.checks, ["THR1"], ["THR10", "THR101"])]
    assert "THR101" not in chosen and "THR105" not in chosen
    chosen = [s.code for s in select_checks(registry.checks, ["THR101"], ["THR1"])]
    assert chosen == ["THR101"]  # the longer select beats the shorter ignore


def test_third_party_plugin_module_is_found_like_a_builtin():
    plugin = types.ModuleType("acme_checks")

    @check("ACME001", "widget-misconfigured", Severity.INFO)
    def widget(facts):
        """What it does: x. Why is this bad? y. Example: z. Fix: w. Fix safety: safe."""
        yield Finding("widget", evidence={"env.WIDGET": facts.env("WIDGET")})

    plugin.widget = widget
    registry = load_registry(check_modules=[plugin], probe_modules=[])
    report = run_checks(registry.checks, Facts({"env": {"variables": {"WIDGET": "1"}}}))
    assert report.codes() == ["ACME001"]
    assert report.findings()[0].evidence == {"env.WIDGET": "1"}


def test_a_crashing_check_is_contained_and_the_others_run():
    plugin = types.ModuleType("broken")

    @check("BRK001", "always-crashes", Severity.ERROR)
    def crashes(facts):
        """doc"""
        raise ZeroDivisionError("division by zero")

    @check("BRK002", "finds-something", Severity.WARNING)
    def finds(facts):
        """doc"""
        yield Finding("found")

    plugin.crashes, plugin.finds = crashes, finds
    registry = load_registry(check_modules=[plugin], probe_modules=[])
    report = run_checks(registry.checks, Facts({}))
    assert report.result("BRK001").status is Status.CRASHED
    assert report.result("BRK001").reason.startswith("ZeroDivisionError: division by zero (at test_core.py:")
    assert report.codes() == ["BRK002"]


def test_broken_plugin_entry_point_is_reported_not_fatal(monkeypatch):
    import tfdoctor.registry as registry_module

    real = registry_module._entry_points
    monkeypatch.setattr(registry_module, "_entry_points", lambda group: [
        *real(group), ("broken", "no_such_module_anywhere")] if group == CHECK_GROUP else real(group))
    registry = load_registry()
    assert any("no_such_module_anywhere" in e for e in registry.errors)
    assert registry.check_by_code("THR101") is not None


def test_probe_timeout_and_probe_crash_become_unknown_sections():
    release = threading.Event()

    @probe("slow", timeout=0.2)
    def slow(machine):
        release.wait(10)
        return {"never": True}

    @probe("broken")
    def broken(machine):
        raise OSError("device on fire")

    @probe("fine")
    def fine(machine):
        return {"value": 1}

    plugin = types.ModuleType("probes")
    plugin.slow, plugin.broken, plugin.fine = slow, broken, fine
    registry = load_registry(check_modules=[], probe_modules=[plugin])
    start = time.monotonic()
    facts = gather_facts(registry.probes, Machine(environ={}, timeout=5))
    elapsed = time.monotonic() - start
    release.set()
    assert elapsed < 2  # the hung probe was abandoned, not waited for
    assert facts.sections["slow"] == Unknown("probe slow timed out after 0.2 s")
    assert facts.sections["broken"] == Unknown("probe broken failed: OSError: device on fire")
    assert facts.sections["fine"] == {"value": 1}


def _probes(**funcs):
    """A registry's probes made of plain functions, section = keyword (sorted, as load_registry orders)."""
    plugin = types.ModuleType("probes")
    for section, func in funcs.items():
        def run(machine, func=func):  # a function of its own per section: the mark lives on it
            return func(machine)

        setattr(plugin, section, probe(section)(run))
    return load_registry(check_modules=[], probe_modules=[plugin]).probes


def test_quick_probes_share_one_lane():
    """Quick probes run one after another on one thread: seventeen threads passing the GIL around at
    every read cost the hook more than the probes themselves."""
    threads = []

    def quick(machine):
        threads.append(threading.get_ident())
        return {}

    facts = gather_facts(_probes(a=quick, b=quick, c=quick, d=quick, e=quick), Machine(environ={}, timeout=5))
    assert set(facts.sections) == {"a", "b", "c", "d", "e"}
    assert len(threads) == 5 and len(set(threads)) == 1


def test_a_probe_that_waits_hands_the_queue_to_a_new_lane():
    """Probes waiting on something (a subprocess, NVML, a slow file system) overlap: four waits of 0.3 s
    take well under the 1.2 s they would one after another."""
    def waits(machine):
        time.sleep(0.3)
        return {"waited": True}

    start = time.monotonic()
    facts = gather_facts(_probes(a=waits, b=waits, c=waits, d=waits), Machine(environ={}, timeout=5))
    elapsed = time.monotonic() - start
    assert all(section == {"waited": True} for section in facts.sections.values())
    assert elapsed < 0.8


def test_a_probe_waiting_on_a_child_starts_first_beside_the_others(monkeypatch):
    """`--python`'s snapshot waits on another interpreter: its probe (last in the sorted order) starts at once in
    a lane of its own, and the quick probes run meanwhile in another lane. The handoff is put out of reach, so
    without that head start all three would run in one lane (as they do when there is no child to wait on)."""
    import tfdoctor.engine as engine

    monkeypatch.setattr(engine, "HANDOFF_S", 60.0)
    quick_ran = threading.Event()
    lanes: dict[str, int] = {}

    def quick(machine):
        lanes.setdefault("quick", threading.get_ident())
        quick_ran.set()
        return {}

    def child(machine):
        lanes["child"] = threading.get_ident()
        return {"saw_a_quick_probe": quick_ran.wait(5)}

    plugin = types.ModuleType("probes")
    plugin.a, plugin.b = probe("a")(lambda m: quick(m)), probe("b")(lambda m: quick(m))
    plugin.z = probe("z_child", waits_on_child=lambda machine: machine.python is not None)(lambda m: child(m))
    specs = load_registry(check_modules=[], probe_modules=[plugin]).probes
    facts = gather_facts(specs, Machine(environ={}, python="/opt/venv/bin/python", timeout=10))
    assert facts.sections["z_child"] == {"saw_a_quick_probe": True}
    assert lanes["quick"] != lanes["child"]
    # Without another interpreter to wait on, the same probe keeps its place in the one lane.
    quick_ran.clear()
    lanes.clear()
    facts = gather_facts(specs, Machine(environ={}, timeout=10))
    assert facts.sections["z_child"] == {"saw_a_quick_probe": True}  # the quick ones ran before it
    assert lanes["quick"] == lanes["child"]


def test_a_hung_first_probe_costs_its_own_section_only():
    """A probe hung for good (a stale NFS mount under site-packages) is first in the queue: the others
    still run, it is abandoned at the machine's timeout, and abandoned_probes() names it."""

    release = threading.Event()

    def hangs(machine):
        release.wait(30)
        return {"late": True}

    def fine(machine):
        return {"value": 1}

    mark = abandoned.abandoned_mark()
    start = time.monotonic()
    try:
        facts = gather_facts(_probes(a_hangs=hangs, b=fine, c=fine), Machine(environ={}, timeout=0.5))
        elapsed = time.monotonic() - start
        assert abandoned.abandoned_probes(since=mark) == ["a_hangs"]
    finally:
        release.set()
    assert facts.sections == {"a_hangs": Unknown("probe a_hangs timed out after 0.5 s"),
                              "b": {"value": 1}, "c": {"value": 1}}
    assert 0.5 <= elapsed < 1.5
    assert "a_hangs" not in facts.meta["probe_seconds"]


def test_an_overall_deadline_already_past_leaves_every_section_unknown():
    facts = gather_facts(_probes(a=lambda m: {}, b=lambda m: {}), Machine(environ={}, timeout=5),
                         deadline=time.monotonic() - 1)
    assert facts.sections == {"a": Unknown("probe a timed out after 5 s"), "b": Unknown("probe b timed out after 5 s")}


def test_facts_get_raises_not_checked_with_the_path():
    facts = Facts({"cpu": {"flags": Unknown("no cpuinfo"), "online": [0]}, "gpu": Unknown("NVML missing")})
    assert facts.get("cpu.online") == [0]
    with pytest.raises(NotChecked, match=r"^cpu.flags unknown: no cpuinfo$"):
        facts.get("cpu.flags")
    with pytest.raises(NotChecked, match=r"^gpu unknown: NVML missing$"):
        facts.get("gpu.devices")
    with pytest.raises(NotChecked, match=r"cpu\.model was not collected"):
        facts.get("cpu.model")
    assert facts.get("cpu.model", "absent") == "absent"


def test_facts_round_trip_through_json_with_unknowns_and_bytes(tmp_path):
    weird = "caf\udce9 \n 'x' $(y)"
    facts = Facts({"env": {"variables": {"X": weird}}, "cpu": Unknown("timed out"),
                   "nested": {"list": [1, Unknown("gone"), {"a": None}]}}, {"hostname": "h"})
    path = tmp_path / "facts.json"
    path.write_text(facts.dumps())
    again = Facts.load(path)
    assert again.sections == facts.sections
    assert again.meta == facts.meta


def test_collected_facts_validate_against_the_published_schema(tmp_path):
    import jsonschema

    schema = json.loads((REPO / "tfdoctor" / "schema" / "facts.schema.json").read_text())
    kind = jsonschema.validators.validator_for(schema)
    kind.check_schema(schema)
    validator = kind(schema)  # built once, not per file (jsonschema.validate would): ~150 files follow
    facts = gather_facts(load_registry().probes, Machine(environ={"OMP_NUM_THREADS": "2"}))
    validator.validate(json.loads(facts.dumps()))
    for snapshot in sorted((REPO / "tests" / "snapshots").rglob("*.json")):
        validator.validate(json.loads(snapshot.read_text()))


def test_report_json_validates_against_the_published_schema():
    import jsonschema

    from tfdoctor.report.json_report import report_to_json

    schema = json.loads((REPO / "tfdoctor" / "schema" / "report.schema.json").read_text())
    facts = Facts.load(REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json")
    registry = load_registry()
    jsonschema.validate(report_to_json(run_checks(registry.checks, facts)), schema)


def test_other_schema_version_is_refused():
    with pytest.raises(FactsFileError, match="schema version 2 is not supported"):
        Facts.from_json({"schema_version": 2, "sections": {}})


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("GITHUB_TOKEN", "abc", REDACTED),
    ("NCCL_IB_HCA", "mlx5_0", "mlx5_0"),
    ("PIP_INDEX_URL", "https://user:s3cret@pypi.example/simple", f"https://{REDACTED}@pypi.example/simple"),
    ("SOMETHING", "ghp_0123456789abcdefghijABCDEFGHIJ", REDACTED),
    ("SLURM_JOB_NAME", "Bearer abcdefghijklmnopqrstuvwx", REDACTED),
    ("DB_PASSWORD", "hunter2", REDACTED),
    ("CUDA_HOME", "/usr/local/cuda-12.4", "/usr/local/cuda-12.4"),
])
def test_redaction(name, value, expected):
    assert redact({"variables": {name: value}}) == {"variables": {name: expected}}


def test_collect_redacts_and_replays(tmp_path):
    from support.command_line import run_cli

    env = {"SLURM_JOB_NAME": "https://bob:pw@host/x", "OMP_NUM_THREADS": "abc"}
    done = run_cli(["collect", "-o", str(tmp_path / "f-%h.json")], cwd=tmp_path, env=env)
    assert done.returncode == 0
    written = list(tmp_path.glob("f-*.json"))
    assert len(written) == 1 and "%h" not in written[0].name
    data = json.loads(written[0].read_text())
    assert data["sections"]["env"]["variables"]["SLURM_JOB_NAME"] == f"https://{REDACTED}@host/x"
    replay = run_cli(["check", "--facts", str(written[0]), "--select", "THR001", "--quiet"], cwd=tmp_path)
    assert replay.returncode == 1
    assert "THR001" in replay.stdout
    refused = run_cli(["collect", "-o", str(written[0])], cwd=tmp_path)
    assert refused.returncode == 2


def test_docs_checks_page_is_generated_from_the_checks():
    from tfdoctor.report.check_docs import render_check_docs

    expected = render_check_docs(load_registry().checks)
    assert (REPO / "docs" / "checks.md").read_text() == expected, (
        "docs/checks.md is stale: run `python tools/regenerate.py` (it runs tfdoctor explain --all > docs/checks.md)")


def test_fast_entry_point_scan_agrees_with_importlib_metadata():
    from importlib.metadata import entry_points

    from tfdoctor.registry import EXTRA_GROUPS, _all_entry_points

    for group in (CHECK_GROUP, PROBE_GROUP, *EXTRA_GROUPS):
        expected = sorted({(ep.name, ep.value) for ep in entry_points(group=group)})
        assert sorted({(n, v) for g, n, v in _all_entry_points() if g == group}) == expected


def test_parse_entry_points_file():
    from tfdoctor.registry import parse_entry_points

    text = "[console_scripts]\ntfdoctor = tfdoctor.cli:main\n\n# comment\n[tfdoctor.checks]\nacme=acme.checks\n"
    assert parse_entry_points(text) == [("console_scripts", "tfdoctor", "tfdoctor.cli:main"),
                                        ("tfdoctor.checks", "acme", "acme.checks")]


def test_a_probe_stuck_from_an_earlier_run_does_not_end_a_later_one(capsys):
    """main() leaves through os._exit only for probes abandoned in its own run; an earlier run's stuck
    thread (same process, as in tests or an embedding tool) must not cut a later run short."""
    from tfdoctor.cli import main

    release = threading.Event()
    stuck = threading.Thread(target=release.wait, args=(30,), name="probe-stuck", daemon=True)
    stuck.start()
    abandoned.note_abandoned(stuck)
    try:
        with pytest.raises(SystemExit) as exit_info:  # os._exit would end pytest instead
            main(["explain", "THR101"])
        assert exit_info.value.code == 0
        assert "stuck" in abandoned.abandoned_probes()
    finally:
        release.set()


# A facts file edited by hand (or written by another tool) can hold any JSON where a fact belongs; the
# shared readers of the GPU list, the TensorFlow build and the CPU budget must answer "not checked" or
# "absent", never crash every check that uses them.
@pytest.mark.parametrize(("snapshot", "path", "value"), [
    ("framework/dgx-a100-container.json", "nvml", 5),
    ("framework/dgx-a100-container.json", "nvml.devices", 5),
    ("framework/dgx-a100-container.json", "nvml.devices", {"a": 1}),
    ("framework/dgx-a100-container.json", "nvml.devices.0", "x"),
    ("framework/dgx-a100-container.json", "nvml.devices.0.index", "x"),
    ("framework/dgx-a100-container.json", "nvml.devices.0.index", None),
    ("framework/dgx-a100-container.json", "nvml.devices.0.compute_capability", [1, "a"]),
    ("gpu/gpu002-uncorrectable-ecc.json", "python.watched.tensorflow", 5),
    ("gpu/gpu002-uncorrectable-ecc.json", "python.watched.tensorflow.requires_dist", 5),
    ("gpu/gpu002-uncorrectable-ecc.json", "python.tensorflow.build_info.cuda_compute_capabilities", 5),
    ("core/slurm-node-bad-threads.json", "cpu.online", "x"),
    ("core/slurm-node-bad-threads.json", "cpu.online", 5),
    ("core/slurm-node-bad-threads.json", "cpu.online", [[0]]),
    ("core/slurm-node-bad-threads.json", "cpu.allowed_cpus", [{"a": 1}]),
    ("core/slurm-node-bad-threads.json", "cpu.topology", [5]),
    ("core/slurm-node-bad-threads.json", "cgroup.limits", "x"),
    ("core/slurm-node-bad-threads.json", "cgroup.limits", 5),
    ("core/slurm-node-bad-threads.json", "cgroup.cpuset", [[0]]),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes", 5),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes", ["x"]),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes.0.node", "x"),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes.0.cpus", 5),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes.0.cpus", [[0]]),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.pci_gpus", 5),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.pci_gpus", ["x"]),
    ("numa/slurm-rank1-off-gpu-node.json", "cpu.online", [None]),
    ("numa/slurm-rank1-off-gpu-node.json", "cpu.topology", [{"cpu": 0}]),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.libraries.cublas", "x"),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.libraries.cublas.files", "x"),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.libraries.cublas.files", [5]),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.libraries.cublas.resolved", [1, "a"]),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.ld_library_path", 5),
    ("gpu/cuda003-cublas-shadowed.json", "cuda_libs.runpath", 5),
    ("core/slurm-node-bad-threads.json", "cpu.cpuinfo.flags", 5),
    ("framework/dgx-a100-container.json", "cpu.cpuinfo.flags", None),
    ("gpu/gpu004-power-brake-at-idle.json", "nvml.devices.0.clock_event_reasons", 5),
    ("gpu/gpu005-pcie-width-degraded.json", "nvml.devices.0.pcie", "x"),
    ("gpu/gpu006-mig-without-instances.json", "nvml.devices.0.mig_mode", [1, "a"]),
    ("gpu/gpu007-memory-held-by-other-process.json", "nvml.devices.0.processes", 5),
    ("gpu/xla001-libdevice-not-found.json", "xla_toolchain.candidates", 5),
    ("gpu/xla001-libdevice-not-found.json", "xla_toolchain.candidates", [{"a": 1}]),
    ("gpu/xla001-libdevice-not-found.json", "xla_toolchain.libdevice_elsewhere", ["x"]),
    ("gpu/xla002-ptxas-older-than-build.json", "xla_toolchain.ptxas", "x"),
    ("gpu/xla002-ptxas-older-than-build.json", "xla_toolchain.candidates", 5),
    ("gpu/xla003-data-dir-without-libdevice.json", "xla_toolchain.candidates", ["x"]),
    ("gpu/xla003-data-dir-without-libdevice.json", "xla_toolchain.libdevice_elsewhere", 5),
    ("gpu/drv001-driver-not-loaded.json", "gpu_pci.devices", "x"),
    ("gpu/drv001-driver-not-loaded.json", "gpu_pci.devices", [{"a": 1}]),
    ("framework/dgx-a100-container.json", "iommu", 5),
    ("framework/dgx-a100-container.json", "iommu.group_types", 5),
    ("framework/dgx-a100-container.json", "iommu.units", [None]),
    ("framework/dgx-a100-container.json", "iommu.cmdline.intel_iommu", 5),
    ("cpu-only-vm-tensorflow-2.21.json", "openmp.runtimes", "x"),
    ("cpu-only-vm-tensorflow-2.21.json", "openmp.runtimes", [5]),
    ("cpu-only-vm-tensorflow-2.21.json", "openmp.runtimes", [{"runtime": "libgomp", "path": 5}]),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.nodes.0.node", 5),
    ("numa/slurm-rank1-off-gpu-node.json", "numa.pci_gpus.1.numa_node", 2),
    ("numa/slurm-rank1-off-gpu-node.json", "cpu.allowed_cpus", 5),
    ("numa/slurm-rank1-off-gpu-node.json", "cpu.allowed_cpus", [None]),
    ("gpu/cuda004-visible-devices-missing.json", "nvml.devices.0.mig_devices", 5),
    ("gpu/cupti002-profiling-admin-only.json", "privileges.modprobe_restrict_profiling", 5),
    ("framework/dgx-a100-container.json", "network.infiniband.0.active_rate_gbps", "x"),
])
def test_wrong_shaped_shared_facts_crash_no_check(snapshot, path, value):
    registry = load_registry()
    report = run_checks(registry.checks, edited_facts(snapshot, {path: value}))
    assert [(r.code, r.reason) for r in report.crashed()] == []


def test_a_gpu_on_a_node_without_cpus_is_placed_by_its_local_cpus():
    """sysfs numa_node may name a node with no CPUs (memory-only): binding must not aim at it."""
    from tfdoctor.derive.gpu_inventory import all_gpus
    from tfdoctor.derive.numa_placement import gpu_placements, numa_nodes

    facts = edited_facts("numa/slurm-rank1-off-gpu-node.json", {"numa.pci_gpus.0.numa_node": 2})
    first = gpu_placements(facts, all_gpus(facts), numa_nodes(facts))[0]
    assert (first.node, first.reported_node, first.how) == (0, 2, "local_cpulist")
    facts.sections["numa"]["pci_gpus"][0]["local_cpus"] = []
    first = gpu_placements(facts, all_gpus(facts), numa_nodes(facts))[0]
    assert (first.node, first.how) == (None, "numa_node 2 has no CPUs")


@pytest.mark.parametrize("record", [{"a": 1}, {"path": None}, {"path": 5}, {"path": "/x/libcublas.so.12", "others": 5},
                                    {"path": "/x/libcublas.so.12", "others": [None]}])
def test_wrong_shaped_loader_resolution_crashes_no_check(record):
    facts = edited_facts("gpu/cuda003-cublas-shadowed.json", {"cuda_libs.libraries.cublas.resolved": {}})
    facts.sections["cuda_libs"]["libraries"]["cublas"]["resolved"] = {"libcublas.so.12": record}
    report = run_checks(load_registry().checks, facts)
    assert [(r.code, r.reason) for r in report.crashed()] == []
