"""`tfdoctor report` opened in headless Chromium, built from real inputs: a check of this machine, a real CPU
profile, a real short tune and two recorded facts files that differ. The page must load without console
errors, hold every section, draw every plot at a non-zero size, and carry no planted secret.

Chromium comes from Debian's `chromium` package (the README's test command installs it where apt is
available) and is driven with Playwright; where neither can be had the tests skip and say why."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from typing import Any

import pytest
from conftest import REPO
from support.chromium import CHROMIUM_ARGS, chromium
from support.command_line import run_cli
from support.report_inputs import SECRET_GH_TOKEN

pytestmark = [pytest.mark.browser, pytest.mark.tensorflow]

METRIC_SCRIPT = """
import os
intra = int(os.environ.get("TF_NUM_INTRAOP_THREADS", "1"))
inter = int(os.environ.get("TF_NUM_INTEROP_THREADS", "1"))
print(f"images/sec: {100 - 5 * (intra - 2) ** 2 - 3 * (inter - 1)}")
"""


def tfdoctor(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), env=env, timeout=timeout)


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> dict[str, Any]:
    executable = chromium()
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is in the test extra: pip install -e '.[test]'")
    pytest.importorskip("tensorflow", reason="the real profile needs tensorflow-cpu (test extra)")
    work = tmp_path_factory.mktemp("report")
    profile = tfdoctor("profile", "--workload", "matmul", "--format", "json", "--html", str(work / "profile.html"))
    assert profile.returncode in (0, 1), profile.stderr
    alone = (work / "profile.html").read_text()  # `profile --html`: the profile section alone
    assert '<section id="report-profile">' in alone and alone.count("<section ") == 1
    (work / "profile.json").write_text(profile.stdout)
    (work / "metric.py").write_text(METRIC_SCRIPT)
    tune = tfdoctor("tune", "--budget", "12", "--repeats", "2", "--leaders", "2", "--seed", "5", "--results",
                    str(work / "tune.jsonl"), "--metric", r"images/sec: ([0-9.]+)", "--", sys.executable,
                    str(work / "metric.py"))
    assert tune.returncode == 0, tune.stderr
    collected = tfdoctor("collect", "-o", str(work / "this-node.json"))
    assert collected.returncode == 0, collected.stderr
    recorded = REPO / "tests" / "snapshots" / "cpu-only-vm-tensorflow-2.21.json"
    # The planted secret: a token pasted into a thread variable, which THR001 quotes.
    built = tfdoctor("report", "-o", str(work / "report.html"), "--profile", str(work / "profile.json"), "--tune",
                     str(work / "tune.jsonl"), "--compare", str(work / "this-node.json"), str(recorded),
                     env={"OMP_NUM_THREADS": SECRET_GH_TOKEN})
    assert built.returncode == 0, built.stderr
    page_file = work / "report.html"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            console: list[str] = []
            page.on("console",
                    lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.goto(page_file.as_uri(), wait_until="load")
            page.wait_for_function("document.querySelectorAll('.plot .plotly-graph-div').length === "
                                   "document.querySelectorAll('.plot .js-plotly-plot').length", timeout=30_000)
            plots = page.evaluate("""Array.from(document.querySelectorAll('.plot .plotly-graph-div')).map(e => ({
                id: e.id, traces: (e.data || []).length, width: e.getBoundingClientRect().width,
                height: e.getBoundingClientRect().height, svg: e.querySelectorAll('svg.main-svg').length}))""")
            sections = page.evaluate("Array.from(document.querySelectorAll('main > section')).map(s => s.id)")
            screenshot = work / "report.png"
            page.screenshot(path=str(screenshot), full_page=True)
            content = page.content()
        finally:
            browser.close()
    return {"console": console, "plots": plots, "sections": sections, "screenshot": screenshot,
            "content": content, "file": page_file.read_text(), "profile": json.loads(profile.stdout)}


def test_page_loads_without_console_errors(report_page):
    assert report_page["console"] == []


def test_every_section_with_input_is_present(report_page):
    assert report_page["sections"] == ["report-next", "report-check", "report-profile", "report-tune", "report-fleet"]


def test_every_plot_renders_with_data_and_a_size(report_page):
    plots = {p["id"]: p for p in report_page["plots"]}
    expected = {"plot-tune-history", "plot-tune-importances", "plot-tune-surface"}
    if isinstance(report_page["profile"]["profile"].get("breakdown"), dict):
        expected.add("plot-breakdown-0")
    assert expected <= set(plots)
    for plot in plots.values():
        assert plot["traces"] >= 1 and plot["svg"] >= 1, plot
        assert plot["width"] > 300 and plot["height"] > 200, plot


def test_screenshot_is_a_full_page_png(report_page):
    data = report_page["screenshot"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 1280 and height > 1500 and len(data) > 50_000
    if os.environ.get("TFDOCTOR_UPDATE_DOCS") == "1":  # how docs/report.png is made
        shutil.copyfile(report_page["screenshot"], REPO / "docs" / "report.png")


def test_planted_secret_is_not_in_the_page(report_page):
    assert SECRET_GH_TOKEN not in report_page["file"] and SECRET_GH_TOKEN not in report_page["content"]
    assert "THR001" in report_page["content"]  # the finding that quoted it is shown, redacted
