"""The knowledge tables: every packaged table loads, names its sources and its date."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tfdoctor import knowledge


@pytest.mark.parametrize("name", knowledge.available())
def test_every_table_has_sources_and_a_date(name: str) -> None:
    table = knowledge.table(name)
    assert table.sources and all(s.strip() for s in table.sources)
    assert datetime.date(2015, 1, 1) <= table.taken <= datetime.date.today()
    assert name in knowledge.available()
    assert table.title in table.cite()


def test_a_missing_table_is_a_knowledge_error() -> None:
    with pytest.raises(knowledge.KnowledgeError, match="no-such-table"):
        knowledge.table("no-such-table")


@pytest.mark.parametrize("name", knowledge.available())
def test_compiled_twin_is_the_toml_parsed(name: str) -> None:
    """The hook reads compiled/<name>.json, not the TOML (json.loads instead of tomllib): the twin must
    be exactly what the TOML compiles to. If this fails: python tools/regenerate.py"""
    compiled = Path(knowledge.COMPILED) / f"{name}.json"
    assert compiled.read_text(encoding="utf-8") == knowledge.compile_table(name), \
        f"{compiled} is stale: run python tools/regenerate.py (or python -m tfdoctor.knowledge)"
    import tomllib

    parsed = tomllib.loads((Path(knowledge.HERE) / f"{name}.toml").read_text(encoding="utf-8"))
    source = (Path(knowledge.HERE) / f"{name}.toml").read_bytes()
    compiled_document = knowledge._compiled(name, source)
    assert compiled_document == parsed  # dates and all, as tomllib gives them
    import json  # and keys in the TOML's order, which a check listing a table's entries shows

    assert json.dumps(compiled_document, default=repr) == json.dumps(parsed, default=repr)


def test_an_edited_toml_wins_over_its_stale_twin(tables_in) -> None:
    toml = tables_in / "openmp_runtimes.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("taken = ", "taken = 2030-01-02\n# was: ", 1),
                    encoding="utf-8")
    assert knowledge.table("openmp_runtimes").taken == datetime.date(2030, 1, 2)


@pytest.mark.parametrize("damage", ["not json", '{"crc32": 1}', '{"$toml": ["nonsense", "x"]}',
                                    '{"$toml": ["date", 20300102]}', '{"$toml": ["date"]}', None])
def test_a_damaged_or_missing_twin_falls_back_to_the_toml(tables_in, damage: str | None) -> None:
    compiled = tables_in / "compiled" / "openmp_runtimes.json"
    if damage is None:
        compiled.unlink()
    else:
        compiled.write_text(damage, encoding="utf-8")
    expected = knowledge._tomllib().loads((tables_in / "openmp_runtimes.toml").read_text(encoding="utf-8"))
    assert knowledge.table("openmp_runtimes").data == expected
    assert knowledge.table_rows("openmp_runtimes") == tuple(expected["rows"])  # the twin's tags only checked


# -- table_rows: the rows the pre-job hook reads, without parsing the table's date (no datetime import) --

@pytest.mark.parametrize("name", knowledge.available())
def test_table_rows_are_the_tables_rows(name: str) -> None:
    assert knowledge.table_rows(name) == knowledge.table(name).rows
    assert repr(knowledge.table_rows(name)) == repr(knowledge.table(name).rows)


def _recompiled(tables_in, name: str, edit) -> None:
    """Table `name` edited by `edit`, and its twin compiled from the edit (both CRCs match)."""
    toml = tables_in / f"{name}.toml"
    toml.write_text(edit(toml.read_text(encoding="utf-8")), encoding="utf-8")
    (tables_in / "compiled" / f"{name}.json").write_text(knowledge.compile_table(name), encoding="utf-8")


def test_a_date_in_a_row_is_a_date_in_table_rows_too(tables_in) -> None:
    _recompiled(tables_in, "openmp_runtimes",
                lambda text: text.replace("[[rows]]\n", "[[rows]]\nseen = 2030-01-02\n", 1))
    assert '"$toml"' in (tables_in / "compiled" / "openmp_runtimes.json").read_text(encoding="utf-8")
    rows = knowledge.table_rows("openmp_runtimes")
    assert rows[0]["seen"] == datetime.date(2030, 1, 2)
    assert rows == knowledge.table("openmp_runtimes").rows


@pytest.mark.parametrize("taken", ["12:30:00", "2030-01-02T12:30:00", '"2030-01-02"'])
def test_table_rows_refuse_a_taken_that_is_not_a_date_as_table_does(tables_in, taken: str) -> None:
    _recompiled(tables_in, "openmp_runtimes", lambda text: text.replace("taken = ", f"taken = {taken}\n# was: ", 1))
    for read in (knowledge.table_rows, knowledge.table):
        with pytest.raises(knowledge.KnowledgeError, match="taken must be a date"):
            read("openmp_runtimes")


def test_a_toml_table_that_looks_like_a_twins_tag_is_no_date(tables_in) -> None:
    toml = tables_in / "openmp_runtimes.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        "taken = ", 'taken = {"$toml" = ["date", "2030-01-02"]}\n# was: ', 1), encoding="utf-8")
    for read in (knowledge.table_rows, knowledge.table):  # the twin is stale: the TOML is read
        with pytest.raises(knowledge.KnowledgeError, match="taken must be a date"):
            read("openmp_runtimes")


def test_rewriting_the_twins_refuses_a_link_out_of_the_folder_and_never_writes_through_it(tmp_path: Path) -> None:
    """`python -m tfdoctor.knowledge` writes each twin through the one writer: a link planted at
    compiled/<name>.json that points out of its folder is refused, named, and neither it nor the file it points
    to is changed (open(…, "w") wrote through it; issue 40 made the writer refuse such links rather than
    replace them)."""
    import shutil
    import subprocess
    import sys

    package = Path(knowledge.__file__).resolve().parent.parent
    shutil.copytree(package, tmp_path / "tfdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    name = knowledge.available()[0]
    twin = tmp_path / "tfdoctor" / "knowledge" / "compiled" / f"{name}.json"
    outside = tmp_path / "outside.txt"
    outside.write_text("not a twin\n")
    twin.unlink()
    twin.symlink_to(outside)
    done = subprocess.run([sys.executable, "-m", "tfdoctor.knowledge"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1, done.stderr
    assert f"compiled/{name}.json is a link to {outside}" in done.stderr and "Traceback" not in done.stderr
    assert outside.read_text() == "not a twin\n"
    assert twin.is_symlink() and twin.resolve() == outside
