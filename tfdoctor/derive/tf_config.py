"""TF_CONFIG parsed and validated (pure). Every problem is data; nothing here raises on bad input.

TF_CONFIG is the JSON TensorFlow's TFConfigClusterResolver reads for multi-worker training:

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"], "ps": ["host3:2222"]},
     "task": {"type": "worker", "index": 0}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

KNOWN_JOBS = ("chief", "worker", "ps", "evaluator", "master")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with TF_CONFIG, of one kind, with its message and evidence."""

    kind: str  # "malformed", "task", "duplicate", "shape"
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TfConfig:
    """A parsed TF_CONFIG: the cluster's jobs and this task's type and index."""

    cluster: dict[str, list[str]]
    task_type: str | None
    task_index: int | None

    @property
    def own_address(self) -> str | None:
        if self.task_type is None or self.task_index is None:
            return None
        addresses = self.cluster.get(self.task_type, [])
        return addresses[self.task_index] if 0 <= self.task_index < len(addresses) else None

    def hosts(self, jobs: Iterable[str] = ("chief", "worker", "master")) -> list[str]:
        """Distinct host names of the given jobs, in order (the machines that run replicas)."""
        seen: list[str] = []
        for job in jobs:
            for address in self.cluster.get(job, []):
                host = split_address(address)[0]
                if host not in seen:
                    seen.append(host)
        return seen


def split_address(address: str) -> tuple[str, str]:
    """"host:port" or "[v6]:port" → (host, port); the port is "" when there is none."""
    text = address.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, ""
    return host, port


def _address_problem(address: Any) -> str | None:
    if not isinstance(address, str):
        return f"is {type(address).__name__} {address!r}, not a \"host:port\" string"
    host, port = split_address(address)
    if not host:
        return f"{address!r} has no host"
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"{address!r} has no valid port (expected \"host:port\")"
    return None


