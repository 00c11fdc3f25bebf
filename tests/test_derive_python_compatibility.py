"""The coupling table (tfdoctor/knowledge/python_compatibility.toml) is consistent with itself and the code."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tfdoctor.derive import python_compatibility as compat
from tfdoctor.derive.requirement_ranges import canonical_name
from tfdoctor.facts.probes.pyenv_snapshot import TENSORFLOW_DISTS
from tfdoctor.knowledge import table

TABLE = table(compat.TABLE)
KINDS = ("dependency", "needs-tf-keras", "python-support", "distribution", "tf-keras", "protobuf-gencode", "addon")


def _row_id(row: dict) -> str:
    return f"{row.get('kind')}:{row.get('package') or row.get('name') or row.get('tensorflow')}"


@pytest.mark.parametrize("row", TABLE.rows, ids=_row_id)
def test_every_row_is_well_formed_and_cites_a_listed_source(row):
    assert row["kind"] in KINDS
    listed = [m.split(" ")[0].split("#")[0] for m in TABLE.sources]
    assert row["source"] and all(any(s.startswith(m) for m in listed) for s in row["source"]), \
        "list the row's sources (or the site they are on) in [meta]"
    if row["kind"] == "dependency":
        assert row["package"] == "*" or row["package"] == canonical_name(row["package"])
        SpecifierSet(row["tensorflow"])
        if row["when"] not in compat.BOUND_KINDS:
            SpecifierSet(row["when"])
        assert row["severity"] in compat.SEVERITIES
        assert row.get("why") or row.get("symptom")
        if row["severity"] == "error":
            assert row.get("symptom"), "an error names how it breaks"
        if "installed" in row:
            SpecifierSet(row["installed"])
    elif row["kind"] in ("tf-keras", "protobuf-gencode"):
        for key in ("tensorflow", "tf_keras", "runtime", "gencode"):
            SpecifierSet(row.get(key, ""))
        assert row["severity"] in compat.SEVERITIES and (row.get("why") or row.get("symptom"))
        if row["severity"] == "error":
            assert row.get("symptom"), "an error names how it breaks"
        if row["kind"] == "protobuf-gencode":
            assert row["relation"] in (compat.RUNTIME_OLDER, compat.ONE_MAJOR_NEWER, compat.MAJORS_NEWER)
    elif row["kind"] == "addon":
        assert row["package"] == canonical_name(row["package"]) and isinstance(row["compiled"], bool)
        assert row["symptom"]
    elif row["kind"] == "needs-tf-keras":
        SpecifierSet(row["versions"])
        SpecifierSet(row["tensorflow"])
        assert row["severity"] in compat.SEVERITIES and row["symptom"]
    elif row["kind"] == "python-support":
        oldest, newest = (Version(v) for v in row["python"])
        assert oldest <= newest
    else:
        assert row["name"] == canonical_name(row["name"])
        assert all(isinstance(f, str) and f == f.lower() for f in row.get("cpu_flags", []))


def test_every_bound_kind_has_a_fallback_for_every_release():
    for kind in compat.BOUND_KINDS:
        fallbacks = [r for r in compat.rows("dependency") if r["package"] == "*" and r["when"] == kind]
        assert len(fallbacks) == 1 and fallbacks[0]["tensorflow"] == ">=0", kind
        assert compat.bound_coupling("some-new-dependency", "1.0", "2.99.0", kind).sources == tuple(
            fallbacks[0]["source"])


def test_fallbacks_come_after_every_specific_row():
    """The first matching row wins: a "*" row before a package's own row would hide it."""
    dependency_rows = list(compat.rows("dependency"))
    first_fallback = next(i for i, r in enumerate(dependency_rows) if r["package"] == "*")
    assert all(r["package"] == "*" for r in dependency_rows[first_fallback:])


def test_no_two_rows_claim_the_same_case():
    seen = set()
    for row in compat.rows("dependency"):
        key = (row["package"], row["tensorflow"], row["when"], row.get("installed"))
        assert key not in seen, key
        seen.add(key)


def test_narrowed_rows_come_before_the_row_they_narrow():
    """A row with `installed` after the same case without it would never be reached."""
    seen: set[tuple[str, str, str]] = set()
    for row in compat.rows("dependency"):
        case = (row["package"], row["tensorflow"], row["when"])
        assert not ("installed" in row and case in seen), case
        if "installed" not in row:
            seen.add(case)


