"""`tfdoctor report`: one self-contained HTML page (styles, scripts and plots inline; no network).

Each input becomes a section (check, profile, tune, fleet) built by its own module from the data the
other commands already produce; `page.py` assembles them. Every string that reaches the page goes
through `page.text()` (the redactor, then HTML escaping), so nothing a secret sits in reaches the file.
Plotting is plotly's (and optuna's own visualizations for a tune), imported only here: `check` and
the pre-job hook never load them.
"""
