"""Which files lint need not parse (issue 39, item 7): a byte-level prefilter.

Each rule declares the byte strings without which it cannot fire (`@lint_rule(..., triggers=...)`). A
file found by walking a directory is decoded and parsed only when it names TensorFlow, Keras or Horovod
(no rule runs on other files: tfdoctor/lint/source.py) and the triggers of at least one selected rule
occur in its bytes; otherwise nothing it holds can become a finding, and only its bytes were read.

What that costs, on purpose: such a file's syntax error (SRC001) or undecodable text (SRC002) is not
reported; a file named on the command line is always parsed, so pre-commit, which names files, still
reports them; a file that cannot be read at all is still SRC002. A selected rule without triggers (a
plugin's, unless it declares them) turns the prefilter off, as does a selection of only SRC001/SRC002.

A walked file that is parsed is then linted by the rules whose triggers occur in it, not by every selected
rule: by the same contract the others cannot fire there, so their analyses need not run. (On a repository of
training scripts this saves under 1 % of lint's instructions, as the analyses a pipeline rule ran there are
the ones the training-step rule needs itself: benchmarks/lint_instructions.py, docs/lint.md, Speed.)

The search is over the raw bytes, so it holds for UTF-8 and for the ASCII-compatible encodings a PEP 263
cookie can declare. A notebook is searched as its code cells, as written (IPython's transforms only blank
lines out): its JSON is decoded once, and the cells are handed on to the parse. Its outputs (images in
base64, megabytes) and Markdown are not searched, which a dozen searches of the whole file cost more than
decoding it (issue 39, item 7). A notebook that does not decode as one is searched as bytes, as any file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tfdoctor.lint.notebook import Notebook, NotebookError, read_notebook
from tfdoctor.lint.rule import RUNNER_CODES, LintRuleSpec, Triggers
from tfdoctor.lint.source import FRAMEWORK_MARKERS

_MARKERS = tuple(m.encode("ascii") for m in FRAMEWORK_MARKERS)
_NONE: frozenset[Triggers] = frozenset()


@dataclass(frozen=True)
class Prefilter:
    """The triggers of the selected rules, one entry per distinct set."""

    rules: tuple[Triggers, ...]

    def firing(self, data: bytes) -> frozenset[Triggers]:
        """The triggers, among the selected rules', that hold in a file with these bytes (empty: no selected
        rule can fire on it); the rules declaring others need not run on it."""
        if not any(marker in data for marker in _MARKERS):
            return _NONE
        return frozenset(triggers for triggers in self.rules
                         if all(any(_occurs(text, data) for text in clause) for clause in triggers))

    def may_fire(self, data: bytes) -> bool:
        """False when no selected rule can fire on a file with these bytes."""
        return bool(self.firing(data))

    def firing_notebook(self, data: bytes) -> tuple[frozenset[Triggers], Notebook | None]:
        """For a notebook's bytes: `firing` of its code cells; and the cells, read once here for the parse that
        follows (None: not a notebook lint can read, its bytes decided)."""
        if not any(marker in data for marker in _MARKERS):
            return _NONE, None  # nowhere in the file, so not in its code either
        try:
            notebook = read_notebook(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, NotebookError):
            return self.firing(data), None  # parsed, it is SRC002: decided as any file, by its bytes
        return self.firing(notebook.code.encode("utf-8", "surrogatepass")), notebook

    def may_fire_notebook(self, data: bytes) -> tuple[bool, Notebook | None]:
        """`firing_notebook`, as whether any selected rule can fire on the notebook's code cells."""
        fired, notebook = self.firing_notebook(data)
        return bool(fired), notebook

    def rules_for(self, rules: list[LintRuleSpec], fired: frozenset[Triggers]) -> list[LintRuleSpec]:
        """Those of `rules` that may fire on a file where `fired` hold (the runner's SRC001/SRC002 are not run
        on a module, so they are left out)."""
        return [spec for spec in rules if spec.triggers in fired]


def _occurs(text: bytes | re.Pattern[bytes], data: bytes) -> bool:
    return text in data if isinstance(text, bytes) else text.search(data) is not None


def prefilter_for(rules: Iterable[LintRuleSpec]) -> Prefilter | None:
    """The prefilter of a selection of rules, or None when it must parse every file."""
    checked = [r for r in rules if r.code not in RUNNER_CODES]
    if not checked or any(r.triggers is None for r in checked):
        return None
    return Prefilter(tuple(dict.fromkeys(r.triggers for r in checked if r.triggers is not None)))
