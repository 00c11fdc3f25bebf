"""format_ipv6 writes an address exactly as str(ipaddress.IPv6Address(n)) does on this interpreter, so
parse_if_inet6 (read on every pre-job hook run) gives the same addresses without importing ipaddress."""

from __future__ import annotations

import ipaddress
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfdoctor.facts.parse_platform import format_ipv6, parse_if_inet6

ALL_ONES = (1 << 128) - 1


def _hextets(*groups: int) -> int:
    value = 0
    for group in groups:
        value = value << 16 | group
    return value


EDGES = [
    0, 1, ALL_ONES, 1 << 127, 0xFFFF, 0x10000, 1 << 112,
    _hextets(1, 0, 1, 1, 1, 1, 1, 1),  # one zero hextet: not compressed
    _hextets(1, 0, 0, 1, 1, 1, 1, 1),  # two: compressed
    _hextets(1, 0, 0, 1, 0, 0, 1, 1),  # equal runs: the first
    _hextets(1, 0, 0, 1, 0, 0, 0, 1),  # the longer run wins
    _hextets(0, 0, 1, 1, 1, 1, 0, 0),  # runs at both ends, equal: the first
    _hextets(0, 1, 1, 1, 1, 1, 1, 0),  # single zeros at both ends
    _hextets(1, 1, 1, 1, 1, 1, 1, 0),
    _hextets(1, 1, 1, 1, 1, 1, 0, 0),
    _hextets(0, 0, 0, 0, 0, 0, 0, 1),
    _hextets(0xFE80, 0, 0, 0, 0xFC, 0xFF, 0xFE00, 1),  # a link-local address as /proc/net/if_inet6 lists it
    _hextets(0xFD00, 0, 0, 0, 0, 0, 0, 2),
    _hextets(0xABCD, 0xEF01, 0x0023, 0x4567, 0x89AB, 0xCDEF, 0x000A, 0x0BCD),  # lowercase, no leading zeros
    _hextets(0, 0, 0, 0, 0, 0xFFFF, 0x0102, 0x0304),  # IPv4-mapped: the one form that depends on Python
    _hextets(0, 0, 0, 0, 0, 0xFFFF, 0, 0),
    _hextets(0, 0, 0, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF),
    _hextets(0, 0, 0, 0, 0, 0, 0x0102, 0x0304),  # IPv4-compatible (deprecated): hexadecimal everywhere
    _hextets(0, 0, 0, 0, 1, 0xFFFF, 0x0102, 0x0304),  # not mapped: a hextet before ffff
    _hextets(0x64, 0xFF9B, 0, 0, 0, 0, 0x0102, 0x0304),  # NAT64: hexadecimal
]


@pytest.mark.parametrize("value", EDGES, ids=hex)
def test_edge_cases_are_written_as_ipaddress_writes_them(value):
    assert format_ipv6(value) == str(ipaddress.IPv6Address(value))


def test_an_ipv4_mapped_address_is_dotted_from_python_3_13_on():
    """The one form that differs between interpreters (gh-87799, Python 3.13): pinned, and the same as the
    running interpreter's ipaddress, so a back-port to an older Python would fail here."""
    mapped = _hextets(0, 0, 0, 0, 0, 0xFFFF, 0x0102, 0x0304)
    expected = "::ffff:1.2.3.4" if sys.version_info >= (3, 13) else "::ffff:102:304"
    assert (format_ipv6(mapped), str(ipaddress.IPv6Address(mapped))) == (expected, expected)


@pytest.mark.parametrize("value", [-1, 1 << 128, ALL_ONES + 2])
def test_outside_128_bits_is_a_value_error_as_in_ipaddress(value):
    with pytest.raises(ValueError):
        ipaddress.IPv6Address(value)
    with pytest.raises(ValueError, match="128-bit"):
        format_ipv6(value)


# Hextets drawn mostly from 0, 1 and ffff, so runs of zeros of every length and position come up.
HEXTET = st.one_of(st.just(0), st.just(0), st.just(1), st.just(0xFFFF), st.integers(0, 0xFFFF))


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.integers(0, ALL_ONES), st.lists(HEXTET, min_size=8, max_size=8).map(lambda g: _hextets(*g))))
def test_any_address_is_written_as_ipaddress_writes_it(value):
    assert format_ipv6(value) == str(ipaddress.IPv6Address(value))


def test_if_inet6_lines_as_before():
    """What parse_if_inet6 kept and skipped with ipaddress, it keeps and skips now: int(field, 16) still reads
    the field, so a 0x prefix, underscores or a sign in it are what they were."""
    text = ("00000000000000000000000000000001 01 80 10 80       lo\n"
            "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
            "fd000000000000000000000000000002 04 40 00 82     eth0\n"
            "FD000000000000000000000000000002 05 40 00 82     eth1\n"  # the same address, upper case: once
            "0x000000000000000000000000000003 06 40 00 82     odd0\n"
            "-0000000000000000000000000000004 07 40 00 82     odd1\n"  # negative: skipped, as ipaddress did
            "0000_000000000000000000000000005 08 40 00 82     odd2\n"
            "zz000000000000000000000000000002 09 40 00 82     bad0\n"
            "0001 short\n\n")
    assert parse_if_inet6(text) == ["::1", "fe80::fc:ff:fe00:1", "fd00::2", "::3", "::5"]
