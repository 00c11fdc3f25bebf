"""What the GPU stack adds to `tfdoctor check`: each GPU probe next to the cpu probe (baseline), on this
machine and on the recorded CUDA-12 pip machine's fake tree; fact gathering with and without them; the
price of importing pynvml (paid only on hosts with an NVIDIA driver); and a whole `tfdoctor check`
whose NVML hangs, next to a normal one. Medians of repeated runs; machines are noisy, read ratios.

    python benchmarks/gpu_probes.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _measure import median_ms, median_of

from tfdoctor.engine import gather_facts
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.cpu import probe_cpu
from tfdoctor.facts.probes.cuda_libs import probe_cuda_libs
from tfdoctor.facts.probes.nvml import probe_gpu_pci, probe_nvml
from tfdoctor.facts.probes.privileges import probe_privileges
from tfdoctor.facts.probes.xla_toolchain import probe_xla_toolchain
from tfdoctor.registry import load_registry

GPU_SECTIONS = ("nvml", "gpu_pci", "cuda_libs", "privileges", "xla_toolchain")
HUNG = ("import sys\nfrom tfdoctor.facts.probes import nvml\nfrom tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml\n"
        "nvml.NVML_OVERRIDE = lambda: FakeNvml([FakeGpu()], hang={'nvmlDeviceGetName'})\n"
        "from tfdoctor.cli import main\nmain(sys.argv[1:])\n")


def probes_line(label: str, machine: Machine) -> None:
    parts = [f"{name} {median_ms(lambda f=func: f(machine)):.2f} ms" for name, func in (
        ("nvml", probe_nvml), ("gpu_pci", probe_gpu_pci), ("cuda_libs", probe_cuda_libs),
        ("privileges", probe_privileges), ("xla_toolchain", probe_xla_toolchain))]
    print(f"{label}: {', '.join(parts)}; cpu probe (baseline) {median_ms(lambda: probe_cpu(machine)):.2f} ms")


def main() -> None:
    live = Machine()
    probes_line("live machine", live)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from support import gpu_scenarios as g

    with tempfile.TemporaryDirectory() as folder:
        scenario = g.HEALTHY_PIP
        root = g.build_root(scenario, Path(folder) / "pip")
        probes_line("fake CUDA-12 pip machine", root.machine(scenario.environment()))
    probes = load_registry().probes
    without = [p for p in probes if p.section not in GPU_SECTIONS]
    print(f"gather_facts, live: all probes {median_ms(lambda: gather_facts(probes, live), 15):.1f} ms, "
          f"without the GPU probes (baseline) {median_ms(lambda: gather_facts(without, live), 15):.1f} ms")
    py = sys.executable
    pynvml, _, _ = median_of([py, "-c", "import pynvml"], 9)
    bare, _, _ = median_of([py, "-c", "pass"], 9)
    print(f"python -c 'import pynvml': {pynvml * 1000:.0f} ms; python -c pass (baseline) {bare * 1000:.0f} ms")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "proc/driver/nvidia").mkdir(parents=True)
        (root / "proc/driver/nvidia/version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
        hung, _, runs = median_of([py, "-c", HUNG, "check", "--root", folder, "--timeout", "5", "--fail-on", "never"],
                                  5)
        normal, _, _ = median_of([py, "-m", "tfdoctor", "check", "--root", folder, "--timeout", "5",
                                  "--fail-on", "never"], 5)
    print(f"tfdoctor check --timeout 5 with NVML hung in a call: {hung:.2f} s (exit {runs[0].returncode}); "
          f"same check, no NVML (baseline) {normal:.2f} s")


if __name__ == "__main__":
    main()
