"""`tfdoctor explain --log`: recognise real messages in a log, run the checks that diagnose them on the
machine (here: recorded machines from tests/snapshots), and say why with the fix; exit 1 only when a
recognised message points to an error finding."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO

from tfdoctor.cli import main
from tfdoctor.logs.read import LogReadError, read_log_file, read_log_stdin

SNAPSHOTS = REPO / "tests" / "snapshots"
CUDNN_OLD = ("E0000 00:00:1738697930.202924    7665 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source "
             "was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher "
             "minor version. If using a binary install, upgrade your CuDNN library.")
HARMLESS = [
    "2024-08-29 10:01:02.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on. You may see "
    "slightly different numerical results due to floating-point round-off errors from different computation "
    "orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
    "2023-10-09 13:36:23.355516: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:9342] Unable to "
    "register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
    "2026-02-24 16:46:52.110213: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.",
]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code), out, err


def write_log(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "train.log"
    path.write_text("Epoch 1/10\n" + "\n".join(lines) + "\n469/469 - 3s - loss: 0.2 - accuracy: 0.94\n")
    return str(path)


def explain_json(capsys, log: str, snapshot: str) -> tuple[int, dict]:
    code, out, err = run(["explain", "--log", log, "--facts", str(SNAPSHOTS / snapshot), "--format", "json"], capsys)
    assert err == ""
    return code, json.loads(out)


def test_cudnn_mismatch_is_explained_by_the_cuda002_finding(tmp_path, capsys):
    code, report = explain_json(capsys, write_log(tmp_path, CUDNN_OLD), "gpu/cuda002-cudnn-older-than-build.json")
    assert code == 1
    (message,) = report["messages"]
    assert (message["id"], message["line"], message["verdict"]) == ("cudnn-older-than-build", 2, "error")
    assert [(c["code"], c["status"]) for c in message["checks"]] == [("CUDA002", "failed"), ("CUDA003", "passed")]
    finding = message["checks"][0]["findings"][0]
    assert finding["severity"] == "error" and "libcudnn" in finding["message"]
    assert report["summary"] == {"error": 1, "warning": 0, "info": 0, "unconfirmed": 0, "harmless": 0}


def test_the_same_message_on_a_healthy_machine_is_unconfirmed_and_exits_0(tmp_path, capsys):
    code, report = explain_json(capsys, write_log(tmp_path, CUDNN_OLD), "gpu/healthy-cuda12-pip.json")
    assert code == 0
    assert report["messages"][0]["verdict"] == "unconfirmed"
    assert {c["status"] for c in report["messages"][0]["checks"]} == {"passed"}


@pytest.mark.parametrize(("line", "snapshot", "message_id", "code"), [
    ("2020-11-04 10:50:50.925046: E external/org_tensorflow/tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:"
     "1441] function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)failed with "
     "error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", "gpu/cupti002-profiling-admin-only.json",
     "cupti-insufficient-privileges", "CUPTI002"),
    ("InternalError: libdevice not found at ./libdevice.10.bc [Op:__some_op]", "gpu/xla001-libdevice-not-found.json",
     "libdevice-not-found", "XLA001"),
    ("2024-09-25 10:12:55.178344: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:32] Could not find cuda drivers "
     "on your machine, GPU will not be used.", "gpu/drv001-driver-not-loaded.json", "cuda-drivers-not-found", "DRV001"),
    ("2021-04-09 19:52:41.024315: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load "
     "dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file "
     "or directory", "gpu/cuda001-library-not-installed.json", "cuda-library-not-loaded", "CUDA001"),
    ("2019-01-27 10:02:11.112233: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Ignoring visible gpu "
     "device (device: 0, name: Tesla K40c, pci bus id: 0000:06:00.0, compute capability: 3.5) with Cuda compute "
     "capability 3.5. The minimum required Cuda capability is 3.7.", "gpu/drv003-gpu-older-than-build.json",
     "gpu-below-minimum-capability", "DRV003"),
])
def test_error_messages_are_traced_to_the_finding_that_causes_them(tmp_path, capsys, line, snapshot, message_id,
                                                                   code):
    status, report = explain_json(capsys, write_log(tmp_path, line), snapshot)
    assert status == 1
    (message,) = report["messages"]
    assert (message["id"], message["verdict"]) == (message_id, "error")
    assert code in [c["code"] for c in message["checks"] if c["status"] == "failed"]


def test_a_warning_finding_gives_a_warning_verdict_and_exit_0(tmp_path, capsys):
    line = ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
            "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.")
    status, report = explain_json(capsys, write_log(tmp_path, line), "framework/dgx-a100-container.json")
    assert status == 0
    (message,) = report["messages"]
    assert message["verdict"] == "warning"
    failed = sorted(c["code"] for c in message["checks"] if c["status"] == "failed")
    assert failed == ["DIST101", "DIST105"]


def test_harmless_start_up_noise_is_said_to_be_harmless(tmp_path, capsys):
    code, out, _ = run(["explain", "--log", write_log(tmp_path, *HARMLESS),
                        "--facts", str(SNAPSHOTS / "gpu" / "healthy-cpu-laptop.json")], capsys)
    assert code == 0
    assert "3 known message(s)" in out
    for message_id in ("onednn-custom-operations-on", "cudnn-factory-registered-twice", "cpu-instructions-available"):
        assert f"✓ {message_id} — " in out
    assert "tfdoctor: 0 error, 0 warning, 0 info, 0 unconfirmed, 3 harmless" in out
    assert "what to do: Ignore it." in out


def test_text_report_names_the_finding_and_its_fix(tmp_path, capsys):
    code, out, _ = run(["explain", "--log", write_log(tmp_path, CUDNN_OLD),
                        "--facts", str(SNAPSHOTS / "gpu" / "cuda002-cudnn-older-than-build.json")], capsys)
    assert code == 1
    assert "✗ cudnn-older-than-build — line 2, from TensorFlow/XLA (cuda_dnn): the cause is on this machine" in out
    assert "    CUDA002 cuda-library-older-than-build (error): " in out
    assert "      fix (" in out
    assert "    checked, nothing found: CUDA003" in out


def test_a_log_without_known_messages_runs_no_check(tmp_path, capsys):
    code, out, _ = run(["explain", "--log", write_log(tmp_path, "just training")], capsys)
    assert code == 0
    assert out.startswith("tfdoctor: ") and ", 0 known message(s)\n" in out
    assert "No message tfdoctor knows was found" in out


def test_json_validates_against_the_published_schema(tmp_path, capsys):
    import jsonschema

    log = write_log(tmp_path, CUDNN_OLD, *HARMLESS)
    _, report = explain_json(capsys, log, "gpu/cuda002-cudnn-older-than-build.json")
    schema = json.loads((REPO / "tfdoctor" / "schema" / "explain-log.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert [m["line"] for m in report["messages"]] == [2, 3, 4, 5]


def test_standard_input_is_read_with_dash(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((CUDNN_OLD + "\n").encode())))
    facts = SNAPSHOTS / "gpu" / "cuda002-cudnn-older-than-build.json"
    code, out, _ = run(["explain", "--log", "-", "--facts", str(facts), "--format", "json"], capsys)
    assert code == 1
    assert json.loads(out)["log"]["source"] == "standard input"


def test_secrets_in_an_echoed_line_are_redacted(tmp_path, capsys):
    line = ("W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot "
            "open shared object file: No such file or directory; LD_LIBRARY_PATH: /opt/ghp_0123456789abcdefghijAB"
            "CDEFGHIJ/lib")
    code, report = explain_json(capsys, write_log(tmp_path, line), "gpu/healthy-cpu-laptop.json")
    assert code == 0
    assert report["messages"][0]["text"].endswith("LD_LIBRARY_PATH: /opt/<redacted>/lib")
    assert "ghp_" not in json.dumps(report)


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: p / "missing.log", "cannot read --log {}: no such file"),
    (lambda p: p, "--log {} is a directory, not a regular file; pipe anything else into --log -"),
    (lambda p: (os.mkfifo(p / "fifo"), p / "fifo")[1],
     "--log {} is a FIFO (named pipe), not a regular file; pipe anything else into --log -"),
])
def test_unreadable_logs_are_usage_errors(tmp_path, capsys, make, expected):
    path = make(tmp_path)
    code, out, err = run(["explain", "--log", str(path)], capsys)
    assert code == 2 and out == ""
    assert err == f"tfdoctor: error: {expected.format(path)}\n"
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [
    ["explain", "THR101", "--log", "x.log"],
    ["explain", "THR101", "--format", "json"],
    ["explain", "THR101", "--facts", "f.json"],
    ["explain", "--log", ""],
])
def test_option_mistakes_are_usage_errors(capsys, args):
    code, _, err = run(args, capsys)
    assert code == 2
    assert err.startswith("tfdoctor: error: ")


def test_a_bad_facts_file_is_a_usage_error_even_when_nothing_needs_checking(tmp_path, capsys):
    bad = tmp_path / "facts.json"
    bad.write_text("{not json")
    code, _, err = run(["explain", "--log", write_log(tmp_path, HARMLESS[2]), "--facts", str(bad)], capsys)
    assert code == 2 and "is not JSON" in err


def test_only_the_tail_of_a_large_file_is_read(tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(b"x" * 5000 + b"\npartial line ends here\n" + b"Illegal instruction (core dumped)\n")
    log = read_log_file(str(path), tail_bytes=40)
    assert log.bytes_skipped == path.stat().st_size - 40
    assert log.text == "Illegal instruction (core dumped)\n"  # the cut line is dropped, not half-read


def test_carriage_returns_and_colour_codes_do_not_hide_a_message(tmp_path):
    path = tmp_path / "bar.log"
    path.write_bytes(b"1/9 [==>...]\r2/9 [====>..]\r\x1b[31mOMP: Error #15: Initializing libiomp5.so, but found "
                     b"libiomp5.so already initialized.\x1b[0m\r\n")
    from tfdoctor.logs.messages import find_messages

    (sighting,) = find_messages(read_log_file(str(path)).text)
    assert (sighting.message.id, sighting.line) == ("openmp-runtime-loaded-twice", 3)


def test_standard_input_keeps_its_tail_and_stops_waiting_at_the_deadline():
    log = read_log_stdin(io.BytesIO(b"a\n" * 100 + b"Illegal instruction\n"), tail_bytes=30)
    assert log.bytes_skipped == 200 + 20 - 30 and log.text.endswith("Illegal instruction\n")
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"Illegal instruction\n")
        with os.fdopen(os.dup(read_end), "rb") as stream:
            log = read_log_stdin(stream, seconds=0.2)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert log.stopped == "stopped waiting for more input after 0.2 s"
    assert log.text == "Illegal instruction\n"


def test_a_terminal_on_standard_input_is_refused():
    master, slave = os.openpty()
    try:
        with os.fdopen(os.dup(slave), "rb") as stream, pytest.raises(LogReadError, match="is a terminal"):
            read_log_stdin(stream)
    finally:
        os.close(master)
        os.close(slave)


def test_check_does_not_load_the_log_explainer():
    import subprocess

    code = ("import sys\nfrom tfdoctor.cli import main\ntry:\n    main(['check', '--facts', sys.argv[1]])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('tfdoctor.logs')))\n")
    done = subprocess.run([sys.executable, "-c", code, str(SNAPSHOTS / "gpu" / "healthy-cpu-laptop.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_every_message_is_listed_in_the_docs():
    from tfdoctor.logs.messages import known_messages

    page = (REPO / "docs" / "log-messages.md").read_text()
    assert [m.id for m in known_messages() if f"`{m.id}`" not in page] == []
