"""DIST — distributed training: TF_CONFIG, NCCL's variables, shared memory, the IOMMU, and the expected
all-reduce time."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import all_gpus, visible_gpus
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.facts.parse import count
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

    from tfdoctor.derive.allreduce import Link
    from tfdoctor.derive.tf_config import Problem, TfConfig

# The variable tfdoctor.derive.allreduce reads (a test keeps the two equal): repeated here so that the TF_CONFIG
# and all-reduce models load only for jobs that use them, not in every pre-job hook.
PARAMS_VARIABLE = "TFDOCTOR_PARAMS"

# NVIDIA's container guides start NCCL jobs with --shm-size=1g; Docker's default is 64 MiB.
NCCL_SHM_BYTES = 1024**3


def _tf_config(facts: Facts) -> tuple[str, TfConfig | None, list[Problem]] | None:
    raw = facts.env("TF_CONFIG")
    if raw is None or not raw.strip():
        return None
    from tfdoctor.derive.tf_config import parse_tf_config  # only jobs with a TF_CONFIG pay for the parser

    config, problems = parse_tf_config(raw)
    return raw, config, problems


def _problems(facts: Facts, kind: str) -> Iterator[Finding]:
    parsed = _tf_config(facts)
    if parsed is None:
        return
    for problem in parsed[2]:
        if problem.kind == kind:
            yield Finding(problem.message, evidence=problem.evidence)


@check("DIST001", "tf-config-malformed", Severity.ERROR)
def tf_config_malformed(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Parses TF_CONFIG: it must be a JSON object with "cluster" (job name → list of "host:port") and
    "task" ({"type": job, "index": n}).

    Why is this bad?
    TensorFlow fails at start-up on invalid JSON and, worse, silently runs single-worker when the
    structure is wrong in some ways (no task), so the "distributed" job trains alone.

    Example:
    TF_CONFIG='{"cluster": {"worker": "host1:2222"}, "task": {"type": "worker", "index": "0"}}'
    (a string where a list belongs, an index in quotes).

    Fix:
    Generate TF_CONFIG with json.dumps in the launcher rather than by hand in shell quoting.

    Fix safety:
    Display only: tfdoctor cannot know the intended cluster.
    """
    yield from _problems(facts, "malformed")


