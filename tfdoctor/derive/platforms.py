"""Jetson and macOS, derived from facts (pure): the JetPack a Jetson runs and NVIDIA's TensorFlow wheels for
it (knowledge table jetson_tensorflow), the TensorFlow release a tensorflow-metal plug-in is built for
(tensorflow_metal), and whether the inspected Python runs translated by Rosetta 2."""

from __future__ import annotations

from tfdoctor.derive.versions import version_tuple
from tfdoctor.facts import Facts
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

NVIDIA_JETSON_INDEX = "https://developer.download.nvidia.com/compute/redist/jp"


@value_tuple
class JetPack:
    """One JetPack release as the jetson_tensorflow table has it."""

    jetpack: str  # "5.1.2"
    l4t: tuple[str, ...]  # the L4T releases it ships ("35.4.1")
    index: str  # "v512"; "" when NVIDIA published no wheel for this JetPack
    wheels: tuple[str, ...]  # NVIDIA's TensorFlow versions on that index ("2.12.0+nv23.06"); may be empty
    python: str  # the CPython its wheels are built for ("3.8")
    stack: tuple[str, str, str]  # the CUDA, cuDNN and TensorRT major.minor it installs ("11.4", "8.6", "8.5")

    @property
    def index_url(self) -> str:
        return f"{NVIDIA_JETSON_INDEX}/{self.index}"

    def install(self, pip: str, version: str | None = None) -> str:
        """The pip command installing NVIDIA's wheel (the newest on this JetPack's index, or `version`)."""
        wanted = version or self.wheels[-1]
        return f"{pip} install --extra-index-url {self.index_url} 'tensorflow=={wanted}'"


def jetpacks() -> tuple[JetPack, ...]:
    from tfdoctor.knowledge import table_rows

    return tuple(JetPack(str(r["jetpack"]), tuple(r["l4t"]), str(r.get("index", "")), tuple(r["wheels"]),
                         str(r["python"]), (str(r["cuda"]), str(r["cudnn"]), str(r["tensorrt"])))
                 for r in table_rows("jetson_tensorflow"))


def is_jetson(facts: Facts) -> bool:
    return facts.peek("tegra.detected") is True


def l4t_release(facts: Facts) -> str | None:
    release = facts.peek("tegra.l4t.release")
    return release if isinstance(release, str) else None


def jetpack_of(l4t: str | None) -> JetPack | None:
    """The JetPack shipping this L4T release; None when the table has no row for it."""
    return next((j for j in jetpacks() if l4t in j.l4t), None) if l4t else None


def jetpack_with_wheel(version: str) -> JetPack | None:
    """The JetPack whose index holds this exact NVIDIA wheel version ("2.12.0+nv23.06")."""
    return next((j for j in jetpacks() if version in j.wheels), None)


def wheels_for(jetpack: JetPack) -> JetPack | None:
    """The JetPack whose wheels to install on this one: itself when NVIDIA published wheels for it, else the
    newest JetPack with wheels and the same CUDA, cuDNN and TensorRT (JetPack 5.1.3 runs the 5.1.2 wheels);
    None when no JetPack of its stack has any."""
    if jetpack.wheels:
        return jetpack
    same = [j for j in jetpacks() if j.wheels and j.stack == jetpack.stack]
    return same[-1] if same else None


def stack_text(jetpack: JetPack) -> str:
    cuda, cudnn, tensorrt = jetpack.stack
    return f"CUDA {cuda}, cuDNN {cudnn}, TensorRT {tensorrt}"


def nvidia_jetson_build(version: str) -> bool:
    """NVIDIA's Jetson wheels carry the local label +nvYY.MM."""
    return "+nv" in version


def jetson_reason(facts: Facts) -> str | None:
    """Why the checks of discrete NVIDIA GPUs (NVML, PCI, /proc/driver/nvidia) do not apply: this is a
    Jetson, whose GPU is integrated in the Tegra SoC. None when it is not a Jetson."""
    if not is_jetson(facts):
        return None
    model = facts.peek("tegra.model")
    l4t = l4t_release(facts)
    board = model if isinstance(model, str) and model else "a Jetson (Tegra)"
    return (f"{board}{f', L4T R{l4t}' if l4t else ''}: its GPU is integrated in the Tegra SoC (no PCI GPU, "
            "no NVML, no /proc/driver/nvidia); the PLAT checks judge its TensorFlow")


@value_tuple
class MetalRelease:
    metal: str
    tensorflow: str  # the major.minor it is built for
    through: str  # the last major.minor it loads with

    def supports(self, release: tuple[int, ...]) -> bool:
        return version_tuple(self.tensorflow)[:2] <= release[:2] <= version_tuple(self.through)[:2]


def metal_releases() -> tuple[MetalRelease, ...]:
    from tfdoctor.knowledge import table_rows

    rows: tuple[dict[str, Any], ...] = table_rows("tensorflow_metal")
    return tuple(MetalRelease(str(r["metal"]), str(r["tensorflow"]), str(r.get("through") or r["tensorflow"]))
                 for r in rows)


def metal_release(version: str) -> MetalRelease | None:
    return next((m for m in metal_releases() if version_tuple(m.metal)[:3] == version_tuple(version)[:3]), None)


def metal_for(release: tuple[int, ...]) -> MetalRelease | None:
    """The newest tensorflow-metal release that loads with this TensorFlow release, None when none does."""
    fitting = [m for m in metal_releases() if m.supports(release)]
    return fitting[-1] if fitting else None


def rosetta_translated(facts: Facts) -> bool:
    """The inspected Python runs as x86_64 under Rosetta 2 on Apple silicon: its platform.machine() is
    x86_64 (python.machine), or, when that is not recorded, sysctl.proc_translated answered 1."""
    if facts.peek("darwin.apple_silicon") is not True:
        return False
    machine = facts.peek("python.machine")
    if isinstance(machine, str) and machine:
        return machine.lower() in ("x86_64", "amd64", "i386")
    return facts.peek("darwin.translated") is True
