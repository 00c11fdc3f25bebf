"""The OpenMP runtimes of the environment, and how the TensorFlow build threads its CPU kernels (pure).

Read from the `openmp` facts (the openmp probe) and the knowledge tables `openmp_runtimes` (families,
what two copies in one process do) and `tensorflow_threading` (which builds start an OpenMP team per
op). Shared by THR102, THR107 and THR108.
"""

from __future__ import annotations

from tfdoctor.facts import Facts, NotChecked
from tfdoctor.knowledge import table_rows
from tfdoctor.records import value_tuple


@value_tuple
class RuntimeCopy:
    """One OpenMP runtime file the process can load, and the distribution that brought it."""

    runtime: str  # "libiomp5", "libomp", "libgomp"
    path: str
    owner: str | None  # the distribution that installed it (RECORD, conda-meta); None: none says so
    owner_version: str | None
    found_by: str  # "record", "walk", "LD_LIBRARY_PATH", "prefix lib"

    @property
    def family(self) -> str:
        return runtime_row(self.runtime).get("family", self.runtime)

    def brought_by(self) -> str:
        if self.owner:
            return f"{self.owner} {self.owner_version}" if self.owner_version else self.owner
        if self.found_by == "LD_LIBRARY_PATH":
            return "no installed package (a folder on LD_LIBRARY_PATH)"
        return "no installed package records it"

    def describe(self) -> str:
        return f"{self.path} ({self.brought_by()})"


def runtime_row(runtime: str) -> dict[str, object]:
    for row in table_rows("openmp_runtimes"):
        if row["runtime"] == runtime:
            return row
    return {}


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def loadable(path: str) -> bool:
    """Whether the loader can load this copy as a runtime: a copy inside a header tree (an `include`
    folder, where TensorFlow's wheel carries files of its build's external/ tree) is on no library path
    and in no RUNPATH, so nothing ever loads it."""
    return "include" not in path.split("/")[:-1]


def openmp_copies(facts: Facts) -> list[RuntimeCopy]:
    """Every runtime copy found that a process can load (`loadable`); raises NotChecked when the scan is
    unknown or not a list of records."""
    runtimes = facts.get("openmp.runtimes")
    if not isinstance(runtimes, list) or not all(
            isinstance(r, dict) and _text(r.get("runtime")) and _text(r.get("path")) for r in runtimes):
        raise NotChecked(f"openmp.runtimes holds {str(runtimes)[:40]!r}, not a list of runtime records")
    return [RuntimeCopy(r["runtime"], r["path"], r.get("owner") if _text(r.get("owner")) else None,
                        r.get("owner_version") if _text(r.get("owner_version")) else None,
                        r.get("found_by") if _text(r.get("found_by")) else "unknown")
            for r in runtimes if loadable(r["path"])]


def scan_incomplete(facts: Facts) -> list[str]:
    value = facts.peek("openmp.incomplete")
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


# -- how the TensorFlow build threads its kernels -------------------------------------------------

EIGEN, OPENMP = "eigen", "openmp"


@value_tuple
class ThreadingModel:
    """Whether TensorFlow's CPU kernels run on Eigen's pool or on OpenMP threads, and why."""

    kind: str  # EIGEN or OPENMP
    why: str  # the build fact that decided it, for the finding's message
    known: bool = True  # False: no TensorFlow build found, EIGEN assumed

    @property
    def per_op_teams(self) -> bool:
        """Each op started by an inter-op thread runs its own team of intra-op (OpenMP) threads."""
        return self.kind == OPENMP


def _tensorflow_distributions(facts: Facts) -> list[tuple[str, str | None]]:
    """(distribution, version) of the TensorFlow builds the facts name, most specific source first."""
    found: list[tuple[str, str | None]] = []
    located = facts.peek("cuda_libs.tensorflow")
    if isinstance(located, dict) and _text(located.get("dist")):
        found.append((str(located["dist"]).replace("_", "-").lower(), located.get("version")))
    if facts.meta.get("root") in (None, "/"):  # under --root the python facts are tfdoctor's own interpreter
        installed = facts.peek("python.distributions")
        if isinstance(installed, dict):
            known = {row["distribution"] for row in table_rows("tensorflow_threading")}
            for name, record in installed.items():
                if name in known:
                    found.append((name, record.get("version") if isinstance(record, dict) else None))
    return found


def linked_runtimes(facts: Facts) -> tuple[dict[str, list[str]], bool]:
    """({TensorFlow shared object: the OpenMP runtimes its DT_NEEDED names}, whether every one was read)."""
    links = facts.peek("openmp.tensorflow_links")
    if not isinstance(links, dict):
        return {}, False
    read = {path: [str(n) for n in needed] for path, needed in links.items() if isinstance(needed, list)}
    return read, bool(read) and len(read) == len(links)


def threading_model(facts: Facts) -> ThreadingModel:
    """OPENMP when the build starts an OpenMP team per op: TensorFlow's own libraries link an OpenMP
    runtime (DT_NEEDED: a build from source or a site's module with --config=mkl, Intel's builds), or the
    build bundles libiomp5 in its own package, or (its libraries unread) an Intel-optimised distribution;
    EIGEN when its libraries were read and link none, or for the stock builds by name."""
    models = {row["distribution"]: row["model"] for row in table_rows("tensorflow_threading")}
    links, all_read = linked_runtimes(facts)
    for path, needed in sorted(links.items()):
        if needed:
            return ThreadingModel(OPENMP, f"the TensorFlow build links {', '.join(needed)} ({path} NEEDs it): each "
                                          "op runs its own OpenMP team")
    try:
        copies = openmp_copies(facts)
    except NotChecked:
        copies = []
    for copy in copies:
        owner = (copy.owner or "").lower()
        if copy.family == "kmp" and (owner in models or "tensorflow" in owner or "/tensorflow/" in copy.path):
            return ThreadingModel(OPENMP, f"the TensorFlow build bundles {copy.runtime} ({copy.path}): "
                                          "each op runs its own OpenMP team")
    if all_read:
        names = ", ".join(p.rsplit("/", 1)[-1] for p in sorted(links))
        return ThreadingModel(EIGEN, f"the TensorFlow build links no OpenMP runtime ({names}): ops share one "
                                     "Eigen intra-op pool")
    for dist, version in _tensorflow_distributions(facts):
        model = models.get(dist)
        label = f"{dist} {version}" if version else dist
        if model == OPENMP:
            return ThreadingModel(OPENMP, f"{label} is an OpenMP-threaded build: each op runs its own OpenMP team")
        if model == EIGEN:
            return ThreadingModel(EIGEN, f"{label} is a stock build: ops share one Eigen intra-op pool")
    return ThreadingModel(EIGEN, "no OpenMP-threaded TensorFlow build found: ops share one Eigen intra-op pool",
                          known=False)


__all__ = ["RuntimeCopy", "ThreadingModel", "linked_runtimes", "loadable", "openmp_copies", "runtime_row",
           "scan_incomplete", "threading_model"]
