"""CUPTI — the profiling library and the privileges it needs: the first two steps of TensorFlow's
Profiler guide. Neither stops training: each is an info unless the job is set up to profile
(tfdoctor.derive.profiling_intent)."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.container import DEFAULT_CONTAINER_CAPS, container_kind, container_signs
from tfdoctor.derive.profiling_intent import intends_to_profile
from tfdoctor.derive.tf_build import cuda_gpu_setup, version_tuple, wanted_sonames
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, EnvFix, Finding, Severity
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

    from tfdoctor.derive.resolvable_libraries import LibraryCopy
    from tfdoctor.derive.tf_build import TfBuild

# The loader model (tfdoctor.derive.resolvable_libraries) is imported past each check's `cuda_gpu_setup`
# gate: a CPU-only TensorFlow never pays for it.
CUPTI_STEM = "libcupti.so"
PERFMON_DRIVER = (565,)  # from R565 CAP_PERFMON opens the counters too


@check("CUPTI001", "cupti-not-resolvable", Severity.WARNING)
def cupti_not_resolvable(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Resolves the CUPTI name the TensorFlow build asks for (libcupti.so.12 for CUDA 12, libcupti.so.11.8
    for CUDA 11.8 …, then the unversioned libcupti.so) the way the loader will, and looks for CUPTI
    elsewhere on disk: the toolkit's extras/CUPTI/lib64, the pip nvidia-cuda-cupti wheel.

    Why is this bad?
    Without CUPTI the TensorFlow Profiler records no GPU activity ("Failed to load libcupti (is it
    installed and accessible?)"): the trace shows host work only. Toolkits keep CUPTI in
    extras/CUPTI/lib64, off every default path, and some ship it only under a date-versioned name
    (libcupti.so.2022.4.0) that no link with the CUDA-versioned name points to.

    TensorFlow loads CUPTI only when a profiler starts: training never needs it. So this is a warning
    when the job is set up to profile (a profiler plugin installed: tensorboard-plugin-profile, xprof or
    a TensorBoard before 2.2; TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL or TF_GPU_CUPTI_USE_ACTIVITY_API set;
    `tfdoctor profile`), and an info otherwise. An info rather than nothing: a profiler started from
    code (tf.profiler.experimental.start, the Keras TensorBoard callback's profile_batch) is invisible
    here, and whoever starts one later finds why its trace lacks the GPU; but a warning on every
    training job that never profiles would be a false alarm in each batch log.

    Example:
    CUDA 11.8 with CUPTI in /usr/local/cuda-11.8/extras/CUPTI/lib64 and LD_LIBRARY_PATH without it.

    Fix:
    Put the CUPTI folder first on LD_LIBRARY_PATH; when only another name exists, create the
    CUDA-versioned link next to it first (needs write access to that folder); when CUPTI is absent,
    install the nvidia-cuda-cupti wheel the TensorFlow build pins.

    Fix safety:
    Safe: the prepended folder holds the library TensorFlow asks for. The link and install are manual.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    name = wanted_sonames(build).get("cupti")
    if name is None:
        return
    from tfdoctor.derive.resolvable_libraries import LibraryView, prefer_copy, put_folder_first

    view = LibraryView(facts, "cupti")
    if view.resolved(name) or view.resolved(CUPTI_STEM):
        return
    profiling = intends_to_profile(facts)
    severity = Severity.WARNING if profiling else Severity.INFO
    evidence: dict[str, Any] = {"library": name, "cuda_libs.ld_library_path": view.ld_library_path,
                                "profiler_installed": profiling}
    purpose = "the TensorFlow Profiler will record no GPU activity" if profiling else \
        "a TensorFlow Profiler would record no GPU activity (nothing here is set up to profile: training is unaffected)"
    copies = view.unresolvable(name) + view.unresolvable(CUPTI_STEM)
    if copies:
        best = prefer_copy(copies)
        evidence["found_at"] = [c.path for c in copies]
        yield Finding(f"{name} is not resolvable but exists in {best.dir}: {purpose}", evidence=evidence,
                      fixes=(put_folder_first(best.dir, "the CUPTI folder"),), severity=severity)
        return
    others = view.other_names(CUPTI_STEM, name)
    if others:
        target = max(others, key=lambda c: version_tuple(c.version))
        evidence["found_at"] = [c.path for c in others]
        link = f"{target.dir}/{name}"
        fixes = (AdminFix(f"Create {link} and put {target.dir} on LD_LIBRARY_PATH", (
            f"ln -s {target.path.rsplit('/', 1)[1]} {link}",
            f"export LD_LIBRARY_PATH={target.dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
        )),)
        if target.dir not in view.ld_library_path:
            fixes = (*fixes, put_folder_first(target.dir, "after the link exists"))
        yield Finding(
            f"CUPTI exists only as {', '.join(c.path for c in others)}, not under the name {name} this "
            f"TensorFlow build loads: {purpose}", evidence=evidence, fixes=fixes, severity=severity)
        return
    yield Finding(f"{name} is not installed anywhere tfdoctor looked: {purpose}", evidence=evidence,
                  fixes=(_cupti_install(build),),
                  severity=severity)


@check("CUPTI002", "cupti-restricted-to-admin-users", Severity.WARNING)
def cupti_restricted_to_admin_users(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads RmProfilingAdminOnly from /proc/driver/nvidia/params (the running nvidia module's
    NVreg_RestrictProfilingToAdminUsers), and this process's effective capabilities (CapEff of
    /proc/self/status) and container signs (/.dockerenv, /run/.containerenv, the engine in the cgroup
    path, KUBERNETES_SERVICE_HOST).

    Why is this bad?
    Since driver 418.43 the GPU performance counters are for administrators only by default: the
    driver asks for CAP_SYS_ADMIN (or CAP_PERFMON from driver R565), not uid 0. Root inside a default
    Docker, Podman, containerd or Kubernetes container has CapEff 00000000a80425fb — no CAP_SYS_ADMIN —
    and gets CUPTI_ERROR_INSUFFICIENT_PRIVILEGES like any user; a --privileged container has
    000001ffffffffff (0000003fffffffff on older kernels). The TensorFlow Profiler then shows no GPU
    kernels. It is an error when the job is set up to profile (a profiler plugin such as
    tensorboard-plugin-profile or xprof installed, or TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL /
    TF_GPU_CUPTI_USE_ACTIVITY_API set), an info otherwise: training is not affected, only profiling
    (and the restriction is the driver's default, so a healthy machine without a profiler is not
    warned about it).

    Example:
    RmProfilingAdminOnly: 1, uid 0 in `docker run --gpus all` (CapEff 00000000a80425fb).

    Fix:
    In a container: start it with `--cap-add SYS_ADMIN` (Docker, Podman; or --privileged), or on
    Kubernetes add `securityContext: {capabilities: {add: ["SYS_ADMIN"]}}` to the container. On the
    host: `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in a file under /etc/modprobe.d,
    then rebuild the initramfs and reboot (or reload the nvidia modules).

    Fix safety:
    Manual: both are an administrator's decision (SYS_ADMIN widens what the container may do;
    unrestricted counters can leak information between users of one GPU).
    """
    if cuda_gpu_setup(facts) is None:
        return
    restricted = facts.get("privileges.rm_profiling_admin_only")
    if restricted != 1:
        return
    euid = facts.peek("privileges.euid")
    cap_eff = facts.peek("privileges.cap_eff")
    sys_admin = facts.peek("privileges.cap_sys_admin")
    perfmon = facts.peek("privileges.cap_perfmon")
    kind = container_kind(facts)
    driver = facts.peek("nvml.driver_version")
    if isinstance(sys_admin, bool):
        allowed = sys_admin or (perfmon is True and version_tuple(driver)[:1] >= PERFMON_DRIVER)
        holder = f"CapEff {cap_eff}"
    elif euid == 0 and kind is None:
        allowed, holder = True, "uid 0 on the host"  # capabilities unreadable: host root has them all
    else:
        raise NotChecked(f"effective capabilities unknown ({getattr(sys_admin, 'reason', 'not collected')})")
    if allowed:
        return
    configured = facts.peek("privileges.modprobe_restrict_profiling") or []
    configured = configured if isinstance(configured, list) else []
    profiling = intends_to_profile(facts)
    fixes = _container_fixes(kind)
    fixes.append(AdminFix("Allow profiling for all users on the host", (
        "echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/nvidia-profiling.conf",
        "sudo update-initramfs -u   # dracut -f on RHEL-like systems",
        "sudo reboot   # or, with no process on the GPUs: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
        "&& sudo modprobe nvidia",
    )))
    note = ""
    if any(c.get("value") == "0" for c in configured if isinstance(c, dict)):
        note = " (modprobe.d already sets NVreg_RestrictProfilingToAdminUsers=0: reload the module or reboot)"
    who = f"uid {euid}" + (f" in a {kind} container" if kind and kind != "container" else
                           " in a container" if kind else "")
    default = " (the default set of a container)" if cap_eff == DEFAULT_CONTAINER_CAPS else ""
    yield Finding(
        f"GPU profiling is restricted to administrators (RmProfilingAdminOnly: 1) and this process ({who}, "
        f"{holder}{default}) has no CAP_SYS_ADMIN: CUPTI cannot trace GPU kernels{note}"
        + ("" if profiling else "; this matters only if you profile"),
        evidence={"privileges.rm_profiling_admin_only": restricted, "privileges.euid": euid,
                  "privileges.cap_eff": cap_eff, "privileges.cap_sys_admin": sys_admin,
                  "privileges.container": container_signs(facts), "container_kind": kind,
                  "profiler_installed": profiling},
        fixes=tuple(fixes),
        severity=Severity.ERROR if profiling else Severity.INFO)


