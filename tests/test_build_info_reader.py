"""build_info.py read without `ast` (pyenv_snapshot._generated_assignments): on every file TensorFlow's
generator writes it gives exactly what the ast path gives; on any other text it refuses (None) and
read_build_info parses with ast, so its answer never changes. Linear time on hostile text."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.build_info_samples import GENERATED

from tfdoctor.facts.probes import pyenv_snapshot
from tfdoctor.facts.probes.pyenv_snapshot import _generated_assignments, read_build_info

# The real file of a released wheel (tests/data/README.md), whether or not a TensorFlow is installed here.
RECORDED_BUILD_INFO = REPO / "tests" / "data" / "build_info" / "tensorflow_cpu-2.21.0.py.txt"


def _installed_build_info() -> list[Path]:
    """The installed TensorFlow's own build_info.py, found without importing TensorFlow."""
    spec = importlib.util.find_spec("tensorflow")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return [path for path in (Path(p) / "python" / "platform" / "build_info.py" for p in locations) if path.is_file()]


def _by_ast(text: str):
    """What read_build_info's ast path makes of `text`: the assignments, or None where Python refuses it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "invalid decimal literal" and the like
        try:
            return pyenv_snapshot._literal_assignments(ast.parse(text))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def _agrees(text: str) -> None:
    fast = _generated_assignments(text)
    if fast is not None:
        expected = _by_ast(text)
        assert expected is not None, f"read a text Python refuses: {text!r}"
        assert (fast, repr(fast)) == (expected, repr(expected))  # repr: True is not 1, (1,) is not [1]


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_files_are_read_without_ast_as_ast_reads_them(name):
    text = GENERATED[name]
    fast = _generated_assignments(text)
    assert fast is not None, "a file the generator writes must take the fast path"
    assert repr(fast) == repr(_by_ast(text))


def test_the_installed_tensorflows_build_info():
    """The real file of tensorflow-cpu 2.21.0, and of the TensorFlow installed here if there is one."""
    for path in (RECORDED_BUILD_INFO, *_installed_build_info()):
        text = path.read_text()
        assert _generated_assignments(text) is not None
        assert repr(_generated_assignments(text)) == repr(_by_ast(text))


def test_read_build_info_values_are_unchanged(tmp_path):
    """The values read_build_info returns, fast path or not (the test_probes_pyenv_snapshot cases, read here
    with their path named)."""
    cpu = tmp_path / "cpu.py"
    cpu.write_text(GENERATED["2.21-cpu"])
    assert read_build_info(str(cpu)) == {"is_cuda_build": False, "is_rocm_build": False, "is_tensorrt_build": False}
    windows = tmp_path / "windows.py"
    windows.write_bytes(GENERATED["2.3-windows-cuda"].encode())
    assert read_build_info(str(windows))["msvcp_dll_names"] == "msvcp140.dll,msvcp140_1.dll"
    old = tmp_path / "old.py"
    old.write_text(GENERATED["1.x-constants"])
    assert read_build_info(str(old)) == {
        "is_cuda_build": True, "cuda_version_number": "10.0", "cudnn_version_number": "7",
        "msvcp_dll_name": "msvcp140.dll", "nvcuda_dll_name": "nvcuda.dll", "cudart_dll_name": "cudart64_100.dll",
        "cudnn_dll_name": "cudnn64_7.dll"}
    mixed = tmp_path / "mixed.py"  # a call the fast reader refuses: ast reads it, skipping what is not literal
    mixed.write_text("is_cuda_build = True\ncuda_version_number = '10.0'\n_private = 1\nx = compute()\n")
    assert _generated_assignments(mixed.read_text()) is None
    assert read_build_info(str(mixed)) == {"is_cuda_build": True, "cuda_version_number": "10.0"}
    broken = tmp_path / "broken.py"
    broken.write_text("build_info = (\n")
    assert read_build_info(str(broken))["$unknown"].startswith("build_info.py unreadable: '(' was never closed")


@pytest.mark.parametrize("text", [
    "x = -1", "x = 1e3", "x = 0x10", "x = 1_0", "x = 1j", "x = 010", "x = b'a'", "x = r'a'", "x = f'a'", "x = u'a'",
    "x = 'a\\'b'", "x = 'a' 'b'", "x = '''a'''", "x = {1, 2}", "x = set()", "x = ...", "x = y", "x = [\n1]",
    "x = 1; y = 2", "x = y = 1", "x: int = 1", "x += 1", "  x = 1", "\ufeffx = 1", "x = 1\ry = 2", "x = '\x00'",
    "x = '\ud800'", "# \ud800\n", "__debug__ = 1", "if = 1", "x = dict()", "x = dict(a=1)", "x = dict([], [])",
    "x = os.dict([])", "x = (dict([]))", "x = [dict([])]", "x = dict(5)", "x = {[1]: 2}", "x = dict([(1, 2, 3)])",
    "x = 1\nfrom __future__ import division", "from __future__ import braces", "import os as o", "x = (1,\n)",
    "x = '''", '"""never closed', "x = [" * 60 + "]" * 60, "x = " + "9" * 101, "x = 1 if 1 else 2", "x = 1 \\\n",
    "x = \u00e9", "\u00e9 = 1", "x = 'a'.join([])", "x = True'a'", "x = [1 2]", "x = (,)", "x = {1: 2,,}",
])
def test_anything_else_is_refused_and_read_by_ast(text):
    assert _generated_assignments(text) is None


