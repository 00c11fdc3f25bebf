"""DIST110–DIST119 — what launchers give each task and what the job's channels go through: the GPU a rank
selects against the GPUs its launcher lets it see, MPI ranks against a host's GPUs, and an HTTP proxy in
front of the gRPC channels between workers (issue 35)."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import all_gpus, visible_gpus
from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# The distributions whose documented TensorFlow set-up selects the GPU by local rank:
# `tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")` (Horovod's Keras and TF2 guides).
LOCAL_RANK_SELECTORS = ("horovod",)


def _local_rank_selector(facts: Facts) -> dict[str, Any]:
    """Evidence that the job picks its GPU as gpus[local_rank]: Horovod in its environment, or horovodrun."""
    evidence: dict[str, Any] = {}
    dists = facts.peek("python.distributions")
    if isinstance(dists, dict):
        for name in LOCAL_RANK_SELECTORS:
            record = dists.get(name)
            if isinstance(record, dict):
                evidence[f"python.distributions.{name}"] = record.get("version")
    if facts.env("HOROVOD_LOCAL_RANK") not in (None, ""):
        evidence["env.HOROVOD_LOCAL_RANK"] = facts.env("HOROVOD_LOCAL_RANK")
    return evidence


@check("DIST110", "local-rank-indexes-past-visible-gpus", Severity.WARNING)
def local_rank_indexes_past_visible_gpus(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a rank whose launcher lets it see exactly one GPU (Slurm's --gpus-per-task=1 or
    --gpu-bind, a per-task CUDA_VISIBLE_DEVICES) while its local rank is above 0, in a job set up to
    select its GPU by local rank: Horovod installed in the job's environment, or started by horovodrun.

    Why is this bad?
    Horovod's TensorFlow guide selects `gpus[hvd.local_rank()]` from
    tf.config.list_physical_devices("GPU"). Where the launcher already gave each task its own GPU, every
    task lists one GPU, numbered 0: local rank 1 asks for gpus[1] and stops with "IndexError: list index
    out of range" (or, guarded by a modulo, every rank is fine only by luck). Rank 0 never fails, so the
    job dies on the other ranks only.

    Example:
    `srun --ntasks-per-node=4 --gpus-per-task=1 python train_hvd.py` on a node with
    ConstrainDevices=yes: SLURM_LOCALID=2, CUDA_VISIBLE_DEVICES=0, Horovod 0.28 installed.

    Fix:
    Select the GPU among those the task sees: `gpus[hvd.local_rank() % len(gpus)]` (or no selection at
    all when one is visible); or let every task see the node's GPUs (`--gpus-per-node` with
    `--gpu-bind=none`) and keep selecting by local rank.

    Fix safety:
    Manual: a change to the script or to how the job is started; shown, never applied.
    """
    from tfdoctor.derive.launcher_gpus import local_rank
    from tfdoctor.derive.process_layout import process_layout

    rank = local_rank(facts)
    if rank is None or rank[0] == 0:
        return
    layout = process_layout(facts)
    if layout.processes < 2:
        return
    visible = visible_gpus(facts)
    if len(visible) != 1:
        return
    selector = _local_rank_selector(facts)
    if not selector:
        return
    yield Finding(
        f"local rank {rank[0]} of {layout.processes} sees one GPU (each task is given its own: "
        f"{_one_gpu_source(facts)}), but "
        "the job selects GPUs by local rank (Horovod's gpus[hvd.local_rank()]): that index is past the only "
        "visible GPU and the rank stops with IndexError",
        evidence={f"env.{rank[1]}": rank[0], **layout.evidence(), "visible_gpus": 1,
                  "env.CUDA_VISIBLE_DEVICES": facts.env("CUDA_VISIBLE_DEVICES"), **selector},
        fixes=(AdminFix("Select the GPU among the ones this task sees", (
            "gpus = tf.config.list_physical_devices('GPU')",
            "tf.config.set_visible_devices(gpus[hvd.local_rank() % len(gpus)], 'GPU')   # index 0 here",
        ), text="or let every task see the node's GPUs: srun --gpus-per-node=<n> --gpu-bind=none …"),),
    )


