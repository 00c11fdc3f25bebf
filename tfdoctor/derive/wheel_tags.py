"""Whether an installed wheel's tags (WHEEL's `Tag:` lines, python-abi-platform) can load in the
inspected interpreter (pure): what PKG012 compares."""

from __future__ import annotations

from tfdoctor.facts import Facts


def interpreter_cpython(facts: Facts) -> tuple[int, int] | None:
    """(3, 11) for the inspected CPython 3.11; None for another implementation or no recorded version."""
    implementation = str(facts.peek("python.implementation") or "CPython")
    version = str(facts.peek("python.version") or "")
    parts = version.split(".")
    if implementation != "CPython" or len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def cpython_of(tag: str) -> tuple[int, int] | None:
    """(3, 11) for "cp311"; None for other tags."""
    if not tag.startswith("cp") or not tag[2:].rstrip("mdut").isdigit():
        return None
    digits = tag[2:].rstrip("mdut")
    return int(digits[0]), int(digits[1:] or 0)


def wheel_fits_interpreter(tags: tuple[str, ...], python: tuple[int, int]) -> tuple[bool, str]:
    """Whether any of a wheel's tags (python-abi-platform) can load in this CPython; with the tag that
    was judged. Pure-Python and abi3 wheels fit every later CPython; a cpXY ABI fits only CPython X.Y."""
    judged = ""
    for tag in tags:
        parts = tag.split("-")
        if len(parts) != 3:
            continue
        python_tags, abi_tags = parts[0].split("."), parts[1].split(".")
        for abi in abi_tags:
            judged = judged or tag
            if abi == "none":
                return True, tag
            if abi == "abi3":
                if any((v := cpython_of(p)) is not None and v <= python for p in python_tags):
                    return True, tag
                continue
            built = cpython_of(abi)
            if built is None or built == python:
                return True, tag
    return (not judged), judged
