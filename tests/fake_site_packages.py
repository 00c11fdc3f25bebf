"""Fake site-packages trees: dist-info folders shaped like real wheels' (METADATA, WHEEL, top_level.txt,
INSTALLER), TensorFlow's build_info.py, bundled shared libraries. Read by pyenv_snapshot.snapshot(paths=[...])."""

from __future__ import annotations

import os
from pathlib import Path

# Requires-Dist of tensorflow-cpu 2.21.0 (cp311 manylinux_2_27_x86_64), as its METADATA writes them.
TF_2_21_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=25.9.23", "gast!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1",
    "google_pasta>=0.1.1", "libclang>=13.0.0", "opt_einsum>=2.3.2", "packaging", "protobuf<8.0.0,>=6.31.1",
    "requests<3,>=2.21.0", "setuptools", "six>=1.12.0", "termcolor>=1.1.0", "typing_extensions>=3.6.6",
    "wrapt>=1.11.0", "grpcio<2.0,>=1.24.3", "keras>=3.12.0", "numpy>=1.26.0", "h5py<3.15.0,>=3.11.0",
    "ml_dtypes<1.0.0,>=0.5.1",
    'nvidia-cublas-cu12<13.0,>=12.5.3.2; extra == "and-cuda"',
    'nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',
    'tensorflow-io-gcs-filesystem>=0.23.1; (sys_platform != "win32" and python_version < "3.13") and '
    'extra == "gcs-filesystem"',
)
TF_WHEEL_TAG = "cp311-cp311-manylinux_2_27_x86_64"
# Versions of a healthy TensorFlow 2.21 environment (what `pip install tensorflow-cpu==2.21.0` resolved).
HEALTHY_DEPENDENCIES = {
    "absl_py": "2.5.1", "astunparse": "1.6.3", "flatbuffers": "25.12.19", "gast": "0.7.0", "google_pasta": "0.2.0",
    "libclang": "18.1.1", "opt_einsum": "3.4.0", "packaging": "26.3", "protobuf": "7.36.2", "requests": "2.34.2",
    "setuptools": "65.5.0", "six": "1.17.0", "termcolor": "3.3.0", "typing_extensions": "4.16.0", "wrapt": "2.5.2",
    "grpcio": "1.85.1", "keras": "3.15.1", "numpy": "2.4.6", "h5py": "3.14.0", "ml_dtypes": "0.6.0",
}

BUILD_INFO_CPU = (
    '"""Auto-generated module providing information about the build."""\nimport collections\n\n'
    "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), "
    "('is_tensorrt_build', False)])\n"
)
BUILD_INFO_CUDA = (
    "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-18/bin/clang'), "
    "('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), "
    "('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', False)])\n"
)


class FakeSitePackages:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def __str__(self) -> str:
        return str(self.path)

    def dist(self, name: str, version: str, requires: tuple[str, ...] = (), requires_python: str | None = None,
             top_level: tuple[str, ...] | None = None, tags: tuple[str, ...] = ("py3-none-any",),
             installer: str | None = "pip", installed_at: float | None = None,
             record: tuple[str, ...] | None = None) -> FakeSitePackages:
        folder = self.path / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir(parents=True, exist_ok=True)
        headers = ["Metadata-Version: 2.4", f"Name: {name}", f"Version: {version}", "Summary: a fake"]
        if requires_python:
            headers.append(f"Requires-Python: {requires_python}")
        headers += [f"Requires-Dist: {line}" for line in requires]
        (folder / "METADATA").write_text("\n".join(headers) + "\n\nLong description: Requires-Dist: ignored\n")
        (folder / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                      + "".join(f"Tag: {t}\n" for t in tags))
        if top_level is not None:
            (folder / "top_level.txt").write_text("".join(f"{t}\n" for t in top_level))
        if record is not None:
            (folder / "RECORD").write_text("".join(f"{r},sha256=x,1\n" for r in record))
        if installer is not None:
            (folder / "INSTALLER").write_text(installer + "\n")
        if installed_at is not None:
            os.utime(folder, (installed_at, installed_at))
        return self

    def tensorflow(self, name: str = "tensorflow-cpu", version: str = "2.21.0", build_info: str = BUILD_INFO_CPU,
                   requires: tuple[str, ...] = TF_2_21_REQUIRES, requires_python: str = ">=3.10",
                   tags: tuple[str, ...] = (TF_WHEEL_TAG,), installed_at: float | None = None,
                   record: tuple[str, ...] | None = None) -> FakeSitePackages:
        self.dist(name, version, requires, requires_python, top_level=("tensorflow",), tags=tags,
                  installed_at=installed_at, record=record)
        self.file("tensorflow/__init__.py", "")
        self.file("tensorflow/python/platform/build_info.py", build_info)
        return self

    def healthy_dependencies(self, **versions: str) -> FakeSitePackages:
        for name, version in {**HEALTHY_DEPENDENCIES, **versions}.items():
            self.dist(name, version, top_level=(name,))
        return self

    def file(self, relative: str, text: str = "") -> FakeSitePackages:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return self
