"""SRC001, SRC002: files that cannot be linted. The runner reports them; these carry code and docs."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.lint.rule import Hit, lint_rule
from tfdoctor.lint.source import SourceModule
from tfdoctor.model import Severity


@lint_rule("SRC001", "syntax-error", Severity.ERROR)
def syntax_error(module: SourceModule) -> Iterator[Hit]:
    """The file is not valid Python for this interpreter.

    What it does:
        Reports a file that `ast.parse` rejects, at the position of the error, instead of linting it.

    Why is this bad?
        Nothing else can be checked in the file, and the script will not run either. The grammar is
        the one of the Python running tfdoctor: a script for a newer Python may fail here only.

    Example:
        def train_step(x, y)
            ...

    Fix:
        Correct the syntax (or run tfdoctor with the Python the script targets).

    Fix safety:
        Manual.
    """
    return iter(())


@lint_rule("SRC002", "unreadable-file", Severity.ERROR)
def unreadable_file(module: SourceModule) -> Iterator[Hit]:
    """The file cannot be read or decoded.

    What it does:
        Reports a file that cannot be opened (permissions, a broken link) or decoded: not UTF-8 and
        no PEP 263 coding cookie saying what it is, or a cookie naming an unknown encoding.

    Why is this bad?
        It cannot be linted; if Python itself cannot decode it, it will not run either.

    Example:
        x = "caf\\xe9"   # saved as latin-1, without "# -*- coding: latin-1 -*-"

    Fix:
        Fix the permissions, save the file as UTF-8, or declare its encoding on the first or second
        line: `# -*- coding: latin-1 -*-`.

    Fix safety:
        Manual.
    """
    return iter(())