def _one_gpu_source(facts: Facts) -> str:
    """What gave this task its one GPU, as far as the facts show."""
    pci = facts.peek("gpu_pci.devices")
    listed = facts.peek("nvml.devices")
    if isinstance(pci, list) and isinstance(listed, list) and len(listed) < len(pci):
        return f"NVML lists {len(listed)} of the host's {len(pci)} GPUs, a device cgroup hides the others"
    return f"CUDA_VISIBLE_DEVICES={facts.env('CUDA_VISIBLE_DEVICES')}"


@check("DIST111", "mpi-ranks-exceed-host-gpus", Severity.WARNING)
def mpi_ranks_exceed_host_gpus(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the ranks an MPI launcher put on this host (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS of
    MPICH and Intel MPI's Hydra, PALS_LOCAL_SIZE, PMI_LOCAL_SIZE, HOROVOD_LOCAL_SIZE) with the host's
    NVIDIA GPUs, counted on the PCI bus (which a container's or Slurm's device cgroup does not hide).

    Why is this bad?
    A hostfile line `node1 slots=8`, `-npernode 8` or `--map-by ppr:8:node` on a host with fewer GPUs
    puts several ranks on one GPU: with one-GPU-per-rank code (`gpus[local_rank]`), the ranks past the
    last GPU fail with IndexError, or all of them share GPU memory that TensorFlow reserves whole for
    the first (out of memory at start-up).

    Example:
    `mpirun -np 16 -H node1:8,node2:8 python train.py` on 4-GPU nodes: OMPI_COMM_WORLD_LOCAL_SIZE=8.

    Fix:
    Give each host as many ranks as it has GPUs: `slots=<GPUs>` in the hostfile, `-H node1:4,node2:4`,
    or `--map-by ppr:<GPUs>:node`.

    Fix safety:
    Manual: a change to how the job is started; shown, never applied.
    """
    from tfdoctor.derive.launcher_gpus import gpus_per_task, host_gpu_count, mpi_local_size

    local = mpi_local_size(facts)
    if local is None or local[0] < 2 or gpus_per_task(facts):
        return
    if not visible_gpus(facts):
        return  # a CPU job on a GPU host (or one given no GPU): its ranks do not compete for GPUs
    gpus, source = host_gpu_count(facts, all_gpus(facts))
    if local[0] <= gpus:
        return
    yield Finding(
        f"the MPI launcher put {local[0]} ranks on this host ({local[1]}={local[0]}) but it has {gpus} "
        f"GPU{'s' if gpus != 1 else ''}: ranks share GPUs, and a rank that selects gpus[local_rank] past "
        f"the last one fails",
        evidence={f"env.{local[1]}": local[0], "gpus.host": gpus, "gpus.host_source": source},
        fixes=(AdminFix(f"Start {gpus} rank(s) per host, one per GPU", (
            f"mpirun --map-by ppr:{gpus}:node …   # Open MPI",
            f"mpiexec -ppn {gpus} …   # MPICH, Intel MPI",
        ), text=f"one of these, for the MPI that starts the job; or in the hostfile: <host> slots={gpus}"),),
    )


@check("DIST112", "grpc-proxy-not-bypassed-for-cluster", Severity.WARNING)
def grpc_proxy_not_bypassed_for_cluster(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the HTTP proxy gRPC's core uses for TensorFlow's worker channels — grpc_proxy, else
    https_proxy, else http_proxy (lower case only; an http:// URL, any other scheme is ignored) — and the
    exemptions it honours — no_grpc_proxy, else no_proxy (lower case only): entries matched as a suffix
    of the host name, or as a CIDR range when the host is an IP address. Finds TF_CONFIG cluster hosts
    (several tasks) that no entry exempts.

    Why is this bad?
    gRPC sends a channel to a host that is not exempted through the proxy as an HTTP CONNECT: a
    corporate proxy cannot reach the cluster's private addresses (or refuses the port), and the
    workers wait for each other forever at start-up, with no error. localhost is not exempted by
    default. Upper-case HTTPS_PROXY/NO_PROXY are not read by gRPC's core (nor do NCCL's or Gloo's
    rendezvous sockets go through a proxy, so MASTER_ADDR and NCCL_COMM_ID are not judged here).

    Example:
    https_proxy=http://proxy.corp:3128, no_proxy=localhost,127.0.0.1, TF_CONFIG listing
    gpu021.cluster.local:12345 and gpu022.cluster.local:12345.

    Fix:
    Add the cluster's hosts (or their domain, or their subnet as a CIDR range) to no_proxy — to
    no_grpc_proxy when that is set, since gRPC then reads it instead.

    Fix safety:
    Safe: the exemption only stops traffic to the job's own hosts from going through the proxy.
    """
    raw = facts.env("TF_CONFIG")
    if not raw or not raw.strip():
        return
    proxy = _grpc_proxy(facts)
    if proxy is None:
        return
    from tfdoctor.derive.tf_config import parse_tf_config, split_address

    config, _problems = parse_tf_config(raw)
    if config is None:
        return
    hosts: list[str] = []
    tasks = 0
    for addresses in config.cluster.values():
        for address in addresses:
            if isinstance(address, str) and address.strip():
                tasks += 1
                host = split_address(address)[0].strip()
                if host and host not in hosts:
                    hosts.append(host)
    if tasks < 2:
        return
    exempt_variable = "no_grpc_proxy" if facts.env("no_grpc_proxy") is not None else "no_proxy"
    exemptions = facts.env(exempt_variable) or ""
    missing = [h for h in hosts if not _exempted(h, exemptions)]
    if not missing:
        return
    from tfdoctor.facts.redact import redact_text

    shown = redact_text(proxy[2])  # a proxy URL may carry a password: never in a message
    upper = facts.env("NO_PROXY")
    note = (f"; NO_PROXY={upper} is set, but gRPC reads only the lower-case no_proxy"
            if upper and exempt_variable == "no_proxy" and not exemptions else "")
    merged = ",".join([e.strip() for e in exemptions.split(",") if e.strip()] + missing)
    yield Finding(
        f"gRPC sends TensorFlow's worker channels through the proxy {proxy[1]}={shown} and "
        f"{exempt_variable} does not exempt {', '.join(missing)}: the workers wait for each other at "
        f"start-up{note}",
        evidence={f"env.{proxy[1]}": shown, f"env.{exempt_variable}": facts.env(exempt_variable),
                  "TF_CONFIG.hosts": hosts, "not_exempted": missing},
        fixes=(EnvFix(f"Exempt the cluster's hosts from the proxy in {exempt_variable}",
                      (set_env(exempt_variable, merged),), Applicability.SAFE),),
    )


def _grpc_proxy(facts: Facts) -> tuple[str, str, str] | None:
    """(proxy host, the variable, its value) as gRPC's core picks it, or None when it uses none."""
    import re

    for name in ("grpc_proxy", "https_proxy", "http_proxy"):
        value = facts.env(name)
        if value is None:
            continue
        # The first variable set decides, even empty ("no proxy"); only http:// URLs with a host are used.
        match = re.match(r"http://(?:[^@/\s]*@)?([^/\s:@]+|\[[0-9A-Fa-f:.]+\])", value.strip())
        return (match.group(1), name, value) if match else None
    return None


def _exempted(host: str, exemptions: str) -> bool:
    """gRPC's AddressIncluded: an entry the host name ends with (any case), or a CIDR range holding the
    host when the host is an IP address."""
    import ipaddress

    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    for entry in (e.strip() for e in exemptions.split(",")):
        if not entry:
            continue
        if host.lower().endswith(entry.lower()):
            return True
        if address is not None and "/" in entry:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False
