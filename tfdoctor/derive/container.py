"""Which container engine this process runs under, from the privileges probe's signs (pure): the kind
decides how a capability is granted (docker/podman run flags, a Kubernetes securityContext)."""

from __future__ import annotations

from tfdoctor.facts import Facts

# Docker's default effective set (CAP_CHOWN … CAP_SETFCAP, without CAP_SYS_ADMIN); containerd and
# CRI-O grant the same set to a Kubernetes container that does not ask for more.
DEFAULT_CONTAINER_CAPS = "00000000a80425fb"


def container_signs(facts: Facts) -> list[str]:
    signs = facts.peek("privileges.container")
    host = facts.peek("host.container.signs")
    found = [s for s in signs if isinstance(s, str)] if isinstance(signs, list) else []
    found += [s for s in host if isinstance(s, str) and s not in found] if isinstance(host, list) else []
    return found


def container_kind(facts: Facts) -> str | None:
    """"kubernetes", "podman", "docker", "container" (signs of one, engine unknown), or None (none seen)."""
    signs = container_signs(facts)
    if not signs:
        return None
    if "KUBERNETES_SERVICE_HOST" in signs or any(s.endswith(":kubepods") for s in signs):
        return "kubernetes"
    if "/run/.containerenv" in signs or any(s.endswith(":libpod") for s in signs):
        return "podman"
    if "/.dockerenv" in signs or any(s.endswith(":docker") for s in signs):
        return "docker"
    return "container"
