"""A throw-away single-node Slurm on loopback, for the pre-job hook tests.

Installs Debian's slurm-wlm and munge when they are missing (apt, bounded by timeouts), then runs a
private munged, slurmctld and slurmd, all in the foreground as our own child processes, with every
state, spool, log, pid and socket file under one temporary folder and free TCP ports, so nothing of the
machine's own configuration is used or changed. `SlurmUnavailable` says why it could not start; the
fixture turns it into a skip with that reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")
APT_TIMEOUT = 150.0
START_TIMEOUT = 40.0


class SlurmUnavailable(Exception):
    pass


def _run(argv: list[str], timeout: float, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"{' '.join(argv[:3])} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise SlurmUnavailable(f"cannot run {argv[0]}: {exc}") from None


def install() -> None:
    """apt-get install the packages unless the daemons are already there."""
    if all(shutil.which(d, path="/usr/sbin:/usr/bin:/sbin:/bin") for d in DAEMONS) and shutil.which("sbatch"):
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable("slurm-wlm is not installed and installing it needs root")
    if not shutil.which("apt-get"):
        raise SlurmUnavailable("slurm-wlm is not installed and there is no apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + APT_TIMEOUT
    update = _run(["apt-get", "update", "-q"], APT_TIMEOUT, env)
    if update.returncode != 0:
        raise SlurmUnavailable(f"apt-get update failed: {update.stderr.strip()[-300:]}")
    # Another apt run on the machine holds the lock for a while: wait for it rather than fail at once.
    result = _run(["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=60", "--no-install-recommends",
                   *PACKAGES],
                  max(10.0, deadline - time.monotonic()), env)
    if result.returncode != 0:
        raise SlurmUnavailable(f"apt-get install {' '.join(PACKAGES)} failed: {result.stderr.strip()[-300:]}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LocalSlurm:
    base: Path
    conf: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What a client command (sbatch, sinfo) needs to find this cluster."""
        return {"SLURM_CONF": str(self.conf), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(self.base)}

    def client(self, argv: list[str], timeout: float = 30.0,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
        return _run(argv, timeout, {**self.env, **(env or {})})

    def sbatch(self, script: str, name: str, env: Mapping[str, str], timeout: float = 60.0) -> tuple[int, str]:
        """Submit with --wait; returns (the job's exit code, the job's output)."""
        path = self.base / f"{name}.sh"
        path.write_text(script)
        output = self.base / f"{name}.out"
        result = self.client(
            ["sbatch", "--wait", "--export=ALL", "--job-name", name, "--output", str(output),
             "--chdir", str(self.base), str(path)],
            timeout=timeout, env=env)
        text = output.read_text() if output.exists() else ""
        if "Submitted batch job" not in result.stdout:
            raise AssertionError(f"sbatch failed ({result.returncode}): {result.stderr.strip()}")
        return result.returncode, text

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def logs(self) -> str:
        parts = []
        for log in sorted(self.base.glob("*.log")):
            parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)


def _slurm_conf(base: Path, cpus: int, task_prolog: Path | None) -> str:
    lines = [
        "ClusterName=tfdoctor-test",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"AuthInfo=socket={base / 'munge.socket'}",
        f"StateSaveLocation={base / 'state'}",
        f"SlurmdSpoolDir={base / 'spool'}",
        f"SlurmctldPidFile={base / 'slurmctld.pid'}",
        f"SlurmdPidFile={base / 'slurmd.pid'}",
        f"SlurmctldLogFile={base / 'slurmctld.log'}",
        f"SlurmdLogFile={base / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "ReturnToService=2",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=5",
        "MinJobAge=30",
        f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
    ]
    if task_prolog is not None:
        lines.append(f"TaskProlog={task_prolog}")
    return "\n".join(lines) + "\n"


def start(base: Path, task_prolog: Path | None = None) -> LocalSlurm:
    """Start munged, slurmctld and slurmd under `base`; wait until the node is idle."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o700)  # munged refuses key and socket folders that others can write
    for folder in ("state", "spool"):
        (base / folder).mkdir(exist_ok=True)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = base / "slurm.conf"
    conf.write_text(_slurm_conf(base, os.cpu_count() or 1, task_prolog))
    cluster = LocalSlurm(base, conf)
    env = {**os.environ, **cluster.env}
    commands = [
        ["munged", "--foreground", "--force", f"--socket={base / 'munge.socket'}", f"--key-file={key}",
         f"--pid-file={base / 'munged.pid'}", f"--log-file={base / 'munged.log'}",
         f"--seed-file={base / 'munged.seed'}"],
        ["slurmctld", "-D", "-i", "-f", str(conf)],
        ["slurmd", "-D", "-N", "localhost", "-f", str(conf)],
    ]
    try:
        for argv in commands:
            argv[0] = shutil.which(argv[0], path="/usr/sbin:/usr/bin:/sbin:/bin") or argv[0]
            out = (base / f"{Path(argv[0]).name}.console.log").open("w")
            try:
                cluster.processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                                          start_new_session=True))
            except OSError as exc:
                raise SlurmUnavailable(f"cannot start {argv[0]}: {exc}") from None
            if Path(argv[0]).name == "munged":
                _wait_for(lambda: (base / "munge.socket").exists(), 10, cluster, "munged did not start")
        _wait_for(lambda: _node_idle(cluster), START_TIMEOUT, cluster, "the node did not become idle")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _node_idle(cluster: LocalSlurm) -> bool:
    result = cluster.client(["sinfo", "-h", "-N", "-o", "%T"], timeout=10)
    return result.returncode == 0 and result.stdout.strip().startswith("idle")


def _wait_for(ready, limit: float, cluster: LocalSlurm, what: str) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        dead = [p for p in cluster.processes if p.poll() is not None]
        if dead:
            raise SlurmUnavailable(f"{what}: {Path(dead[0].args[0]).name} exited with {dead[0].returncode}\n"
                                   + cluster.logs())
        try:
            if ready():
                return
        except SlurmUnavailable:
            pass
        time.sleep(0.5)
    raise SlurmUnavailable(f"{what} within {limit:g} s\n" + cluster.logs())