def _cupti_install(build: TfBuild) -> AdminFix:
    hint = build.install_hint("cupti")  # a pip command, or NVIDIA's installers in words when no wheel exists
    if hint.startswith("pip "):
        return AdminFix(f"Install CUPTI for CUDA {build.cuda_version}", (hint,))
    return AdminFix(f"Install CUPTI for CUDA {build.cuda_version}", (), text=hint)


def _container_fixes(kind: str | None) -> list[AdminFix]:
    """How this container's launcher grants CAP_SYS_ADMIN (the container's own processes cannot)."""
    if kind == "kubernetes":
        return [AdminFix("Grant SYS_ADMIN in the pod spec", (), text=(
            "in the container's spec: securityContext: {capabilities: {add: [\"SYS_ADMIN\"]}} (or privileged: true)"))]
    if kind in ("docker", "podman"):
        return [AdminFix(f"Start the {kind} container with SYS_ADMIN", (
            f"{kind} run --cap-add SYS_ADMIN …   # or --privileged",))]
    if kind == "container":
        return [AdminFix("Start the container with SYS_ADMIN", ("docker run --cap-add SYS_ADMIN …   # or podman run",),
                         text="Kubernetes: securityContext.capabilities.add: [\"SYS_ADMIN\"]")]
    return []