def test_every_relation_and_tf_keras_pair_has_a_last_resort_row():
    for relation in (compat.RUNTIME_OLDER, compat.ONE_MAJOR_NEWER, compat.MAJORS_NEWER):
        assert compat.gencode_coupling(relation, "99.0.0", "1.0.0") is not None, relation
    last = list(compat.rows("tf-keras"))[-1]
    assert (last["tensorflow"], last["tf_keras"]) == (">=0", ">=0")


def test_symptoms_follow_the_installed_version():
    """Issue 27 item 5: the quoted symptom is the one that version produces."""
    def symptom(package: str, installed: str, tensorflow: str) -> str:
        return compat.bound_coupling(package, installed, tensorflow, compat.BELOW_FLOOR).symptom

    assert "cannot import name 'runtime_version'" in symptom("protobuf", "4.25.8", "2.21.0")
    assert "mismatched Protobuf Gencode/Runtime major versions" in symptom("protobuf", "5.29.5", "2.21.0")
    assert "Runtime version cannot be older" in symptom("protobuf", "5.27.0", "2.20.0")
    assert "numpy.core.umath failed to import" in symptom("ml-dtypes", "0.3.2", "2.21.0")
    assert "float4_e2m1fn" in symptom("ml-dtypes", "0.4.1", "2.21.0")


def test_python_support_is_one_row_per_release_and_never_drops_the_newest_python():
    support = compat.python_support()
    releases = [r for r, _, _ in support]
    assert len(releases) == len(set(releases))
    newest = [Version(n) for _, _, n in support]
    assert newest == sorted(newest), "a later TensorFlow never supports fewer new Pythons"


def test_the_distribution_rows_are_the_snapshots_list():
    """The snapshot (standard library only, runs under other interpreters) keeps its own tuple; they agree."""
    assert set(compat.distribution_names()) == set(TENSORFLOW_DISTS)
    for name in ("intel-tensorflow", "intel-tensorflow-avx512", "tensorflow-intel"):
        assert name in TENSORFLOW_DISTS


def test_error_rows_are_the_couplings_the_benchmark_measured_as_breaking():
    """The severities the issue set from real environments (benchmarks/python_env_truth.py)."""
    def severity(package: str, installed: str | None, tensorflow: str, bound: str) -> str:
        return compat.bound_coupling(package, installed, tensorflow, bound).severity

    assert severity("numpy", "2.1.3", "2.15.1", "above-cap") == "error"
    assert severity("numpy", "1.25.2", "2.21.0", "below-floor") == "warning"
    assert severity("numpy", "2.2.0", "2.18.0", "above-cap") == "info"
    assert severity("protobuf", "5.29.5", "2.21.0", "below-floor") == "error"
    assert severity("protobuf", "5.29.5", "2.15.1", "above-cap") == "warning"
    assert severity("ml-dtypes", "0.4.1", "2.21.0", "below-floor") == "error"
    assert severity("ml-dtypes", "0.4.1", "2.15.1", "above-cap") == "warning"
    assert severity("keras", "2.15.0", "2.21.0", "below-floor") == "error"
    assert severity("keras", "3.11.3", "2.21.0", "below-floor") == "warning"
    assert severity("h5py", "3.15.1", "2.21.0", "above-cap") == "info"
    assert severity("tensorboard", "2.16.2", "2.15.1", "above-cap") == "info"
    assert severity("wrapt", None, "2.21.0", "missing") == "error"
    assert severity("libclang", None, "2.21.0", "missing") == "warning"


@pytest.mark.parametrize(("installed", "specifier", "kind"), [
    ("2.1.3", "<2.0.0,>=1.23.5", "above-cap"),
    ("1.22.0", "<2.0.0,>=1.23.5", "below-floor"),
    ("0.4.1", "~=0.3.1", "above-cap"),
    ("0.3.0", "~=0.3.1", "below-floor"),
    ("4.21.1", "!=4.21.0,!=4.21.1,<5.0.0dev,>=3.20.3", "excluded"),
    ("5.29.5", "!=4.21.0,<5.0.0dev,>=3.20.3", "above-cap"),
    ("2.15.0", "==2.15.1", "below-floor"),
    ("1.26.4", "<2.0.0,>=1.23.5", None),
])
def test_which_bound_is_violated(installed, specifier, kind):
    assert compat.violated_bound(installed, specifier) == kind
