"""Report pages built from hostile input files, opened in headless Chromium (issue 24, class 3): markup in a
profile's step labels, in tune choice values (a results file for `report --tune`, a space file for
`tune --html`) and in a profile's op names must be shown as text. The browser must make no request beyond
the page itself (a `<span style="background:url(…)">` drawn as markup fetches), no plot may hold a link, and
the hostile text must be visible literally.

Chromium (tests/support/chromium.py) and Playwright as in tests/test_report_browser.py; no TensorFlow needed
(the inputs are files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from support.chromium import CHROMIUM_ARGS, chromium
from support.command_line import run_cli
from support.report_inputs import profile_document

from tfdoctor.report.html.tune_section import MIN_TRIALS_FOR_SHAPE
from tfdoctor.tune.results import ResultsLog, TrialRecord
from tfdoctor.tune.space import choice_param, int_param

pytestmark = [pytest.mark.browser]

FETCH = "http://127.0.0.1:9/hostile-fetch"
LINK = "https://example.invalid/hostile-link"
HOSTILE = [f'<a href="{LINK}">clickme</a>', f'<span style="background:url({FETCH})">styled</span>',
           f"<img src={FETCH}-img onerror=alert(1)>", "<b>bold</b>&amp;</script><script>alert(2)</script>"]


def tfdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), cwd=cwd, env={"PYTHONPATH": str(REPO)}, timeout=300)


def _hostile_profile(path: Path) -> Path:
    document = profile_document(tuple({"input": 10.0 + i, "host_compute": 50.0} for i in range(len(HOSTILE))))
    for step, label in zip(document["profile"]["breakdown"]["per_step"], HOSTILE, strict=True):
        step["step"] = label
    document["profile"]["top_ops"][0]["op"] = HOSTILE[0]
    path.write_text(json.dumps(document))
    return path


# Enough trials for every tune plot (importances and the surface need MIN_TRIALS_FOR_SHAPE): the hostile
# values must reach all of them.
TRIALS = MIN_TRIALS_FOR_SHAPE + 2


def _hostile_results(path: Path) -> Path:
    space = [int_param("TF_NUM_INTRAOP_THREADS", 1, 8), choice_param("KMP_AFFINITY", tuple(HOSTILE))]
    log = ResultsLog.create(path, {"space": [p.to_json() for p in space], "seeds": {}, "maximize": True,
                                   "budget": TRIALS, "time_limit": None, "seed": 1,
                                   "objective": {"command": ["python", "train.py"]}})
    for number in range(TRIALS):
        params = {"TF_NUM_INTRAOP_THREADS": number % 8 + 1, "KMP_AFFINITY": HOSTILE[number % len(HOSTILE)]}
        log.append(TrialRecord(number, "rule" if number == 0 else "search", params, "ok", 50.0 + number * 3, 1.0))
    for offset, role in enumerate(("leader", "rule")):
        params = {"TF_NUM_INTRAOP_THREADS": 8, "KMP_AFFINITY": HOSTILE[3]}
        log.append(TrialRecord(TRIALS + offset, "confirm", params, "ok", 72.0, 1.0, role=role))
    return path


def _open(page_file: Path) -> dict[str, Any]:
    executable = chromium()
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is in the test extra: pip install -e '.[test]'")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requests: list[str] = []
            dialogs: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(page_file.as_uri(), wait_until="load")
            page.wait_for_function("document.querySelectorAll('.plot .plotly-graph-div').length === "
                                   "document.querySelectorAll('.plot .js-plotly-plot').length", timeout=30_000)
            for div in page.query_selector_all(".plot .plotly-graph-div"):  # hover every point: hover text too
                box = div.bounding_box()
                if box:
                    for fraction in (0.2, 0.35, 0.5, 0.65, 0.8):
                        page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.6)
                        page.wait_for_timeout(30)
            page.wait_for_timeout(300)
            found = page.evaluate("""() => ({
                plot_links: document.querySelectorAll('.plot a, .plot svg a').length,
                page_links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
                images: document.querySelectorAll('img').length,
                plot_text: Array.from(document.querySelectorAll('.plot svg text')).map(t => t.textContent).join('\\n'),
                styled: Array.from(document.querySelectorAll('.plot svg tspan[style]'))
                             .filter(t => t.getAttribute('style').includes('url(')).length,
                body: document.body.innerText})""")
        finally:
            browser.close()
    others = [url for url in requests if not url.startswith(("file:", "data:", "blob:"))]
    return {**found, "requests": others, "dialogs": dialogs}


def _assert_text_only(seen: dict[str, Any]) -> None:
    assert seen["requests"] == [] and seen["dialogs"] == []
    assert seen["plot_links"] == 0 and seen["styled"] == 0 and seen["images"] == 0
    assert LINK not in seen["page_links"]
    assert '<a href="https://example.invalid/hostile-link">clickme</a>' in seen["plot_text"]  # shown as text


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    chromium()
    pytest.importorskip("plotly", reason="the report's plots need plotly (test extra)")
    return tmp_path_factory.mktemp("hostile")


def test_report_profile_shows_step_labels_as_text(work):
    done = tfdoctor("report", "--profile", str(_hostile_profile(work / "p.json")), "-o", str(work / "p.html"),
                    cwd=work)
    assert done.returncode == 0, done.stderr
    seen = _open(work / "p.html")
    _assert_text_only(seen)
    assert HOSTILE[0] in seen["body"]  # the op name, in the top-ops table


def test_report_tune_shows_choice_values_as_text(work):
    pytest.importorskip("optuna", reason="the tune plots are optuna's (test extra)")
    done = tfdoctor("report", "--tune", str(_hostile_results(work / "t.jsonl")), "-o", str(work / "t.html"),
                    cwd=work)
    assert done.returncode == 0, done.stderr
    _assert_text_only(_open(work / "t.html"))


def test_tune_html_shows_choice_values_as_text(work):
    pytest.importorskip("optuna", reason="the tune plots are optuna's (test extra)")
    space = work / "space.json"
    space.write_text(json.dumps({"parameters": {
        "KMP_AFFINITY": {"values": HOSTILE}, "TF_NUM_INTRAOP_THREADS": {"low": 1, "high": 4},
        **{name: {"drop": True} for name in ("TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS", "KMP_BLOCKTIME",
                                             "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")}}}))
    metric = work / "metric.py"
    metric.write_text("import os\nprint('v:', len(os.environ.get('KMP_AFFINITY', '')) + "
                      "int(os.environ.get('TF_NUM_INTRAOP_THREADS', '1')))\n")
    done = tfdoctor("tune", "--space", str(space), "--budget", str(TRIALS), "--repeats", "1", "--leaders", "2",
                    "--seed", "3", "--results", str(work / "tune.jsonl"), "--html", str(work / "tune.html"), "--metric",
                    r"v: ([0-9]+)", "--", sys.executable, str(metric), cwd=work)
    assert done.returncode == 0, done.stderr
    _assert_text_only(_open(work / "tune.html"))