def cupti_cuda(facts: Facts, copy: LibraryCopy) -> tuple[str | None, str]:
    """The CUDA version a CUPTI copy belongs to, and how that is known: the toolkit whose folder holds it
    (links followed: /usr/local/cuda -> cuda-11.8), the nvidia-cuda-cupti wheel's version, or a file
    name that carries the CUDA version (dated names, libcupti.so.2023.2.2, say nothing)."""
    kits = facts.peek("cuda_libs.toolkits")
    for kit in kits if isinstance(kits, list) else []:
        if not isinstance(kit, dict) or not isinstance(kit.get("path"), str):
            continue
        roots = [kit["path"], *([kit["target"]] if isinstance(kit.get("target"), str) else [])]
        if any(copy.dir == r or copy.dir.startswith(r.rstrip("/") + "/") for r in roots) and kit.get("version"):
            return str(kit["version"]), f"toolkit {kit['path']}" + (f" -> {kit['target']}" if kit.get("target") else "")
    if copy.origin == "pip wheel" and copy.version:
        return copy.version, "the nvidia-cuda-cupti wheel"
    parts = version_tuple(copy.version)
    if parts and parts[0] < 100:  # 11.8.87, not 2022.3.0
        return copy.version, "its file name"
    return None, "no toolkit, wheel or CUDA-numbered file name says"