# Literal modules as the generator might write them, and near misses.
SAFE_CHARS = st.characters(blacklist_characters="'\"\\\r\n\x00", blacklist_categories=("Cs",))
SCALAR = st.one_of(
    st.text(SAFE_CHARS, max_size=6).map(lambda s: f"'{s}'"), st.text(SAFE_CHARS, max_size=6).map(lambda s: f'"{s}"'),
    st.text(max_size=4).map(repr), st.integers(0, 10**25).map(str), st.sampled_from(["0", "00", "000", "1.", ".5"]),
    st.floats(0, 1e20, allow_nan=False).map(repr), st.sampled_from(["True", "False", "None"]),
    st.sampled_from(["-1", "01", "1_0", "0x1", "1e3", "1j", "b'x'", "r'x'", "...", "set()", "y", "'a' 'b'", "()"]))
COMMA = st.sampled_from([", ", ",", " , ", ",\t", ",\n"])


def _sequence(opening: str, closing: str) -> st.SearchStrategy[str]:
    return st.builds(lambda items, comma, trailing: opening + comma.join(items) + ("," if trailing and items else "")
                     + closing, st.lists(st.deferred(lambda: LITERAL), max_size=4), COMMA, st.booleans())


LITERAL = st.recursive(SCALAR, lambda inner: st.one_of(
    _sequence("[", "]"), _sequence("(", ")"), inner.map(lambda s: f"({s})"), inner.map(lambda s: f"({s},)"),
    st.builds(lambda pairs, comma: "{" + comma.join(f"{k}: {v}" for k, v in pairs) + "}",
              st.lists(st.tuples(inner, inner), max_size=3), COMMA),
    st.lists(st.tuples(SCALAR, inner), max_size=4).map(lambda pairs: "[" + ", ".join(f"({k}, {v})" for k, v in pairs)
                                                      + "]")), max_leaves=10)
VALUE = st.one_of(LITERAL, LITERAL.map("collections.OrderedDict({})".format), LITERAL.map("OrderedDict({})".format),
                  LITERAL.map("dict({})".format), LITERAL.map("collections . OrderedDict ( {} )".format),
                  st.sampled_from(["dict()", "dict([], [])", "OrderedDict(a=1)", "other.OrderedDict([])", "f(1)"]))
