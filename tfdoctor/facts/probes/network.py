"""This host's names, addresses and network interfaces: for TF_CONFIG ("is this host in the cluster?"),
NCCL_SOCKET_IFNAME and the all-reduce estimate. Files only (no DNS lookup: it can hang for seconds)."""

from __future__ import annotations

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse_platform import parse_fib_trie_local, parse_hosts_names, parse_ib_rate, parse_if_inet6
from tfdoctor.registry import probe

SYS_NET = "/sys/class/net"
SYS_IB = "/sys/class/infiniband"


def _addresses(machine: Machine) -> list[str] | Unknown:
    v4 = machine.read_text("/proc/net/fib_trie")
    if isinstance(v4, Unknown):
        return v4
    v6 = machine.read_text("/proc/net/if_inet6")
    return parse_fib_trie_local(v4) + (parse_if_inet6(v6) if isinstance(v6, str) else [])


def _interfaces(machine: Machine) -> dict[str, dict[str, object]] | Unknown:
    names = machine.listdir(SYS_NET)
    if isinstance(names, Unknown):
        return names
    interfaces: dict[str, dict[str, object]] = {}
    for name in names:
        state = machine.read_text(f"{SYS_NET}/{name}/operstate")
        speed = machine.read_text(f"{SYS_NET}/{name}/speed")  # EINVAL for down or virtual links
        speed_text = speed.strip() if isinstance(speed, str) else ""
        interfaces[name] = {
            "operstate": state.strip() if isinstance(state, str) else None,
            "speed_mbps": int(speed_text) if speed_text.isdigit() and int(speed_text) > 0 else None,
        }
    return interfaces


def _infiniband(machine: Machine) -> list[dict[str, object]]:
    devices = machine.listdir(SYS_IB)
    if isinstance(devices, Unknown):
        return []  # no InfiniBand driver: a known "none"
    found = []
    for device in devices:
        ports = machine.listdir(f"{SYS_IB}/{device}/ports")
        rates = []
        for port in ports if isinstance(ports, list) else []:
            state = machine.read_text(f"{SYS_IB}/{device}/ports/{port}/state")
            rate = machine.read_text(f"{SYS_IB}/{device}/ports/{port}/rate")
            if isinstance(state, str) and "ACTIVE" in state and isinstance(rate, str):
                value = parse_ib_rate(rate)
                if value:
                    rates.append(value)
        found.append({"name": device, "active_rate_gbps": max(rates) if rates else None})
    return found


@probe("network", timeout=1.0)
def probe_network(machine: Machine) -> dict[str, object]:
    hostname_text = machine.read_text("/proc/sys/kernel/hostname")
    hostname: str | Unknown = hostname_text.strip() if isinstance(hostname_text, str) else hostname_text
    addresses = _addresses(machine)
    names: list[str] | Unknown = [hostname] if isinstance(hostname, str) else hostname
    hosts = machine.read_text("/etc/hosts")
    if isinstance(names, list) and isinstance(hosts, str):
        names += [n for n in parse_hosts_names(hosts, addresses if isinstance(addresses, list) else [],
                                               names[0]) if n not in names]
    return {
        "hostname": hostname,
        "names": names,
        "addresses": addresses,
        "interfaces": _interfaces(machine),
        "infiniband": _infiniband(machine),
    }