def same_generation(have: str, build_cuda: str) -> bool:
    """CUPTI of the build's CUDA: the same major from CUDA 12 (libcupti.so.12), the same major.minor before
    (libcupti.so.11.8 is CUDA 11.8's)."""
    need = version_tuple(build_cuda)[:2]
    width = 1 if need and need[0] >= 12 else 2
    return version_tuple(have)[:width] == need[:width]


@check("CUPTI003", "cupti-of-another-cuda", Severity.WARNING)
def cupti_of_another_cuda(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds the CUPTI the loader gives TensorFlow (the CUDA-versioned name, else the unversioned
    libcupti.so) and which CUDA it belongs to: the toolkit whose folder holds it (following
    /usr/local/cuda to its target), the nvidia-cuda-cupti wheel's version, or its file name. It must be
    the build's CUDA (the same major from CUDA 12, the same major.minor before).

    Why is this bad?
    An unversioned libcupti.so link, or /usr/local/cuda pointing at another toolkit, hands TensorFlow
    the CUPTI of a different CUDA: it fails to initialise ("CUPTI could not be loaded or symbol could
    not be found", CUPTI_ERROR_UNKNOWN) or records nothing, and the Profiler shows no GPU activity. An
    error when a profiler plugin is installed, a warning otherwise.

    Example:
    TensorFlow 2.15 (CUDA 12.2) with LD_LIBRARY_PATH=/usr/local/cuda/extras/CUPTI/lib64 and
    /usr/local/cuda -> cuda-11.8: libcupti.so resolves to CUDA 11.8's CUPTI.

    Fix:
    Put the folder of a CUPTI of the build's CUDA first on LD_LIBRARY_PATH (a toolkit's
    extras/CUPTI/lib64 or the nvidia-cuda-cupti wheel); when that toolkit has only the dated file,
    create the versioned link (admin); when none is on disk, install the wheel the build pins.

    Fix safety:
    Safe: the prepended folder holds the CUPTI of the build's own CUDA. Links and installs are manual.
    """
    build = cuda_gpu_setup(facts)
    if build is None or not build.cuda_version:
        return
    name = wanted_sonames(build).get("cupti")
    if name is None:
        return
    from tfdoctor.derive.resolvable_libraries import LibraryView, prefer_copy, put_folder_first

    view = LibraryView(facts, "cupti")
    asked = name if view.resolved(name) else CUPTI_STEM
    resolved = view.resolved(asked)
    if not resolved:
        return  # CUPTI001: nothing resolves
    copy = view.copy_at(resolved["path"])
    if copy is None:
        return
    have, how = cupti_cuda(facts, copy)
    if have is None:
        raise NotChecked(f"the CUDA version of {resolved['path']} is unknown ({how})")
    if same_generation(have, build.cuda_version):
        return
    profiling = intends_to_profile(facts)
    right = [c for c in view.on_disk(name) + view.on_disk(CUPTI_STEM)
             if not c.broken and c.path != copy.path and (cuda := cupti_cuda(facts, c)[0])
             and same_generation(cuda, build.cuda_version)]
    evidence: dict[str, Any] = {"library": name, "asked_as": asked, "resolved": resolved["path"],
                                "via": resolved.get("via"), "resolved_cuda": have, "identified_by": how,
                                "tensorflow.cuda_version": build.cuda_version, "profiler_installed": profiling}
    fixes: tuple[EnvFix | AdminFix, ...]
    if right:
        best = prefer_copy(right)
        evidence["right_copy"] = best.path
        fixes = (put_folder_first(best.dir, f"it holds the CUPTI of CUDA {cupti_cuda(facts, best)[0]}"),)
    else:
        fixes = (_cupti_install(build),)
    yield Finding(
        f"TensorFlow (CUDA {build.cuda_version}) loads {asked}, and the loader gives it {resolved['path']} "
        f"(via {resolved.get('via')}), the CUPTI of CUDA {have} ({how}): the Profiler will record no GPU activity",
        evidence=evidence, fixes=fixes, severity=Severity.ERROR if profiling else Severity.WARNING)
