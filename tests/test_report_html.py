"""`tfdoctor report`: the page's sections from each kind of input, redaction, and its usage errors.
(The page in a real browser: tests/test_report_browser.py.)"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO
from support.report_inputs import (
    SECRET_GH_TOKEN,
    SECRET_HF_TOKEN,
    SECRET_URL_PASSWORD,
    profile_document,
    verdict_document,
    write_fleet,
    write_tune_results,
)
from support.report_pages import visible_text

from tfdoctor.cli import main
from tfdoctor.report.html.profile_section import breakdown_figure


def run_report(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(["report", *args])
    out = capsys.readouterr()
    return exited.value.code, out.out, out.err


def rows_of(page: str, table_class: str) -> list[list[str]]:
    body = re.search(rf'<table class="{table_class}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, f"no table {table_class}"
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]


def test_fleet_section_puts_the_odd_node_first_and_marks_its_value(tmp_path, capsys):
    files = write_fleet(tmp_path)
    out = tmp_path / "fleet.html"
    code, _, err = run_report(capsys, "-o", str(out), "--no-check", "--compare", *map(str, files))
    assert code == 0, err
    page = out.read_text()
    assert '<section id="report-fleet">' in page and 'id="report-check"' not in page
    # Three nodes: the nodes are columns, the odd node (off the majority in the most facts) first, and each
    # differing fact a row of its group.
    assert re.search(r'<table class="fleet facts-as-rows"><thead><tr><th>fact</th><th><span class="node odd" '
                     r'title="gpu03">gpu03</span></th><th><span class="node', page)
    assert ('<tr><td>nvml.driver_version</td><td><span class="differs">535.104.05</span></td><td>550.54.15</td>'
            '<td>550.54.15</td></tr>') in page
    assert re.search(r"<summary>nvml — \d+ fact\(s\) differ</summary>", page)
    assert re.search(r'<span class="differs">535\.104\.05</span>', page)
    assert "odd node out: " in visible_text(page) and "gpu03" in visible_text(page).split("odd node out:")[1][:20]


def test_planted_secrets_never_reach_the_page(tmp_path, capsys):
    files = write_fleet(tmp_path)
    out = tmp_path / "report.html"
    code, _, err = run_report(capsys, "-o", str(out), "--facts", str(files[1]), "--compare", *map(str, files))
    assert code == 0, err
    page = out.read_text()
    for secret in (SECRET_URL_PASSWORD, SECRET_HF_TOKEN, SECRET_GH_TOKEN):
        assert secret not in page
    # The finding that quotes the token is still there, with only the token redacted.
    assert '<b>THR001</b>' in page
    assert "OMP_NUM_THREADS=&#x27;&lt;redacted&gt;&#x27; is not a positive whole number" in page


def test_profile_section_draws_one_stacked_bar_per_step_and_lists_the_verdicts(tmp_path, capsys):
    steps = ({"input": 20.0, "host_compute": 70.0, "other": 10.0}, {"input": 30.0, "host_compute": 60.0, "other": 10.0})
    (tmp_path / "p.json").write_text(json.dumps(profile_document(steps)))
    (tmp_path / "ab.json").write_text(json.dumps(verdict_document()))
    out = tmp_path / "p.html"
    code, _, err = run_report(capsys, "-o", str(out), "--no-check", "--profile", str(tmp_path / "p.json"),
                              "--profile", str(tmp_path / "ab.json"))
    assert code == 0, err
    page = out.read_text()
    assert 'id="plot-breakdown-0"' in page and page.count("Plotly.newPlot(") == 1
    text = visible_text(page)
    assert re.search(r"Input\s+25\.00 ms\s+25%", text) and re.search(r"Host compute\s+65\.00 ms\s+65%", text)
    assert "Kernel launch" not in text  # never measured: not listed as zero
    assert re.search(r"before\.sh\s+after\.sh\s+slower\s+×1\.25 \(95% CI 1\.10–1\.40\)\s+4", text)


def test_breakdown_bars_stack_to_each_step_time():
    steps = ({"input": 1.0, "launch": 2.0, "device_compute": 3.0}, {"input": 2.0, "launch": 2.0, "device_compute": 4.0})
    figure = breakdown_figure(profile_document(steps)["profile"]["breakdown"])
    assert figure.layout.barmode == "stack"
    assert [trace.name for trace in figure.data] == ["Input", "Kernel launch", "Device compute"]
    totals = [sum(trace.y[i] for trace in figure.data) for i in range(2)]
    assert totals == [6.0, 8.0]


def test_tune_section_shows_optuna_plots_and_the_winner_against_both_baselines(tmp_path, capsys):
    results = write_tune_results(tmp_path / "tune.jsonl")
    out = tmp_path / "t.html"
    code, _, err = run_report(capsys, "-o", str(out), "--no-check", "--tune", str(results))
    assert code == 0, err
    page = out.read_text()
    for plot in ("plot-tune-history", "plot-tune-importances", "plot-tune-surface"):
        assert f'id="{plot}"' in page
    text = visible_text(page)
    # Winner (6, 1, "0"): 99 and 101; current: 80 and 82; rules of thumb (4, 2, "1"): 95 and 93.
    assert re.search(r"winner\s+100\s+99 – 101 \(2 runs\)\s+—", text)
    assert re.search(r"current settings\s+81\s+80 – 82 \(2 runs\)\s+\+23\.5%", text)
    assert re.search(r"rules of thumb\s+94\s+93 – 95 \(2 runs\)\s+\+6\.4%", text)
    # The tune's own verdict (its summary line): what each parameter did, largest effect first.
    assert re.search(r"What mattered:\s+TF_NUM_INTRAOP_THREADS\s*;", text)
    assert re.search(r"TF_NUM_INTRAOP_THREADS\s+31\.0%\s+6\s+yes\s+KMP_BLOCKTIME\s+1\.2%\s+1\s+no", text)


def test_a_page_without_plots_carries_no_plotly_bundle(tmp_path, capsys):
    files = write_fleet(tmp_path)
    code, out, _ = run_report(capsys, "-o", "-", "--no-check", "--compare", *map(str, files[:2]))
    assert code == 0
    assert out.startswith("<!doctype html>") and "Plotly" not in out and len(out) < 100_000


@pytest.mark.parametrize(("args", "message"), [
    (["--no-check"], "nothing to report"),
    (["--no-check", "stray.json"], "unexpected argument 'stray.json'"),
    (["--no-check", "--profile", "{tmp}/notjson.txt"], "not JSON"),
    (["--no-check", "--profile", "{tmp}/object.json"], "must hold the JSON of `tfdoctor profile"),
    (["--no-check", "--profile", "{tmp}"], "is a directory, not a regular file"),
    (["--no-check", "--tune", "{tmp}/other.json"], "is not a tfdoctor tune results file"),
    (["--no-check", "--compare", "{tmp}/notjson.txt"], "no readable facts file"),
    (["--no-check", "--profile", "{tmp}/fifo"], "not a regular file"),
])
def test_bad_inputs_are_usage_errors(tmp_path, capsys, args, message):
    (tmp_path / "notjson.txt").write_text("hello")
    (tmp_path / "object.json").write_text(json.dumps({"steps": 3}))
    os.mkfifo(tmp_path / "fifo")  # opening it for reading would block forever
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}) + "\n" + json.dumps({"a": 1}) + "\n")
    out = tmp_path / "r.html"
    code, _, err = run_report(capsys, "-o", str(out), *(a.format(tmp=tmp_path) for a in args))
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_an_existing_page_is_not_overwritten_without_force(tmp_path, capsys):
    files = write_fleet(tmp_path)
    out = tmp_path / "r.html"
    out.write_text("mine")
    code, _, err = run_report(capsys, "-o", str(out), "--no-check", "--compare", *map(str, files))
    assert code == 2 and "exists; add --force" in err and out.read_text() == "mine"
    code, _, _ = run_report(capsys, "-o", str(out), "--force", "--no-check", "--compare", *map(str, files))
    assert code == 0 and out.read_text().startswith("<!doctype html>")


def test_check_and_the_hook_never_import_the_plotting_libraries():
    probe = ("import sys, atexit\n"
             "atexit.register(lambda: sys.stderr.write('LOADED:' + ','.join(sorted(m for m in ('plotly', 'optuna')"
             " if m in sys.modules)) + '\\n'))\n"
             "from tfdoctor.cli import main\nmain(sys.argv[1:])\n")
    for args in (["check", "--format", "json"], ["check", "--quiet", "--fail-on", "error"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=REPO, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode in (0, 1), done.stderr
        assert "LOADED:\n" in done.stderr, done.stderr


def test_compare_and_tune_write_their_section_alone_with_html(tmp_path, capsys):
    files = write_fleet(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["compare", *map(str, files), "--html", str(tmp_path / "fleet.html")])
    assert exited.value.code == 1  # the nodes differ: compare's own exit code is kept
    page = (tmp_path / "fleet.html").read_text()
    assert '<section id="report-fleet">' in page and page.count("<section ") == 1
    (tmp_path / "mine.html").write_text("mine")
    with pytest.raises(SystemExit) as exited:
        main(["compare", *map(str, files), "--html", str(tmp_path / "mine.html")])
    assert exited.value.code == 2 and (tmp_path / "mine.html").read_text() == "mine"
    assert "exists; add --force" in capsys.readouterr().err
