"""Expected ring all-reduce time from the model size and the slowest link (pure).

A ring all-reduce moves 2·(n−1)/n of the gradient bytes through every participant's link; at line
rate the time is that volume over the link bandwidth. Real NCCL reaches 70-90 % of line rate, so the
figure is a lower bound: if it is already a large share of a step, the job is communication-bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tfdoctor.derive.gpu_inventory import Gpu

PARAMS_VARIABLE = "TFDOCTOR_PARAMS"
GRADIENT_BYTES = 4  # Keras keeps float32 variables (and gradients) even under mixed precision
# Unidirectional GB/s of one NVLink link by generation (P100: NVLink 1; V100 and newer: 25 GB/s).
NVLINK_GBPS_PER_LINK = {6: 20.0, 7: 25.0, 8: 25.0, 9: 25.0}
# Usable GB/s per PCIe lane after encoding, by generation.
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
ASSUMED_PCIE = (3, 16)

_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_param_count(text: str) -> int | None:
    """ "25.6M", "1.3B", "340000000", "7e9", "340_000_000" → a count; None when not a positive number."""
    cleaned = text.strip().replace("_", "").replace(",", "").lower()
    match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmbgt]?)", cleaned)
    if not match:
        return None
    value = float(match.group(1)) * _SUFFIX[match.group(2)]
    return int(value) if 1 <= value < 1e30 else None  # 1e30 and beyond (inf from 120,000 digits): not a model


@dataclass(frozen=True)
class Link:
    """The slowest link an all-reduce crosses, its bandwidth, and whether that figure is assumed."""

    gbytes_per_s: float
    description: str
    assumed: bool = False


def _active_links(raw: object) -> object:
    if not isinstance(raw, dict):
        return None
    record = raw.get("nvlink")
    return record.get("active_links") if isinstance(record, dict) else raw.get("nvlink_active_links")


def intra_node_link(gpus: list[Gpu]) -> Link:
    """The slowest GPU's link: NVLink when every GPU reports active links, else PCIe.

    Optional NVML device fields: "nvlink" ({"active_links": int, …}) and "pcie" ({"gen_current",
    "width_current", …}) as the nvml probe records them (or the flat "nvlink_active_links", "pcie_link_gen",
    "pcie_link_width"); PCIe gen 3 x16 is assumed when they are missing.
    """
    links = [_active_links(g.raw) for g in gpus]
    if links and all(isinstance(n, int) and n > 0 for n in links):
        per_gpu = []
        for gpu, count in zip(gpus, links, strict=True):
            major = gpu.compute_capability[0] if gpu.compute_capability else 7
            per_gpu.append(count * NVLINK_GBPS_PER_LINK.get(major, 25.0))
        slowest = min(per_gpu)
        return Link(slowest, f"NVLink, {slowest:.0f} GB/s per GPU")
    speeds = []
    assumed = False
    for gpu in gpus:
        raw = gpu.raw if isinstance(gpu.raw, dict) else {}
        pcie = raw.get("pcie") if isinstance(raw.get("pcie"), dict) else {}  # the nvml probe's record
        gen = raw.get("pcie_link_gen", pcie.get("gen_current"))
        width = raw.get("pcie_link_width", pcie.get("width_current"))
        if not (isinstance(gen, int) and isinstance(width, int) and gen in PCIE_GBPS_PER_LANE and width > 0):
            gen, width = ASSUMED_PCIE
            assumed = True
        speeds.append((PCIE_GBPS_PER_LANE[gen] * width, gen, width))
    rate, gen, width = min(speeds)
    return Link(rate, f"PCIe gen{gen} x{width}{' (assumed)' if assumed else ''}, {rate:.1f} GB/s", assumed)


def ring_allreduce_seconds(params: int, participants: int, link: Link) -> float:
    volume = 2 * (participants - 1) / participants * params * GRADIENT_BYTES
    return volume / (link.gbytes_per_s * 1e9)
