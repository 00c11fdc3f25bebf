"""What a lint rule is: a code, a kebab-case name, a severity and a documented function of a module.

A rule is the static twin of a check: `@lint_rule("SRC101", "conv-channels-first", Severity.WARNING)`
marks `f(module: SourceModule) -> Iterable[Hit]`; its docstring has the same five sections and is what
`tfdoctor explain SRC101` prints and what SARIF carries as the rule's help. Rules are found through the
entry-point group `tfdoctor.lint_rules`, built-ins exactly like plugins.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tfdoctor.model import Applicability, Severity
from tfdoctor.registry import LINT_RULE_GROUP, _entry_points, _load, doc_of, doc_summary, validate_identity

_RULE_ATTR = "__tfdoctor_lint_rule__"
RUNNER_CODES = frozenset({"SRC001", "SRC002"})  # reported by the runner, not by a rule function


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (1-based lines, 1-based character columns) by `text`."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "text": self.text}


@dataclass(frozen=True)
class SourceFix:
    """A fix as data: an imperative title and, where a mechanical change exists, the edits that make it.

    Without edits the fix is advice for a person (applicability MANUAL).
    """

    title: str
    edits: tuple[Edit, ...] = ()
    applicability: Applicability = Applicability.MANUAL

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "applicability": self.applicability.value,
                "edits": [e.to_json() for e in self.edits]}


@dataclass(frozen=True)
class Hit:
    """What a rule yields: the node it is about and what it saw. The runner adds file and position."""

    node: ast.AST
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: SourceFix | None = None
    severity: Severity | None = None
    # Per kind of evidence the rule declares (tfdoctor/lint/evidence.py), what the rule saw of it...
    grounds: Mapping[str, str] = field(default_factory=dict)
    # ... and, for a kind it could not see, why: such a hit is kept only at info severity.
    unproven: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LintFinding:
    """One lint finding: where, which rule, the message, its evidence and its fix."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    severity: Severity
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: SourceFix | None = None
    # Notebooks: line/end_line count within cell `cell` (1-based); raw_line is the .ipynb file's line.
    cell: int | None = None
    raw_line: int = 0
    grounds: Mapping[str, str] = field(default_factory=dict)  # kind of evidence -> what was seen, or why not

    @property
    def location(self) -> str:
        """`path:line:col`, or `path:cell N:line:col` in a notebook (as ruff writes it)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def to_json(self) -> dict[str, Any]:
        found = {
            "path": self.path, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column,
            "code": self.code, "name": self.name, "severity": self.severity.label,
            "message": self.message, "evidence": dict(self.evidence),
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.grounds:
            found["grounds"] = dict(self.grounds)
        if self.cell is not None:
            found["cell"] = self.cell
        return found


RuleFunc = Callable[..., Iterable[Hit]]
# What a rule needs to see in a file's bytes before it can fire (issue 39, item 7): every clause must hold,
# and a clause holds when any of its byte strings (or linear byte patterns) occurs in the file.
Clause = tuple[bytes | re.Pattern[bytes], ...]
Triggers = tuple[Clause, ...]


def _clauses(triggers: Sequence[bytes | re.Pattern[bytes] | Sequence[bytes | re.Pattern[bytes]]] | None
             ) -> Triggers | None:
    """`(b"GradientTape", (b"apply_gradients", b"assign_sub"))` → one clause per item: a byte string alone is
    a clause of one; a tuple is a clause of alternatives."""
    if triggers is None:
        return None
    found = tuple((t,) if isinstance(t, (bytes, re.Pattern)) else tuple(t) for t in triggers)
    if not found or not all(found):
        raise ValueError("lint rule triggers: give at least one clause, each with at least one byte string")
    for clause in found:
        for text in clause:
            # A notebook is searched as its JSON: a quote, a backslash or a non-ASCII byte is escaped there.
            if isinstance(text, bytes) and (not text or not text.isascii() or b'"' in text or b"\\" in text):
                raise ValueError(f"lint rule trigger {text!r}: give ASCII without quotes or backslashes")
    return found


@dataclass(frozen=True)
class LintRuleSpec:
    """A registered lint rule: its code, name and severity, its function and where it came from."""

    code: str
    name: str
    severity: Severity
    func: RuleFunc
    origin: str = ""
    preview: bool = False  # opt-in (`--preview`): not yet precise enough on real code to be on by default
    triggers: Triggers | None = None  # None: the rule may fire on any file (no prefilter while it is selected)
    evidence: tuple[str, ...] = ()  # kinds of evidence (tfdoctor/lint/evidence.py) every finding must show
    # On by default for the findings that show their evidence, while its info findings that cannot (the
    # `unproven` tier) are under the bar: those are reported only when the rule is asked for by its exact
    # code or with --preview (tfdoctor/knowledge/lint_rule_precision.toml, `shown`/`unproven`).
    quiet_unproven: bool = False

    @property
    def doc(self) -> str:
        return doc_of(self.func)

    @property
    def summary(self) -> str:
        return doc_summary(self.doc)


def lint_rule(code: str, name: str, severity: Severity, preview: bool = False,
              triggers: Sequence[bytes | re.Pattern[bytes] | Sequence[bytes | re.Pattern[bytes]]] | None = None,
              evidence: Sequence[str] = (),
              ) -> Callable[[RuleFunc], RuleFunc]:
    """Mark `f(module) -> Iterable[Hit]` as a lint rule. Its docstring is its documentation.

    `preview=True`: the rule runs only with `--preview` (or when its exact code is selected), like ruff's
    preview rules, until the corpus benchmark shows it right often enough to be on by default.

    `triggers`: the byte strings without which the rule cannot fire, as clauses that must all hold (a
    tuple in the list: any one of its alternatives). When no selected rule's triggers hold in a file found
    by walking a directory, lint neither decodes nor parses it (tfdoctor/lint/prefilter.py). Derive them
    from what the rule matches: a name the rule resolves (`tf.GradientTape`) is written in the file under
    any import style, so its last part is a trigger; a missing trigger loses true findings. A rule that
    gives none (plugins, by default) turns the prefilter off while it is selected.

    `evidence`: the kinds of evidence (keys of `tfdoctor.lint.evidence.KINDS`) the rule needs to fire. Each
    hit names what it saw of each in `Hit.grounds`; the runner drops a hit that lacks one, unless it is at
    info severity and says why in `Hit.unproven` (issue 39, item 1).
    """
    from tfdoctor.lint.evidence import KINDS

    validate_identity("lint rule", code, name)
    clauses = _clauses(triggers)
    needed = tuple(evidence)
    unknown = [kind for kind in needed if kind not in KINDS]
    if unknown:
        raise ValueError(f"lint rule {code}: unknown kinds of evidence {unknown} (known: {sorted(KINDS)})")

    def mark(func: RuleFunc) -> RuleFunc:
        setattr(func, _RULE_ATTR, LintRuleSpec(code, name, severity, func, preview=preview, triggers=clauses,
                                               evidence=needed))
        return func

    return mark


@dataclass
class LintRegistry:
    """The lint rules found, and the plugins that failed to load."""

    rules: list[LintRuleSpec]
    errors: list[str]

    def by_code(self, code: str) -> LintRuleSpec | None:
        code = code.upper()
        return next((r for r in self.rules if r.code == code), None)


def load_lint_rules(modules: Iterable[object] | None = None) -> LintRegistry:
    """Discover lint rules from the entry-point group (or from `modules`, for tests)."""
    errors: list[str] = []
    sources: list[tuple[str, object]] = []
    if modules is not None:
        sources = [(getattr(m, "__name__", repr(m)), m) for m in modules]
    else:
        for name, value in _entry_points(LINT_RULE_GROUP):
            try:
                sources.append((f"{name} = {value}", _load(value)))
            except Exception as exc:  # a broken plugin must not take tfdoctor down
                errors.append(f"{LINT_RULE_GROUP} entry point '{name} = {value}' failed to load: {exc}")
    by_code: dict[str, LintRuleSpec] = {}
    for origin, obj in sources:
        candidates = vars(obj).values() if hasattr(obj, "__dict__") and not callable(obj) else [obj]
        for value in candidates:
            spec = getattr(value, _RULE_ATTR, None)
            if spec is None or spec.func is not value:
                continue
            if spec.code in by_code:
                errors.append(f"lint rule code {spec.code} is registered twice ({by_code[spec.code].origin} "
                              f"and {origin}); the second is ignored")
                continue
            preview = spec.preview or spec.code in below_the_bar()
            by_code[spec.code] = LintRuleSpec(spec.code, spec.name, spec.severity, spec.func, origin, preview,
                                              spec.triggers, spec.evidence, spec.code in quiet_unproven())
    return LintRegistry(sorted(by_code.values(), key=lambda s: s.code), errors)


@dataclass(frozen=True)
class DefaultVerdict:
    """What the precision table decides for one rule: on by default or preview, and whether its info
    findings without their evidence (the `unproven` tier) are reported by default; with the figure that
    decided it."""

    on: bool
    unproven_on: bool
    precision: float
    tier: str  # "rule": the rule's own figure; "shown": its findings that show their evidence


def default_verdicts(rows: Iterable[Mapping[str, Any]], bar: float) -> dict[str, DefaultVerdict]:
    """Issue 39, item 3, as a pure function of the table's rows: a rule whose held-out strict precision is
    under `bar` is a preview rule. A rule measured by tier (after it learnt to say which evidence it saw)
    is judged by its `shown` figure, and its `unproven` info findings are on by default only when their own
    figure clears the bar too; a rule measured as a whole, by its figure or a recorded `kept_on` reason. A recorded
    `held_back` reason keeps a rule at or over the bar in preview (a figure that reached it only on the sets whose
    false findings shaped the fix waits for sets judged after it)."""
    verdicts: dict[str, DefaultVerdict] = {}
    for row in rows:
        shown = row.get("shown")
        held_back = bool(row.get("held_back"))
        if shown is not None:
            figure = float(shown["precision"])
            unproven = row.get("unproven")
            on = figure >= bar and not held_back
            verdicts[row["code"]] = DefaultVerdict(
                on, on and unproven is not None and float(unproven["precision"]) >= bar, figure, "shown")
        else:
            figure = float(row["precision"])
            on = (figure >= bar or bool(row.get("kept_on"))) and not held_back
            verdicts[row["code"]] = DefaultVerdict(on, on, figure, "rule")
    return verdicts


def _verdicts() -> dict[str, DefaultVerdict]:
    from tfdoctor.knowledge import table

    measured = table("lint_rule_precision")
    return default_verdicts(measured.rows, float(measured.data["meta"]["bar"]))


def below_the_bar() -> dict[str, float]:
    """Rules whose held-out precision is under the table's bar and that no `kept_on` keeps on, or that a
    `held_back` reason keeps in preview: code → the figure that decided it. They are preview rules whatever their
    decorator says (issue 39, item 3: tfdoctor/knowledge/lint_rule_precision.toml decides the default rule set)."""
    return {code: v.precision for code, v in _verdicts().items() if not v.on}


def quiet_unproven() -> frozenset[str]:
    """Rules on by default whose info findings without their evidence are not, by the table."""
    return frozenset(code for code, v in _verdicts().items() if v.on and not v.unproven_on)


def select_lint_rules(rules: Iterable[LintRuleSpec], select: Iterable[str] = (), ignore: Iterable[str] = (),
                      preview: bool = False) -> list[LintRuleSpec]:
    """Codes or prefixes as for checks (longest prefix wins); preview rules only with `preview` or their
    exact code in `select` (a prefix such as `SRC1` does not switch a preview rule on), and the same for the
    `unproven` info findings of a rule whose table keeps them off by default."""
    from tfdoctor.registry import select_checks

    exact = {c.upper() for c in select}
    chosen = select_checks(rules, select, ignore)  # type: ignore[arg-type]
    # Asked for by its exact code or with --preview: every tier of the rule is reported.
    return [replace(r, quiet_unproven=False) if r.quiet_unproven and (preview or r.code in exact) else r
            for r in chosen if preview or not r.preview or r.code in exact]  # type: ignore[attr-defined]