@check("DIST002", "tf-config-task-not-in-cluster", Severity.ERROR)
def tf_config_task_not_in_cluster(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks that TF_CONFIG's task type is a job of its cluster and its index is within that job's
    address list (a side-car evaluator may stand outside the cluster).

    Why is this bad?
    TensorFlow raises at strategy creation, or the launcher's off-by-one makes two processes claim
    one slot while another is never filled and the job waits forever.

    Example:
    cluster {"worker": ["a:2222", "b:2222"]}, task {"type": "worker", "index": 2}.

    Fix:
    Number tasks from 0 to len(job) − 1.

    Fix safety:
    Display only.
    """
    yield from _problems(facts, "task")


@check("DIST003", "tf-config-duplicate-address", Severity.ERROR)
def tf_config_duplicate_address(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds one host:port listed for two tasks of TF_CONFIG's cluster.

    Why is this bad?
    Two servers cannot bind one port: the second fails, or both tasks resolve to the same process
    and collective ops hang waiting for a peer that does not exist.

    Example:
    {"chief": ["node1:2222"], "worker": ["node1:2222", "node2:2222"]}

    Fix:
    Give every task its own port (or host).

    Fix safety:
    Display only.
    """
    yield from _problems(facts, "duplicate")


@check("DIST004", "tf-config-cluster-shape", Severity.WARNING)
def tf_config_cluster_shape(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks the cluster's shape: job names TensorFlow uses (chief, worker, ps, evaluator), at most one
    chief and one evaluator, not both chief and master, parameter servers only with workers.

    Why is this bad?
    Strategies pick roles by these names: a second chief, or "workers" for "worker", gives a cluster
    in which some tasks are never used or the strategy refuses to start.

    Example:
    {"chief": ["a:2222", "b:2222"], "workers": ["c:2222"]}

    Fix:
    One chief, the rest workers (plus ps for ParameterServerStrategy).

    Fix safety:
    Display only.
    """
    yield from _problems(facts, "shape")


@check("DIST005", "tf-config-host-not-listed", Severity.WARNING)
def tf_config_host_not_listed(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the host of this task's own TF_CONFIG address with this machine's host name, the names
    /etc/hosts gives it and its IP addresses (a fully qualified name matches on its first label).

    Why is this bad?
    Every other task connects to the address listed for this one. When it names another machine, the
    TF_CONFIG of a different node was copied here: the cluster waits for a task that never comes.

    Example:
    On node3: task {"type": "worker", "index": 0} while worker[0] is "node1:2222".

    Fix:
    Generate each node's TF_CONFIG with its own index (e.g. from SLURM_PROCID).

    Fix safety:
    Display only.
    """
    parsed = _tf_config(facts)
    if parsed is None or parsed[1] is None:
        return
    config = parsed[1]
    own = config.own_address
    if own is None:
        return  # DIST001/DIST002 already say why
    from tfdoctor.derive.tf_config import host_is_local, split_address

    host = split_address(own)[0]
    names, addresses = _strings(facts, "network.names"), _strings(facts, "network.addresses")
    if host_is_local(host, names, addresses):
        return
    yield Finding(
        f"this process is {config.task_type}[{config.task_index}] = {own}, but {host} is not this host "
        f"({', '.join(names)})",
        evidence={"TF_CONFIG.own_address": own, "network.names": list(names), "network.addresses": list(addresses)},
    )


def _enabled(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes")


@check("DIST101", "nccl-p2p-disabled", Severity.WARNING)
def nccl_p2p_disabled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds NCCL_P2P_DISABLE=1 with two or more visible GPUs that could reach each other peer-to-peer.
    Boards that offer no peer-to-peer at all (GeForce RTX 40 series; knowledge table
    gpu_peer_to_peer) do not count: there the variable changes nothing, and NVIDIA advises it.

    Why is this bad?
    NCCL then copies every GPU-to-GPU transfer through host memory instead of NVLink or PCIe
    peer-to-peer: all-reduce bandwidth drops several-fold. The variable is often a leftover
    workaround for an IOMMU or ACS problem (see DIST106).

    Example:
    NCCL_P2P_DISABLE=1 on an 8-GPU NVLink server.

    Fix:
    Unset it, after fixing the cause it worked around (IOMMU passthrough, ACS off).

    Fix safety:
    Unsafe: if the platform problem it hid remains, collectives may hang.
    """
    value = facts.env("NCCL_P2P_DISABLE")
    gpus = [g for g in visible_gpus(facts) if not _without_peer_to_peer(g.name)]
    if not _enabled(value) or len(gpus) < 2:
        return
    yield Finding(f"NCCL_P2P_DISABLE={value} with {len(gpus)} GPUs: GPU-to-GPU traffic goes through host memory",
                  evidence={"env.NCCL_P2P_DISABLE": value, "gpus.visible": len(gpus)},
                  fixes=(EnvFix("Unset NCCL_P2P_DISABLE", (unset_env("NCCL_P2P_DISABLE"),), Applicability.UNSAFE),))


def _without_peer_to_peer(name: object) -> bool:
    """A board that offers no peer-to-peer access at all (knowledge table gpu_peer_to_peer)."""
    from tfdoctor.knowledge import table

    return isinstance(name, str) and any(name.startswith(row["name_prefix"])
                                         for row in table("gpu_peer_to_peer").rows)


def _strings(facts: Facts, path: str) -> list[str]:
    """The names the network probe writes (a list, or a mapping keyed by name), else NotChecked: a facts file
    damaged or edited by hand leaves the check "not checked", never crashed (tests/test_properties.py)."""
    value = facts.get(path)
    if isinstance(value, dict):
        return list(value)  # JSON keys are strings
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        held = "a list holding other things than names" if isinstance(value, list) else type(value).__name__
        raise NotChecked(f"{path} is malformed in the facts ({held})")
    return value


def _active_infiniband(facts: Facts) -> list[dict[str, Any]]:
    devices = facts.get("network.infiniband")
    if not isinstance(devices, list):
        raise NotChecked(f"network.infiniband is malformed in the facts ({type(devices).__name__})")
    # A rate that is not a number (a hand-made --facts file) is no active port: never a crash.
    return [d for d in devices if isinstance(d, dict) and type(d.get("active_rate_gbps")) in (int, float)
            and d["active_rate_gbps"] > 0]


@check("DIST102", "nccl-ib-disabled", Severity.WARNING)
def nccl_ib_disabled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds NCCL_IB_DISABLE=1 on a host with an active InfiniBand (or RoCE) port.

    Why is this bad?
    NCCL falls back to TCP sockets: inter-node all-reduce runs at Ethernet speed with the CPU
    copying every byte, often 5-10× slower than RDMA.

    Example:
    NCCL_IB_DISABLE=1 on nodes with 200 Gb/s HDR InfiniBand.

    Fix:
    Unset NCCL_IB_DISABLE.

    Fix safety:
    Unsafe: if it was set to dodge a broken fabric, jobs may fail until the fabric is fixed.
    """
    value = facts.env("NCCL_IB_DISABLE")
    if not _enabled(value):
        return
    active = _active_infiniband(facts)
    if not active:
        return
    ports = [f"{d.get('name', '?')} ({d['active_rate_gbps']:g} Gb/s)" for d in active]
    yield Finding(f"NCCL_IB_DISABLE={value} although {', '.join(ports)} is active: NCCL uses TCP sockets instead",
                  evidence={"env.NCCL_IB_DISABLE": value, "network.infiniband": ports},
                  fixes=(EnvFix("Unset NCCL_IB_DISABLE", (unset_env("NCCL_IB_DISABLE"),), Applicability.UNSAFE),))


def socket_ifname_matches(setting: str, interfaces: list[str]) -> list[str]:
    """The interfaces NCCL would use for NCCL_SOCKET_IFNAME (prefixes; "=" exact; a leading "^" excludes)."""
    text = setting.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    patterns = [p.strip() for p in text.split(",") if p.strip()]

    def hit(name: str) -> bool:
        return any(name == p[1:] if p.startswith("=") else name.startswith(p) for p in patterns)

    return [n for n in interfaces if hit(n) != exclude]


@check("DIST103", "nccl-socket-ifname-missing", Severity.ERROR)
def nccl_socket_ifname_missing(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Matches NCCL_SOCKET_IFNAME (comma-separated prefixes, "=name" exact, "^…" to exclude) against the
    host's network interfaces (/sys/class/net).

    Why is this bad?
    When no interface matches, NCCL fails at initialisation ("no socket interface found") or — with
    an exclusion list — has nothing left to use. Job templates copied between clusters carry the
    old cluster's interface names (ib0, eno1, bond0).

    Example:
    NCCL_SOCKET_IFNAME=ib0 on a node whose interfaces are lo and eth0.

    Fix:
    Unset it (NCCL picks an interface itself, preferring InfiniBand over Ethernet over loopback) or
    name an interface that exists.

    Fix safety:
    Safe: NCCL's own choice works wherever the setting does not.
    """
    setting = facts.env("NCCL_SOCKET_IFNAME")
    if setting is None or not setting.strip():
        return
    interfaces = sorted(_strings(facts, "network.interfaces"))
    if socket_ifname_matches(setting, interfaces):
        return
    yield Finding(f"NCCL_SOCKET_IFNAME={setting} matches none of this host's interfaces ({', '.join(interfaces)})",
                  evidence={"env.NCCL_SOCKET_IFNAME": setting, "network.interfaces": interfaces},
                  fixes=(EnvFix("Unset NCCL_SOCKET_IFNAME", (unset_env("NCCL_SOCKET_IFNAME"),)),))


@check("DIST104", "nccl-debug-verbose", Severity.INFO)
def nccl_debug_verbose(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds NCCL_DEBUG at INFO or TRACE.

    Why is this bad?
    Every rank prints its topology, rings and every communicator's set-up; TRACE logs every call.
    Useful once while debugging, noise (and measurable overhead with TRACE) left on in production.

    Example:
    NCCL_DEBUG=INFO in a job template.

    Fix:
    NCCL_DEBUG=WARN.

    Fix safety:
    Safe: logging only.
    """
    value = facts.env("NCCL_DEBUG")
    if value is None or value.strip().upper() not in ("INFO", "TRACE"):
        return
    yield Finding(f"NCCL_DEBUG={value} logs every communicator's set-up on every rank",
                  evidence={"env.NCCL_DEBUG": value},
                  fixes=(EnvFix("Set NCCL_DEBUG=WARN", (set_env("NCCL_DEBUG", "WARN"),)),))


@check("DIST105", "shm-too-small-for-nccl", Severity.WARNING)
def shm_too_small_for_nccl(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a container with two or more visible GPUs whose /dev/shm is under 1 GiB (or missing).

    Why is this bad?
    NCCL's intra-node transports allocate their buffers in /dev/shm; Docker's default 64 MiB runs
    out and NCCL fails with "Error while creating shared memory segment" or falls back to slower
    paths. Data-loader workers share batches through it too.

    Example:
    `docker run --gpus all` (64 MiB /dev/shm) on an 8-GPU server.

    Fix:
    Start the container with --shm-size=1g (or --ipc=host); on Kubernetes mount an emptyDir with
    medium: Memory at /dev/shm.

    Fix safety:
    Manual: a container start option.
    """
    if not facts.get("host.container.detected"):
        return
    gpus = visible_gpus(facts)
    if len(gpus) < 2:
        return
    mounted, size = facts.get("shm.mounted"), facts.get("shm.size_bytes")
    if mounted and isinstance(size, int) and size >= NCCL_SHM_BYTES:
        return
    what = f"{size / 1024**2:.0f} MiB" if mounted and isinstance(size, int) else "not mounted"
    yield Finding(f"/dev/shm is {what} in a container with {len(gpus)} GPUs; NCCL needs about 1 GiB",
                  evidence={"shm.size_bytes": size if mounted else None, "gpus.visible": len(gpus),
                            "host.container.detected": True},
                  fixes=(AdminFix("Give the container 1 GiB of shared memory",
                                  ("docker run --shm-size=1g ...   # or --ipc=host",),
                                  text="Kubernetes: mount an emptyDir {medium: Memory, sizeLimit: 1Gi} at /dev/shm"),))


def iommu_translating(iommu: dict[str, Any]) -> str | None:
    """Why the IOMMU translates DMA (a description), or None when it is off or in passthrough."""
    if not isinstance(iommu, dict):
        raise NotChecked(f"iommu holds a JSON {type(iommu).__name__}, not an object")
    cmdline = iommu.get("cmdline")
    cmdline = cmdline if isinstance(cmdline, dict) else {}
    if cmdline.get("iommu") == "pt" or cmdline.get("iommu.passthrough") in ("1", "on", "y"):
        return None
    types = iommu.get("group_types") or []
    units = iommu.get("units") or []
    if not (isinstance(types, list) and all(isinstance(t, str) for t in types)
            and isinstance(units, list) and all(isinstance(u, str) for u in units)
            and all(isinstance(v, str) for v in cmdline.values())):
        raise NotChecked("iommu holds values of an unexpected type (a hand-edited facts file?)")
    if types and all(t == "identity" for t in types):
        return None
    if cmdline.get("intel_iommu", "").startswith("off") or cmdline.get("amd_iommu") == "off":
        return None
    if iommu.get("units"):
        return f"IOMMU units {', '.join(iommu['units'])} active" + (f" (groups {', '.join(types)})" if types else "")
    on = [f"{k}={v}" for k, v in cmdline.items() if k in ("intel_iommu", "amd_iommu") and v.startswith("on")]
    return f"kernel command line {' '.join(on)}" if on else None


@check("DIST106", "iommu-translation-on-multi-gpu-host", Severity.WARNING)
def iommu_translation_on_multi_gpu_host(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds the IOMMU translating DMA addresses (/sys/class/iommu populated, or intel_iommu=on /
    amd_iommu=on without iommu=pt) on a host with two or more NVIDIA GPUs.

    Why is this bad?
    With translation on, GPU peer-to-peer traffic is routed up to the root complex (or blocked by
    PCI ACS): NCCL's P2P transfers slow down, and on many platforms collectives hang. NCCL's own
    troubleshooting guide asks for the IOMMU off or in passthrough on bare-metal GPU servers.

    Example:
    An 8-GPU server booted with intel_iommu=on.

    Fix:
    Add iommu=pt to the kernel command line (keep intel_iommu=on if VFIO needs it), reboot; check
    that PCI ACS is disabled in the BIOS.

    Fix safety:
    Manual: kernel parameters and a reboot.
    """
    gpus = all_gpus(facts)
    if len(gpus) < 2:
        return
    iommu = facts.get("iommu")
    why = iommu_translating(iommu)
    if why is None:
        return
    yield Finding(f"the IOMMU translates DMA ({why}) on a host with {len(gpus)} GPUs: peer-to-peer transfers "
                  "slow down or hang",
                  evidence={"iommu.units": iommu.get("units"), "iommu.cmdline": iommu.get("cmdline"),
                            "iommu.group_types": iommu.get("group_types"), "gpus.host": len(gpus)},
                  fixes=(AdminFix("Put the IOMMU in passthrough mode",
                                  ("sudo update-grub   # or: sudo grub2-mkconfig -o /boot/grub2/grub.cfg",
                                   "sudo reboot"),
                                  text="first add iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub; disable PCI "
                                       "ACS in the BIOS if peer-to-peer still fails"),))


@check("DIST108", "param-count-invalid", Severity.WARNING)
def param_count_invalid(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks that TFDOCTOR_PARAMS, the model's parameter count for the all-reduce estimate (DIST107),
    is a number: 340000000, 340_000_000, 25.6M, 1.3B or 7e9.

    Why is this bad?
    The estimate is skipped.

    Example:
    TFDOCTOR_PARAMS=resnet50

    Fix:
    Set it to model.count_params().

    Fix safety:
    Display only.
    """
    raw = facts.env(PARAMS_VARIABLE)
    if raw is None:
        return
    from tfdoctor.derive.allreduce import parse_param_count  # only jobs that state a size pay for the model

    if parse_param_count(raw) is None:
        yield Finding(f"{PARAMS_VARIABLE}={raw!r} is not a parameter count (e.g. 25.6M, 1.3B, 340000000)",
                      evidence={f"env.{PARAMS_VARIABLE}": raw})


def _worker_hosts(facts: Facts) -> tuple[int, str]:
    parsed = _tf_config(facts)
    if parsed is not None and parsed[1] is not None:
        hosts = parsed[1].hosts()
        if hosts:
            return len(hosts), "TF_CONFIG"
    for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        raw = facts.env(name)
        nodes = count(raw) if raw else None
        if nodes:
            return nodes, name
    return 1, "single node"


def _network_link(facts: Facts) -> Link | None:
    from tfdoctor.derive.allreduce import Link

    infiniband = facts.peek("network.infiniband")
    if isinstance(infiniband, list) and not _enabled(facts.env("NCCL_IB_DISABLE")):
        rates = [d["active_rate_gbps"] for d in infiniband
                 if isinstance(d, dict) and isinstance(d.get("active_rate_gbps"), (int, float))
                 and d["active_rate_gbps"]]
        if rates:
            return Link(max(rates) / 8, f"InfiniBand {max(rates):g} Gb/s")
    interfaces = facts.peek("network.interfaces")
    if not isinstance(interfaces, dict):
        return None
    names = [n for n in interfaces if n != "lo"]
    setting = facts.env("NCCL_SOCKET_IFNAME")
    if setting:
        names = socket_ifname_matches(setting, names)
    speeds = [(interfaces[n].get("speed_mbps"), n) for n in names
              if isinstance(interfaces[n], dict) and interfaces[n].get("operstate") == "up"
              and interfaces[n].get("speed_mbps")]
    if not speeds:
        return None
    mbps, name = max(speeds)
    return Link(mbps / 8000, f"{name} {mbps / 1000:g} Gb/s")


@check("DIST107", "expected-allreduce-time", Severity.INFO)
def expected_allreduce_time(facts: Facts) -> Iterator[Finding]:
    """What it does:
    When TFDOCTOR_PARAMS gives the model's parameter count and the job has two or more GPUs (on this
    node, or GPUs × the worker hosts of TF_CONFIG / SLURM_JOB_NUM_NODES), estimates one ring
    all-reduce of the float32 gradients at the line rate of the slowest link: NVLink or PCIe inside
    the node (NVML's link facts; PCIe gen3 x16 assumed when unknown), the InfiniBand or Ethernet
    port between nodes.

    Silent for a cluster with parameter servers, which does not all-reduce.

    Why is this bad?
    It is a figure, not a fault: every step pays at least this much for synchronous data
    parallelism. When it approaches the step time, the job is communication-bound — larger
    batches, gradient compression or a faster link help, more GPUs do not.

    Example:
    TFDOCTOR_PARAMS=340M on 2 nodes × 8 GPUs over 100 Gb/s Ethernet: ≥ 203 ms per step.

    Fix:
    None needed; compare with the measured step time.

    Fix safety:
    Display only.
    """
    raw = facts.env(PARAMS_VARIABLE)
    if raw is None:
        return
    from tfdoctor.derive.allreduce import intra_node_link, parse_param_count, ring_allreduce_seconds

    params = parse_param_count(raw)
    if params is None:
        return
    parsed = _tf_config(facts)
    if parsed is not None and parsed[1] is not None and parsed[1].cluster.get("ps"):
        return  # ParameterServerStrategy: workers push to parameter servers, nothing is all-reduced
    gpus = visible_gpus(facts)
    hosts, hosts_source = _worker_hosts(facts)
    participants = max(len(gpus), 1) * hosts
    if not gpus or participants < 2:
        return
    link = intra_node_link(gpus) if len(gpus) >= 2 else None
    network = _network_link(facts) if hosts > 1 else None
    evidence: dict[str, Any] = {f"env.{PARAMS_VARIABLE}": raw, "gpus.visible": len(gpus), "hosts": hosts,
                                "hosts.source": hosts_source}
    caveat = ""
    if hosts > 1 and network is None:
        caveat = "; the network's speed is unknown, so this counts the GPU links only"
    candidates = [c for c in (link, network) if c is not None]
    if not candidates:
        return
    slowest = min(candidates, key=lambda c: c.gbytes_per_s)
    seconds = ring_allreduce_seconds(params, participants, slowest)
    evidence.update({"link": slowest.description, "allreduce_ms": round(seconds * 1000, 1)})
    yield Finding(
        f"one all-reduce of {params:,} float32 gradients over {participants} GPUs takes at least "
        f"{seconds * 1000:.1f} ms per step (ring, {slowest.description}){caveat}",
        evidence=evidence,
    )



# The jobs whose tasks a multi-worker strategy waits for at start-up (an evaluator runs on its own).
JOINING_JOBS = ("chief", "master", "worker", "ps")


@check("DIST109", "multi-worker-start-waits-for-every-task", Severity.INFO)
def multi_worker_start_waits_for_every_task(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a valid TF_CONFIG whose cluster lists two or more tasks that must join (chief, worker, ps).

    Why is this bad?
    It is not, when every task starts together. But MultiWorkerMirroredStrategy (and
    ParameterServerStrategy) wait at start-up until every task listed in the cluster has connected,
    with no time limit by default: a task that starts late (queued separately, a slow node, a pod
    still pulling its image) holds all the others, and one that never starts makes them wait for ever,
    printing "CreateSession still waiting for response from worker" or nothing at all. tfdoctor sees
    one task; only the run can tell whether the others come.

    Example:
    TF_CONFIG lists worker[0..3] on four nodes submitted as four separate batch jobs.

    Fix:
    To tell: the time from start to the first step on each task, and `tfdoctor explain --log` on a
    waiting task's log. If it hurts: start every task in one allocation (one srun step, one Kubernetes
    Job or TFJob with every replica), list only tasks that really run, and give collectives a timeout
    (tf.distribute.experimental.CommunicationOptions(timeout_seconds=...)) so a lost task fails the job
    instead of hanging it.

    Fix safety:
    Display only: the launch is outside tfdoctor's reach.
    """
    parsed = _tf_config(facts)
    if parsed is None or parsed[1] is None or any(p.kind in ("malformed", "task") for p in parsed[2]):
        return  # DIST001/DIST002 report an unusable TF_CONFIG
    config = parsed[1]
    tasks = {job: len(config.cluster.get(job, [])) for job in JOINING_JOBS if config.cluster.get(job)}
    total = sum(tasks.values())
    if total < 2:
        return
    listed = ", ".join(f"{count} {job}" for job, count in tasks.items())
    yield Finding(
        f"TF_CONFIG lists {total} tasks that must join ({listed}): the strategy waits at start-up until every one "
        "has connected, with no time limit, so one late or missing task holds them all. To tell: the time to "
        "the first step, and `tfdoctor explain --log` on a waiting task's log. If it hurts: start every task in "
        "one allocation and give collectives a timeout",
        evidence={"TF_CONFIG.cluster": {job: list(config.cluster[job]) for job in tasks},
                  "TF_CONFIG.task": f"{config.task_type}[{config.task_index}]"},
        fixes=(AdminFix("Start every task of the cluster together", (), text=(
            "launch all tasks in one allocation (one srun step, one Kubernetes Job/TFJob with every replica); "
            "list in TF_CONFIG only the tasks that really run; set a timeout: "
            "tf.distribute.experimental.CommunicationOptions(timeout_seconds=600)")),),
    )
