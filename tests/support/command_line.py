"""The tfdoctor command in a process of its own, as a batch script runs it: its exit code and streams."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m tfdoctor ARGS` with this interpreter, in `cwd` (the checkout by default), the environment
    plus `env`; given up after `timeout` seconds."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "tfdoctor", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
