"""Property-based tests (hypothesis) for the pure parsers and for the replay path (`check --facts`).

The parsers' contract (tfdoctor/facts/parse*.py): a value or ValueError, never another exception, and
never work beyond the bound they are given. The replay contract: a facts file that parses, however odd
its values, gives findings or "not checked" — no check crashes on it (a crash is exit 3).
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.snapshot_facts import SNAPSHOTS, edited_facts, set_fact, snapshot_tree

from tfdoctor.facts import Facts
from tfdoctor.facts.parse import (
    CpusBeyondMachine,
    format_cpulist,
    parse_affinity_list,
    parse_cgroup_membership,
    parse_cpu_max,
    parse_cpuinfo,
    parse_cpulist,
    parse_omp_places,
    parse_status,
)
from tfdoctor.facts.parse_ldcache import parse_ld_so_cache
from tfdoctor.facts.parse_platform import parse_hosts_names, parse_iommu_cmdline, parse_mount, parse_size

# Numbers of every size, the grammar's own punctuation, and noise.
NUMBER = st.one_of(st.integers(0, 70), st.integers(0, 10**12)).map(str)
CPU_TOKEN = st.one_of(NUMBER, st.builds(lambda a, b: f"{a}-{b}", NUMBER, NUMBER),
                      st.builds(lambda a, b, c: f"{a}-{b}:{c}", NUMBER, NUMBER, NUMBER), st.text(max_size=4))
CPU_LIST = st.lists(CPU_TOKEN, max_size=8).map(",".join)
PLACE = st.one_of(
    st.builds(lambda a: f"{{{a}}}", NUMBER),
    st.builds(lambda a, n, s: f"{{{a}:{n}:{s}}}", NUMBER, NUMBER, st.integers(-3, 3)),
    st.builds(lambda a, n, s: f"{{{a}}}:{n}:{s}", NUMBER, NUMBER, st.integers(-3, 3)),
    st.sampled_from(["threads", "cores(4)", "sockets", "ll_caches", "numa_domains(2)"]), st.text(max_size=6))
PLACES = st.lists(PLACE, min_size=1, max_size=4).map(",".join)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.sets(st.integers(0, 300), max_size=60))
def test_cpulist_round_trips(cpus):
    assert parse_cpulist(format_cpulist(cpus)) == sorted(cpus)


@FAST
@given(CPU_LIST, st.integers(1, 20000))
def test_cpulist_is_bounded_by_the_machine(text, limit):
    start = time.perf_counter()
    try:
        cpus = parse_cpulist(text, limit)
    except ValueError:
        return
    finally:
        assert time.perf_counter() - start < 1.0
    assert all(0 <= c < limit for c in cpus)


@FAST
@given(st.lists(CPU_TOKEN, max_size=8).map(" ".join), st.integers(1, 20000))
def test_affinity_lists_are_bounded(text, limit):
    try:
        cpus = parse_affinity_list(text, limit)
    except CpusBeyondMachine as exc:
        assert exc.highest >= limit
        return
    except ValueError:
        return
    assert cpus is None or all(0 <= c < limit for c in cpus)


@FAST
@given(PLACES, st.integers(1, 20000))
def test_omp_places_are_bounded(text, limit):
    start = time.perf_counter()
    try:
        _abstract, count, cpus = parse_omp_places(text, limit)
    except CpusBeyondMachine as exc:
        assert exc.highest >= limit
        return
    except ValueError:
        return
    finally:
        assert time.perf_counter() - start < 1.0
    assert cpus is None or all(0 <= c < limit for c in cpus)
    assert count is None or count >= 0


TEXT_PARSERS = [parse_cpuinfo, parse_status, parse_cgroup_membership, parse_cpu_max, parse_size,
                parse_iommu_cmdline, lambda t: parse_mount(t, "/dev/shm"), lambda t: parse_hosts_names(t, [], "h")]


@FAST
@given(st.text(max_size=400), st.sampled_from(range(len(TEXT_PARSERS))))
def test_text_parsers_return_a_value_or_value_error(text, index):
    with contextlib.suppress(ValueError):
        TEXT_PARSERS[index](text)


@FAST
@given(st.binary(max_size=2000))
def test_ld_so_cache_parser_returns_entries_or_value_error(data):
    for prefix in (b"", b"glibc-ld.so.cache1.1", b"ld.so-1.7.0"):
        with contextlib.suppress(ValueError):
            parse_ld_so_cache(prefix + data)


# -- replay ------------------------------------------------------------------------------------

def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*path, key))]
    if isinstance(node, list):
        return [leaf for i, value in enumerate(node) for leaf in _leaves(value, (*path, i))] or [path]
    return [path]


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(allow_nan=False),
                      st.text(max_size=30), st.sampled_from(["", "0", "-1", "12", "1.2.3.4.5", "0-4000000000",
                                                             "{0:4000000000}", "nan", "max"]),
                      st.just({"$unknown": "mutated"}), st.lists(st.integers(0, 10), max_size=3),
                      st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
BASES = sorted(p for p in SNAPSHOTS.rglob("*.json"))


# Mutations the property test below found crashing a check, replayed every run (a random run of 60 examples
# meets each of them only now and then): the snapshot, then each leaf and its value.
RECORD = ("python", "watched", "tensorflow-cpu", "record")
FOUND_BY_THE_PROPERTY = [
    ("checks/pkg011-damaged-install-lists-what-is-missing.json", [((*RECORD, "hash_mismatch"), None)]),
    ("checks/pkg011-damaged-install-lists-what-is-missing.json", [((*RECORD, "hash_budget"), ":")]),
    ("checks/dist102-nccl-ib-disabled-with-active-infiniband.json",
     [(("network", "infiniband", 0, "active_rate_gbps"), "200")]),
    ("checks/numa001-unbound-process-with-gpus-on-one-node.json",
     [(("numa", "pci_gpus", 0, "numa_node"), -1), (("numa", "pci_gpus", 0, "local_cpus"), [[0]])]),
]


@pytest.mark.parametrize(("snapshot", "mutations"), FOUND_BY_THE_PROPERTY)
def test_mutations_that_once_crashed_a_check_do_not(registry, snapshot, mutations):
    from tfdoctor.engine import run_checks
    from tfdoctor.model import Status

    report = run_checks(registry.checks, edited_facts(snapshot, dict(mutations)))
    assert [(r.code, r.reason) for r in report.results if r.status is Status.CRASHED] == []


@pytest.fixture(scope="module")
def registry():
    from tfdoctor.registry import load_registry

    return load_registry()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_replaying_mutated_facts_never_crashes_a_check(registry, data):
    from tfdoctor.engine import run_checks
    from tfdoctor.model import Status

    base = data.draw(st.sampled_from(BASES), label="snapshot")
    tree = snapshot_tree(base)
    leaves = _leaves(tree["sections"])
    for _ in range(data.draw(st.integers(1, 6), label="mutations")):
        path = data.draw(st.sampled_from(leaves), label="leaf")
        if path:
            set_fact(tree, path, data.draw(JSON_LEAF, label="value"))
    facts = Facts.from_json(json.loads(json.dumps(tree)))
    report = run_checks(registry.checks, facts)
    crashed = [(r.code, r.reason) for r in report.results if r.status is Status.CRASHED]
    assert not crashed, crashed
