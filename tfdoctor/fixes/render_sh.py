"""POSIX sh rendering of a FixPlan (names and quoting: tfdoctor.fixes.quoting).

Every value is single-quoted (nothing inside single quotes is ever expanded), so no value can run as
code. A path prepend is guarded by a `case` on the current value, so sourcing twice adds nothing
the second time, and the user's existing value is only ever expanded inside double quotes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfdoctor.fixes.quoting import comment_text, env_name, sh_quote, sh_word
from tfdoctor.model import EnvOp

if TYPE_CHECKING:  # the report imports sh_quote on the hook's path; the plan's dataclasses are not needed there
    from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source


def _comment(sources: tuple[Source, ...]) -> list[str]:
    return [f"# {s.code} {s.name}: {comment_text(s.message)}" for s in sources]


def _change_lines(planned: PlannedChange) -> list[str]:
    change, name = planned.change, env_name(planned.change.name)
    if change.op is EnvOp.SET:
        return [f"{name}={sh_quote(change.value or '')}", f"export {name}"]
    if change.op is EnvOp.UNSET:
        return [f"unset {name}"]
    entry = sh_quote(change.value or "")
    return [
        f'case ":${{{name}-}}:" in',
        f"  *:{entry}:*) ;;",
        f'  *) {name}={entry}"${{{name}:+:${name}}}"; export {name} ;;',
        "esac",
    ]


def source_command(path: str, shell: str = "sh") -> str:
    """How to source the script written at `path`: `. ./env2.sh` (sh's `.` searches PATH for a name with
    no slash), `source env.fish`."""
    if shell == "fish":
        from tfdoctor.fixes.quoting import fish_quote

        return f"source {path if path and all(c.isalnum() or c in '._/-' for c in path) else fish_quote(path)}"
    return f". {sh_word(path if '/' in path else './' + path)}"


def render_sh(plan: FixPlan, header: str, target: str | None = None) -> str:
    """The script; `target` is the file it is written to (named in how to source it), None when printed."""
    how = comment_text(source_command(target)) if target else ". ./env.sh"
    lines = [
        # Every value is single-quoted on purpose, to be taken literally: shellcheck's warnings that
        # "$(...) won't expand" or "quotes will be literal" describe exactly the intended behaviour.
        "# shellcheck shell=sh disable=SC2016,SC2089,SC2090",
        *(f"# {comment_text(line)}" for line in header.splitlines()),
        f"# Source it ({how}); sourcing it again changes nothing.",
    ]
    for planned in plan.env:
        lines.append("")
        lines.extend(_comment(planned.sources))
        lines.extend(_change_lines(planned))
    if not plan.env:
        lines.append("# Nothing to change: no finding has a safe environment fix.")
    return "\n".join(lines) + "\n"
