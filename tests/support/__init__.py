"""Helpers the tests share: fake machines, fake environments, recorded scenarios (tests/README.md)."""
