"""NUMA binding as a tune dimension, through the NUMA launcher's own binding commands
(tfdoctor.derive.numa_placement): "none", or one node's CPUs and memory, with the first method the launcher
would use (numactl, else taskset). Absent on a one-node host or when no binding tool works."""

from __future__ import annotations

from tfdoctor.facts import Facts, NotChecked


def numa_launchers(facts: Facts) -> dict[str, tuple[str, ...]]:
    from tfdoctor.derive.numa_placement import bind_command, launch_plan, node_slot, numa_nodes

    try:
        nodes = numa_nodes(facts)
        if len(nodes) <= 1:
            return {}
        plan = launch_plan(facts)
        launchers: dict[str, tuple[str, ...]] = {"none": ()}
        for node in nodes:
            prefix = bind_command(plan.methods[0], node_slot(facts, node))
            if prefix:
                launchers[f"node{node.node}"] = tuple(prefix)
    except NotChecked:
        return {}  # topology unknown: nothing to bind to
    return launchers if len(launchers) > 1 else {}
