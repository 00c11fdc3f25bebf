"""Whether this host has anything NVIDIA at all: a loaded driver, a device node, or an NVIDIA GPU on
the PCI bus. The CUDA-library and XLA-toolchain probes skip their scans (most of the pre-job hook's
probing time) on a host with none, where no CUDA library or libdevice can matter."""

from __future__ import annotations

from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.nvml import NVIDIA_VENDOR, nvidia_driver_present

NO_NVIDIA = "no NVIDIA GPU or driver on this host (no /proc/driver/nvidia, /dev/nvidia*, nor NVIDIA PCI device)"


def nvidia_present(machine: Machine) -> bool:
    if nvidia_driver_present(machine) or machine.exists("/etc/nv_tegra_release"):
        return True  # a Jetson's GPU is on no PCI bus: its L4T release shows it
    listing = machine.listdir("/sys/bus/pci/devices")
    if not isinstance(listing, list):
        return True  # cannot tell: examine the libraries rather than miss a GPU
    for address in listing:
        vendor = machine.read_text(f"/sys/bus/pci/devices/{address}/vendor")
        if isinstance(vendor, str) and vendor.strip().lower() == NVIDIA_VENDOR:
            return True
    return False
