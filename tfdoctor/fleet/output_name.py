"""File names for `tfdoctor collect -o` on many nodes at once (pure).

srun expands its filename patterns (%N, %j, …) only in its own --output/--error, never in the command it
runs, and mpirun and ssh expand nothing: so tfdoctor expands them itself, with Slurm's meaning.

  %h  the host name as the kernel reports it (may be a full domain name)
  %N  the node name: SLURMD_NODENAME inside a Slurm step, else the host name up to its first dot
  %j  the job id: SLURM_JOB_ID, PBS_JOBID or LSB_JOBID; "nojob" outside a job
  %%  a literal %
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PATTERN = re.compile(r"%(.)", re.DOTALL)
KNOWN = "%h %N %j %%"


class OutputNameError(ValueError):
    pass


def node_name(hostname: str, environ: Mapping[str, str]) -> str:
    return environ.get("SLURMD_NODENAME") or hostname.split(".", 1)[0] or hostname


def job_id(environ: Mapping[str, str]) -> str:
    for name in ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"):
        if environ.get(name):
            return environ[name]
    return "nojob"


def expand_output(pattern: str, hostname: str, environ: Mapping[str, str]) -> str:
    values = {"h": hostname, "N": node_name(hostname, environ), "j": job_id(environ), "%": "%"}

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise OutputNameError(f"unknown pattern %{key} in {pattern!r} (known: {KNOWN})")
        # A name must not climb out of the chosen folder.
        return values[key] if key == "%" else values[key].replace("/", "_")

    if pattern.endswith("%") and not pattern.endswith("%%"):
        raise OutputNameError(f"{pattern!r} ends with a lone % (write %% for a literal %)")
    return PATTERN.sub(substitute, pattern)