STATEMENT = st.one_of(
    st.builds("{} = {}".format, st.sampled_from(["build_info", "x", "_private", "cuda_version_number", "match",
                                                 "True", "if", "__debug__", "x.y", "x, y"]), VALUE),
    st.builds("{}={}".format, st.sampled_from(["build_info", "x"]), VALUE),
    st.sampled_from(["", "# a comment", "  # indented comment", "\t", '"""Auto-generated module."""',
                     "'''a\nb'''", '""""quoted" docstring"""', "import collections", "import collections.abc",
                     "from __future__ import division", "from __future__ import nonsense", "  x = 1", "x = 1  # c",
                     "x = 1 # c 'quoted'", "pass", "x = 1; y = 2", "x = (1,\n 2)"]),
)
MODULE = st.builds(lambda statements, newline, last: newline.join(statements) + last,
                   st.lists(STATEMENT, max_size=6), st.sampled_from(["\n", "\r\n", "\n\n"]),
                   st.sampled_from(["", "\n", "\r\n", " ", "\r"]))
NOISE = st.text(alphabet="'\"#()[]{},:=.\\ \t\r\n0159aexTrueFalsNondictOrdD_\x00\x0c\ufeff\u2028\u00e9", max_size=40)
PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(MODULE)
def test_literal_modules_read_as_ast_reads_them(text):
    _agrees(text)


@PROPERTY
@given(NOISE)
def test_noise_is_read_as_ast_reads_it_or_refused(text):
    _agrees(text)


@PROPERTY
@given(MODULE, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 3), NOISE.map(lambda s: s[:3])), max_size=3))
def test_damaged_modules_are_read_as_ast_reads_them_or_refused(text, edits):
    for at, cut, insert in edits:
        at %= len(text) + 1
        text = text[:at] + insert + text[at + cut:]
    _agrees(text)


def test_reading_a_generated_file_does_not_import_ast(tmp_path):
    """In a fresh interpreter: read_build_info of a file the generator wrote leaves ast unimported; a file
    it did not write is read with ast (the check can fail)."""
    generated, other = tmp_path / "generated.py", tmp_path / "other.py"
    generated.write_text(GENERATED["2.21-cuda"])
    other.write_text("build_info = {'cuda_version': '-'.join(['12', '5'])}\nis_cuda_build = -1 == 1\n")
    code = ("import json, sys\nfrom tfdoctor.facts.probes.pyenv_snapshot import read_build_info\n"
            "for path in sys.argv[1:]:\n    info = read_build_info(path)\n"
            "    print(json.dumps([info, 'ast' in sys.modules, '_ast' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code, str(generated), str(other)], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first == [{"cpu_compiler": "/usr/lib/llvm-18/bin/clang",
                      "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
                      "cuda_version": "12.5.1", "cudnn_version": "9", "is_cuda_build": True, "is_rocm_build": False,
                      "is_tensorrt_build": False}, False, False]
    assert second == [{}, True, True]  # neither value is a literal: ast read it, and skipped both


MEGABYTE = 1 << 20
HOSTILE = {  # name: (text, what the reader gives; None: refused)
    "a long list": ("x = [" + "1, " * (MEGABYTE // 3) + "]\n", {"x": [1] * (MEGABYTE // 3)}),
    "many statements": ("x = 1\n" * (MEGABYTE // 6), {"x": 1}),
    "many comment lines": ("#\n" * (MEGABYTE // 2), {}),
    "one long comment": ("# " + "a" * MEGABYTE, {}),
    "a long name": ("x" * MEGABYTE + " = 1", {"x" * MEGABYTE: 1}),
    "an unterminated docstring": ('"""' + "a" * MEGABYTE, None),
    "an unterminated docstring of quotes": ("'''" + "a'" * (MEGABYTE // 2), None),
    "an unterminated string": ("x = '" + "a" * MEGABYTE, None),
    "deep brackets": ("x = " + "[" * MEGABYTE, None),
    "empty strings": ("''" * (MEGABYTE // 2), None),
    "spaces": (" " * MEGABYTE + "x", None),
    "long digits": ("x = " + "1" * MEGABYTE, None),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_megabyte_of_hostile_text_is_read_in_linear_time(name):
    """Each token is one match at the next position: a megabyte takes under a second here, against the
    hours a backtracking or quadratic reader would; the bound leaves room for a loaded machine."""
    text, expected = HOSTILE[name]
    started = time.perf_counter()
    result = _generated_assignments(text)
    elapsed = time.perf_counter() - started
    assert (result, elapsed < 20.0) == (expected, True), f"{name}: {elapsed:.1f} s"
