"""`tfdoctor lint`: static analysis (ast only, nothing imported or run) of TensorFlow training scripts.

source.py parses a file into a SourceModule (imports resolved by names.py); rules (rules/*.py, family
SRC, registered under the `tfdoctor.lint_rules` entry-point group) yield Hits; runner.py turns them into
LintFindings with positions, applying `# tfdoctor: noqa`; render_*.py write text, JSON and SARIF.
"""
