"""Where CUDA puts libdevice on real machines, as fake trees: Arch Linux's /opt/cuda, a conda environment
with NVIDIA's cuda-nvcc package, Debian's and Ubuntu's nvidia-cuda-toolkit package, and pip TensorFlow
with or without the nvidia-cuda-nvcc wheel. Each layout is the package's own (file lists of the packages)."""

from __future__ import annotations

import json

from support import gpu_scenarios as g
from tfdoctor.testing import FakeRoot

BC = b"BC\xc0\xde"  # LLVM bitcode's magic: the first bytes of a real libdevice.10.bc
CONDA_ENV = f"{g.HOME}/miniconda3/envs/tf"
CONDA_SITE = f"{CONDA_ENV}/lib/python3.11/site-packages"


def pip_tensorflow(root: FakeRoot, version: str, nvcc: bool = True, site: str = g.SITE) -> None:
    """A GPU host with `pip install tensorflow[and-cuda]==<version>`; nvcc=False leaves out the
    nvidia-cuda-nvcc wheel (`pip install tensorflow` with the other CUDA wheels, or an extra without it)."""
    g.driver(root)
    g.process(root)
    g.pip_release(root, version, leave_out=() if nvcc else ("cuda_nvcc",), site=site)


def arch_opt_cuda(root: FakeRoot, release: str = "12.6.3", nvcc: str = "12.6.85") -> str:
    """Arch Linux's `cuda` package: the whole toolkit in /opt/cuda (version.json included), its bin/ put on
    PATH by /etc/profile.d/cuda.sh."""
    base = "/opt/cuda"
    root.write(f"{base}/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": release},
                                                   "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc}}))
    root.write(f"{base}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    root.write(f"{base}/nvvm/libdevice/libdevice.10.bc", BC)
    root.write("/etc/profile.d/cuda.sh", f"export CUDA_PATH={base}\nappend_path '{base}/bin'\n")
    return base


def conda_cuda_nvcc(root: FakeRoot, prefix: str = CONDA_ENV, version: str = "12.6.85") -> None:
    """`conda install -c nvidia cuda-nvcc`: ptxas in $PREFIX/bin, libdevice in $PREFIX/nvvm/libdevice (the
    toolkit's layout under the environment's prefix), the package record in conda-meta."""
    root.write(f"{prefix}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    root.write(f"{prefix}/nvvm/libdevice/libdevice.10.bc", BC)
    root.write(f"{prefix}/conda-meta/cuda-nvcc-{version}-0.json", json.dumps({"name": "cuda-nvcc", "version": version}))
    root.write(f"{prefix}/conda-meta/history", "# cmd: conda install -c nvidia cuda-nvcc\n")


def debian_cuda_toolkit(root: FakeRoot) -> None:
    """Debian's nvidia-cuda-toolkit 11.8.89~11.8.0-5~deb12u1 (Ubuntu's alike): ptxas in /usr/bin, libdevice in
    /usr/lib/nvidia-cuda-toolkit/libdevice, and a CUDA root /usr/lib/cuda whose nvvm/libdevice links there
    (`dpkg -c`: bin/, include/, lib64/ and nvvm/ in /usr/lib/cuda; no version.json)."""
    root.write("/usr/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    root.write("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc", BC)
    for folder in ("bin", "include", "lib64"):
        (root.path / "usr/lib/cuda" / folder).mkdir(parents=True, exist_ok=True)
    (root.path / "usr/lib/cuda/nvvm").mkdir(parents=True, exist_ok=True)
    root.symlink("/usr/lib/cuda/nvvm/libdevice", "../../nvidia-cuda-toolkit/libdevice")
    root.symlink("/usr/lib/cuda/include/cuda.h", "../../../include/cuda.h")
    root.write("/usr/include/cuda.h", "#define CUDA_VERSION 11080\n")
