"""What moved out of the check families into derive/ and tfdoctor.usage so that no check module imports
another and no command below the report imports its pages: the shared pieces, tested where they live."""

from __future__ import annotations

import pytest

from tfdoctor import usage
from tfdoctor.derive.resolvable_libraries import put_folder_first
from tfdoctor.derive.tf_build import arch_support
from tfdoctor.derive.thread_settings import parse_thread_count, thread_settings
from tfdoctor.derive.wheel_tags import cpython_of, interpreter_cpython
from tfdoctor.facts import Facts
from tfdoctor.model import EnvOp


def _env(**variables: str) -> Facts:
    return Facts({"env": {"variables": variables}})


def test_thread_settings_keep_what_each_runtime_accepts():
    facts = _env(OMP_NUM_THREADS="8,2", MKL_NUM_THREADS="0", TF_NUM_INTRAOP_THREADS="0",
                 TF_NUM_INTEROP_THREADS="2", KMP_BLOCKTIME="1")
    # "8,2" is a nesting list (team of 8); MKL rejects 0; TensorFlow's 0 means its default (not a setting).
    assert thread_settings(facts) == {"OMP_NUM_THREADS": 8, "TF_NUM_INTEROP_THREADS": 2}
    assert parse_thread_count("TF_NUM_INTRAOP_THREADS", "0") == 0
    assert parse_thread_count("OMP_NUM_THREADS", "0") is None
    assert parse_thread_count("OMP_NUM_THREADS", " 4 ") == 4
    assert parse_thread_count("MKL_NUM_THREADS", "four") is None
    assert thread_settings(_env()) == {}


@pytest.mark.parametrize("section, expected", [
    ({"implementation": "CPython", "version": "3.11.7"}, (3, 11)),
    ({"version": "3.12.0rc1"}, (3, 12)),  # no implementation recorded: CPython, the only one with cp tags
    ({"implementation": "PyPy", "version": "3.10.13"}, None),
    ({"implementation": "CPython"}, None),
    ({"implementation": "CPython", "version": "3"}, None),
])
def test_interpreter_cpython(section, expected):
    assert interpreter_cpython(Facts({"python": section})) == expected


def test_cpython_of_a_tag():
    assert cpython_of("cp311") == (3, 11)
    assert cpython_of("cp313t") == (3, 13)
    assert cpython_of("cp27mu") == (2, 7)
    assert cpython_of("py3") is None and cpython_of("abi3") is None


@pytest.mark.parametrize("cc, capabilities, expected", [
    ((8, 0), ("sm_70", "sm_80", "compute_80"), "sass"),
    ((8, 6), ("sm_80", "compute_80"), "sass"),  # sm_80 binaries run on 8.6 (same major, lower minor)
    ((9, 0), ("sm_80", "compute_80"), "ptx"),  # the driver JIT-compiles compute_80 for a 9.0 GPU
    ((7, 0), ("sm_80", "compute_80"), "none"),
    ((9, 0), ("sm_90a", "compute_90a"), "sass"),
    # "a" targets run on their architecture only: neither binary nor PTX on a later GPU (PTX ISA)
    ((10, 0), ("sm_90a", "compute_90a"), "none"),
    ((9, 0), ("sm_80", "compute_90a"), "ptx"),
    ((10, 3), ("sm_100a",), "none"),
    # "f" targets (CUDA 12.9) run on their family: the same major from their minor on
    ((10, 3), ("sm_100f",), "sass"),
    ((10, 3), ("sm_80", "compute_100f"), "ptx"),
    ((12, 0), ("sm_100f", "compute_100f"), "none"),
    ((12, 0), ("sm_80", "compute_90"), "ptx"),  # plain PTX: every later GPU
    ((8, 0), ("sm_x", "compute_8"), "none"),  # malformed entries are skipped
])
def test_arch_support(cc, capabilities, expected):
    assert arch_support(cc, capabilities) == expected


def test_put_folder_first_is_one_prepend_to_the_loader_path():
    fix = put_folder_first("/opt/cupti/lib64", "the CUPTI folder")
    assert fix.title == "Put /opt/cupti/lib64 first on LD_LIBRARY_PATH (the CUPTI folder)"
    ((name, op, value),) = [(c.name, c.op, c.value) for c in fix.changes]
    assert (name, op, value) == ("LD_LIBRARY_PATH", EnvOp.PREPEND, "/opt/cupti/lib64")


def test_the_command_line_installs_the_reports_page_writer():
    import tfdoctor.cli as cli

    assert usage._section_page_writer is cli._write_section_page


def test_a_section_page_without_a_writer_is_a_programming_error(monkeypatch):
    monkeypatch.setattr(usage, "_section_page_writer", None)
    with pytest.raises(RuntimeError, match="no HTML section writer installed"):
        usage.write_section_page("page.html", False, "fleet", object())


def test_the_writer_passes_the_section_and_its_inputs(monkeypatch):
    calls = []
    monkeypatch.setattr(usage, "_section_page_writer", lambda *args, **kwargs: calls.append((args, kwargs)))
    usage.write_section_page("t.html", True, "tune", {"space": {}}, [], "results.jsonl", surface=None)
    assert calls == [(("t.html", True, "tune", {"space": {}}, [], "results.jsonl"), {"surface": None})]


def test_the_report_refuses_a_section_it_does_not_draw(tmp_path):
    from tfdoctor.report.html.command import write_named_section

    with pytest.raises(ValueError, match="no HTML section named 'lint' \\(tune, fleet or profile\\)"):
        write_named_section(str(tmp_path / "page.html"), False, "lint")
    assert not (tmp_path / "page.html").exists()


def test_check_output_refuses_before_the_work(tmp_path):
    existing = tmp_path / "page.html"
    existing.write_text("old")
    with pytest.raises(usage.UsageError, match=f"{existing} exists; add --force to overwrite it"):
        usage.check_output(str(existing), False)
    usage.check_output(str(existing), True)
    usage.check_output(None, False)
    with pytest.raises(usage.UsageError, match="--html needs a file name"):
        usage.check_output("", False)


def test_profile_writes_its_section_alone_through_the_seam(tmp_path, monkeypatch, capsys):
    # No TensorFlow needed: the run itself is replaced; the page is drawn by the report, reached through usage.
    from tfdoctor.cli import main
    from tfdoctor.profile import runner

    monkeypatch.setattr(runner, "run_workload", lambda *args, **kwargs: runner.RunResult(
        False, error="the workload could not import TensorFlow"))
    with pytest.raises(SystemExit) as failed:
        main(["profile", "--device", "cpu", "--html", str(tmp_path / "profile.html")])
    assert failed.value.code == 3  # profile: 3 = the workload failed (README, exit codes); the page still written
    page = (tmp_path / "profile.html").read_text()
    assert '<section id="report-profile">' in page and page.count("<section ") == 1
    assert "<title>tfdoctor profile" in page
    (tmp_path / "mine.html").write_text("mine")
    with pytest.raises(SystemExit) as exited:
        main(["profile", "--device", "cpu", "--html", str(tmp_path / "mine.html")])
    assert exited.value.code == 2 and (tmp_path / "mine.html").read_text() == "mine"
    assert "exists; add --force" in capsys.readouterr().err
