"""The launcher (`tfdoctor fix --write-launcher run.sh`): a POSIX sh script that execs the user's
command bound to the right NUMA node, with the thread pools sized for that node.

`./run.sh python train.py ARG...` is the whole use; the arguments reach the command unchanged ("$@").
Started with a local-rank variable set (srun, mpirun, torchrun-style launchers), rank r goes to the node
of visible GPU r; without one, the process goes to the node of all its GPUs. Binding uses, in order,
`numactl --cpunodebind=N --membind=N` (unless tfdoctor saw memory binding refused, and only if it works
at run time), `taskset -c CPULIST`, else the OpenMP affinity variables — so the script still binds on a
compute node that lacks a tool the login node had.
"""

from __future__ import annotations

from tfdoctor.derive.numa_placement import LOCAL_RANK_VARIABLES, STEP_SIZE_VARIABLES, LaunchPlan, Slot, launch_plan
from tfdoctor.facts import Facts
from tfdoctor.fixes.quoting import comment_text, sh_quote


def omp_places(cpus: tuple[int, ...]) -> str:
    """OMP_PLACES with one place per CPU, ranges folded: (0,1,2,3,8) -> "{0}:4,{8}"."""
    parts, ordered, i = [], sorted(cpus), 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(f"{{{ordered[i]}}}" + (f":{j - i + 1}" if j > i else ""))
        i = j + 1
    return ",".join(parts)


def _assignments(slot: Slot) -> str:
    node = "" if slot.node is None else str(slot.node)
    return (f"node={sh_quote(node)} cpus={sh_quote(slot.cpulist)} places={sh_quote(omp_places(slot.cpus))} "
            f"intra={slot.threads['TF_NUM_INTRAOP_THREADS']} inter={slot.threads['TF_NUM_INTEROP_THREADS']}")


def _describe(slot: Slot) -> str:
    where = "no binding (its GPUs span nodes or their node is unknown)" if slot.node is None else \
        f"node {slot.node} (CPUs {slot.cpulist})"
    gpus = f"; GPU {','.join(map(str, slot.gpus))}" if slot.gpus else ""
    shared = f"; {slot.sharing} ranks share it" if slot.sharing > 1 else ""
    return f"{where}{gpus}{shared}; {slot.threads['TF_NUM_INTRAOP_THREADS']} intra-op/OpenMP threads"


def _first_set(names: tuple[str, ...]) -> str:
    """${A:-${B:-${C:-}}}: the first of the variables that is set and not empty."""
    expression = ""
    for name in reversed(names):
        expression = f"${{{name}:-{expression}}}"
    return expression


def render_launcher(plan: LaunchPlan, header: str, name: str = "run.sh") -> str:
    lines = [f"#!/bin/sh\n# {comment_text(line)}" if i == 0 else f"# {comment_text(line)}"
             for i, line in enumerate(header.splitlines())]
    name = comment_text(name)  # the file name the user chose: a line break in it must not end the comment
    lines += [
        f"# Use: ./{name} python train.py [ARG...]   (under srun/mpirun: srun ./{name} python train.py)",
        f"# Placement on this host ({plan.nodes} NUMA node(s)):",
        f"#   no local-rank variable: {_describe(plan.single)}",
    ]
    lines += [f"#   local rank {r} (mod {len(plan.ranks)}): {_describe(s)}" for r, s in enumerate(plan.ranks)]
    binding = {"numactl": "numactl --cpunodebind/--membind", "taskset": "taskset -c", "omp": "OpenMP affinity"}
    lines.append(f"# Binding, first that works: {', then '.join(binding[m] for m in plan.methods)}.")
    if plan.membind_error is not None:
        lines.append(f"# (numactl is not used: memory binding was refused: {comment_text(plan.membind_error)})")
    lines += [
        "set -u",
        'if [ "$#" -eq 0 ]; then',
        '  echo "usage: $0 COMMAND [ARG...]" >&2',
        "  exit 2",
        "fi",
        f"rank={_first_set(LOCAL_RANK_VARIABLES)}",
        f"size={_first_set(STEP_SIZE_VARIABLES)}",
        "# A step of one task per node (\"4(x2)\" is Slurm's 4 on each of 2 nodes) runs as a single process.",
        'if [ "${size%%[!0-9]*}" = 1 ]; then',
        "  rank=''",
        "fi",
        "case $rank in",
        f"  '') {_assignments(plan.single)} ;;",
        "  *[!0-9]*) echo \"$0: local rank '$rank' is not a whole number\" >&2; exit 2 ;;",
    ]
    if plan.ranks:
        lines += ["  *)", f"    case $((rank % {len(plan.ranks)})) in"]
        lines += [f"      {r}) {_assignments(s)} ;;" for r, s in enumerate(plan.ranks)]
        lines += ["    esac ;;"]
    else:
        lines.append(f"  *) {_assignments(plan.single)} ;;")
    lines += [
        "esac",
        'export OMP_NUM_THREADS="$intra" TF_NUM_INTRAOP_THREADS="$intra" TF_NUM_INTEROP_THREADS="$inter"',
        'if [ -n "$node" ]; then',
    ]
    if "numactl" in plan.methods:
        lines += [
            '  if command -v numactl >/dev/null 2>&1 && numactl --membind="$node" true >/dev/null 2>&1; then',
            '    exec numactl --cpunodebind="$node" --membind="$node" -- "$@"',
            "  fi",
        ]
    if "taskset" in plan.methods:
        lines += [
            "  if command -v taskset >/dev/null 2>&1; then",
            '    exec taskset -c "$cpus" "$@"',
            "  fi",
        ]
    lines += [
        '  export OMP_PROC_BIND=close OMP_PLACES="$places"',
        "else",
        "  : \"$cpus\" \"$places\"  # no node to bind to: only the thread sizes apply",
        "fi",
        'exec "$@"',
    ]
    return "\n".join(lines) + "\n"


def launcher_for(facts: Facts, header: str, name: str = "run.sh") -> str:
    return render_launcher(launch_plan(facts), header, name)


def write_launcher_file(facts: Facts, path: str, force: bool = False) -> str:
    """Render and write the launcher (executable); returns the line to tell the user.

    Raises WriteError when the file exists (no --force) or the topology needed is unknown."""
    import os

    from tfdoctor import __version__
    from tfdoctor.facts import NotChecked
    from tfdoctor.fixes.write import WriteError, write_file

    try:
        plan = launch_plan(facts)
    except NotChecked as exc:
        raise WriteError(f"cannot write the launcher {path}: {exc.reason}") from None
    header = f"tfdoctor {__version__} launcher for {facts.meta.get('hostname', 'this host')}"
    write_file(path, render_launcher(plan, header, os.path.basename(path) or "run.sh"), force=force, mode=0o755)
    where = "no binding" if plan.single.node is None else f"node {plan.single.node}"
    return (f"tfdoctor: launcher written to {path} ({where} without a local rank; {len(plan.ranks)} rank slot(s); "
            f"binding by {plan.methods[0]})\n")
