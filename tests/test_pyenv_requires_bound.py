"""pyenv_snapshot._requires_of: METADATA headers longer than HEADER_LIMIT give no requirement list (None,
unknown) rather than a partial one whose last line may be cut."""

from __future__ import annotations

from tfdoctor.facts.probes import pyenv_snapshot


def test_headers_cut_at_the_limit_are_not_recorded_as_the_requirements(tmp_path):
    line = b"Requires-Dist: numpy>=1.26.4\n"
    count = pyenv_snapshot.HEADER_LIMIT // len(line) + 10
    (tmp_path / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: big\n" + line * count + b"\nlong text\n")
    assert pyenv_snapshot._requires_of(str(tmp_path)) is None


def test_headers_within_the_limit_give_the_requirements_without_extras(tmp_path):
    (tmp_path / "METADATA").write_bytes(b"Name: small\nRequires-Dist: numpy>=1.26.4\n"
                                        b"Requires-Dist: pytest; extra == \"test\"\n\nRequires-Dist: no\n")
    assert pyenv_snapshot._requires_of(str(tmp_path)) == ["numpy>=1.26.4"]