def parse_tf_config(raw: str) -> tuple[TfConfig | None, list[Problem]]:
    """The parsed configuration (None when it is unusable) and every problem found in it."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser follows
        return None, [Problem("malformed", f"TF_CONFIG is not JSON: {exc}", {"env.TF_CONFIG": raw})]
    if not isinstance(data, dict):
        return None, [Problem("malformed", f"TF_CONFIG holds a JSON {type(data).__name__}, not an object",
                              {"env.TF_CONFIG": raw})]
    problems: list[Problem] = []
    cluster_raw = data.get("cluster")
    cluster: dict[str, list[str]] = {}
    if not isinstance(cluster_raw, dict):
        what = "no \"cluster\"" if cluster_raw is None else f"a \"cluster\" that is a {type(cluster_raw).__name__}"
        problems.append(Problem("malformed", f"TF_CONFIG has {what}; it needs an object of job → addresses",
                                {"TF_CONFIG.cluster": cluster_raw}))
    else:
        for job, addresses in cluster_raw.items():
            if not isinstance(addresses, list):
                problems.append(Problem("malformed", f"TF_CONFIG cluster job {job!r} is not a list of addresses",
                                        {f"TF_CONFIG.cluster.{job}": addresses}))
                continue
            bad = [(i, why) for i, a in enumerate(addresses) if (why := _address_problem(a))]
            for index, why in bad:
                problems.append(Problem("malformed", f"TF_CONFIG cluster {job}[{index}] {why}",
                                        {f"TF_CONFIG.cluster.{job}[{index}]": addresses[index]}))
            cluster[job] = [a.strip() for a in addresses if isinstance(a, str)] if not bad else []
    task_raw = data.get("task")
    task_type: str | None = None
    task_index: int | None = None
    if task_raw is None:
        problems.append(Problem("malformed", "TF_CONFIG has no \"task\": this process does not know its role",
                                {"TF_CONFIG.task": None}))
    elif not isinstance(task_raw, dict):
        problems.append(Problem("malformed", f"TF_CONFIG \"task\" is a {type(task_raw).__name__}, not an object",
                                {"TF_CONFIG.task": task_raw}))
    else:
        kind, index = task_raw.get("type"), task_raw.get("index", 0)
        if not isinstance(kind, str) or not kind:
            problems.append(Problem("malformed", f"TF_CONFIG task type {kind!r} is not a job name",
                                    {"TF_CONFIG.task.type": kind}))
        else:
            task_type = kind
        if isinstance(index, bool) or not isinstance(index, int):
            problems.append(Problem("malformed", f"TF_CONFIG task index {index!r} is not a whole number",
                                    {"TF_CONFIG.task.index": index}))
        else:
            task_index = index
    config = TfConfig(cluster, task_type, task_index)
    if isinstance(cluster_raw, dict):
        problems += _task_problems(config, cluster_raw)
        if not any(p.kind == "malformed" for p in problems):
            # A job dropped as malformed would make the shape look wrong too: one problem, one finding.
            problems += _duplicate_problems(config)
            problems += _shape_problems(config)
    return config, problems


def _task_problems(config: TfConfig, cluster_raw: dict[str, Any]) -> list[Problem]:
    kind, index = config.task_type, config.task_index
    if kind is None or index is None:
        return []
    if kind not in cluster_raw:
        if kind == "evaluator":
            return []  # a side-car evaluator may stand outside the training cluster
        return [Problem("task", f"TF_CONFIG task type {kind!r} is not a job of the cluster "
                                f"({', '.join(sorted(cluster_raw)) or 'no jobs'})",
                        {"TF_CONFIG.task.type": kind, "TF_CONFIG.cluster.jobs": sorted(cluster_raw)})]
    if not isinstance(cluster_raw[kind], list):
        return []  # reported as malformed
    size = len(cluster_raw[kind])
    if not 0 <= index < size:
        return [Problem("task", f"TF_CONFIG task {kind}[{index}] is out of range: the cluster lists {size} "
                                f"{kind} address(es)",
                        {"TF_CONFIG.task.index": index, f"TF_CONFIG.cluster.{kind}.count": size})]
    return []


def _duplicate_problems(config: TfConfig) -> list[Problem]:
    seen: dict[str, str] = {}
    problems = []
    for job, addresses in config.cluster.items():
        for index, address in enumerate(addresses):
            key = address.lower()
            where = f"{job}[{index}]"
            if key in seen:
                problems.append(Problem("duplicate", f"TF_CONFIG lists {address} twice ({seen[key]} and {where}): "
                                                     "two tasks cannot listen on one address",
                                        {"TF_CONFIG.address": address, "TF_CONFIG.tasks": [seen[key], where]}))
            else:
                seen[key] = where
    return problems


def _shape_problems(config: TfConfig) -> list[Problem]:
    cluster = config.cluster
    problems = []
    unknown = sorted(j for j in cluster if j not in KNOWN_JOBS)
    if unknown:
        problems.append(Problem("shape", f"TF_CONFIG cluster has job(s) TensorFlow's strategies do not use: "
                                         f"{', '.join(unknown)} (known: {', '.join(KNOWN_JOBS)})",
                                {"TF_CONFIG.cluster.jobs": sorted(cluster)}))
    for job in ("chief", "evaluator", "master"):
        if len(cluster.get(job, [])) > 1:
            problems.append(Problem("shape", f"TF_CONFIG cluster has {len(cluster[job])} {job} tasks; there can "
                                             "be only one",
                                    {f"TF_CONFIG.cluster.{job}.count": len(cluster[job])}))
    if cluster.get("chief") and cluster.get("master"):
        problems.append(Problem("shape", "TF_CONFIG cluster has both \"chief\" and \"master\" (the old name of "
                                         "chief); keep one",
                                {"TF_CONFIG.cluster.jobs": sorted(cluster)}))
    if cluster.get("ps") and not cluster.get("worker"):
        problems.append(Problem("shape", "TF_CONFIG cluster has parameter servers but no workers",
                                {"TF_CONFIG.cluster.ps.count": len(cluster["ps"])}))
    if not any(cluster.get(job) for job in KNOWN_JOBS):
        problems.append(Problem("shape", "TF_CONFIG cluster lists no chief, worker or ps task",
                                {"TF_CONFIG.cluster.jobs": sorted(cluster)}))
    return problems


def host_is_local(host: str, names: Iterable[str], addresses: Iterable[str]) -> bool:
    """Whether `host` names this machine: one of its addresses or names; a fully qualified name also
    matches on its first label (Kubernetes gives pods "worker-0" and lists "worker-0.svc.cluster.local")."""
    import ipaddress  # only when TF_CONFIG is set: kept off the start-up path

    lowered = host.strip().lower()
    try:
        ip = ipaddress.ip_address(lowered)
    except ValueError:
        ip = None
    if ip is not None:
        return ip.is_loopback or ip.is_unspecified or any(_same_ip(ip, a) for a in addresses)
    if lowered == "localhost":
        return True
    local = {n.lower() for n in names if n}
    return lowered in local or lowered.split(".", 1)[0] in {n.split(".", 1)[0] for n in local}


def _same_ip(ip: object, text: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(text) == ip
    except ValueError:
        return False
