"""Fake site-packages trees: dist-info folders shaped like real wheels' (METADATA, WHEEL, top_level.txt,
INSTALLER), TensorFlow's build_info.py, bundled shared libraries. Read by pyenv_snapshot.snapshot(paths=[...])."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
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
# The tag of tensorflow-cpu 2.21.0's cp311 wheel, for the interpreter running the tests (so that a fake
# environment is healthy under any CPython the suite runs on; PKG012 compares tag and interpreter).
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TF_WHEEL_TAG = f"{CP}-{CP}-manylinux_2_27_x86_64"
# Requires-Dist of tensorflow-cpu 2.15.1 (cp311 manylinux_2_17_x86_64), the last release built for numpy 1
# with Keras 2 as tf.keras; and what `pip install tensorflow-cpu==2.15.1` resolved with it.
TF_2_15_REQUIRES = (
    "absl-py (>=1.0.0)", "astunparse (>=1.6.0)", "flatbuffers (>=23.5.26)", "gast (!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1)",
    "google-pasta (>=0.1.1)", "h5py (>=2.9.0)", "libclang (>=13.0.0)", "ml-dtypes (~=0.3.1)",
    "numpy (<2.0.0,>=1.23.5)", "opt-einsum (>=2.3.2)", "packaging",
    "protobuf (!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3)", "setuptools",
    "six (>=1.12.0)", "termcolor (>=1.1.0)", "typing-extensions (>=3.6.6)", "wrapt (<1.15,>=1.11.0)",
    "tensorflow-io-gcs-filesystem (>=0.23.1)", "grpcio (<2.0,>=1.24.3)", "tensorboard (<2.16,>=2.15)",
    "tensorflow-estimator (<2.16,>=2.15.0)", "keras (<2.16,>=2.15.0)",
    'tensorflow-cpu-aws (==2.15.1) ; platform_system == "Linux" and (platform_machine == "arm64" or '
    'platform_machine == "aarch64")',
    'tensorflow-intel (==2.15.1) ; platform_system == "Windows"',
)
TF_2_15_DEPENDENCIES = {
    "numpy": "1.26.4", "keras": "2.15.0", "ml_dtypes": "0.3.2", "protobuf": "4.25.9", "wrapt": "1.14.2",
    "tensorboard": "2.15.2", "tensorflow_estimator": "2.15.0", "tensorflow_io_gcs_filesystem": "0.37.1",
    "h5py": "3.14.0", "flatbuffers": "25.12.19",
}
# Versions of a healthy TensorFlow 2.21 environment (what `pip install tensorflow-cpu==2.21.0` resolved).
HEALTHY_DEPENDENCIES = {
    "absl_py": "2.5.1", "astunparse": "1.6.3", "flatbuffers": "25.12.19", "gast": "0.7.0", "google_pasta": "0.2.0",
    "libclang": "18.1.1", "opt_einsum": "3.4.0", "packaging": "26.3", "protobuf": "7.36.2", "requests": "2.34.2",
    "setuptools": "65.5.0", "six": "1.17.0", "termcolor": "3.3.0", "typing_extensions": "4.16.0", "wrapt": "2.5.2",
    "grpcio": "1.85.1", "keras": "3.15.1", "numpy": "2.4.6", "h5py": "3.14.0", "ml_dtypes": "0.6.0",
}

# The shape of a TensorFlow 2.21 RECORD, cut down: its package files and shared objects (the real one has
# 14865 lines, 77 shared objects and 540 __init__.py).
TF_FILES = ("tensorflow/__init__.py", "tensorflow/python/__init__.py", "tensorflow/python/platform/__init__.py",
            "tensorflow/python/platform/build_info.py")
TF_SHARED_OBJECTS = ("tensorflow/libtensorflow_framework.so.2", "tensorflow/libtensorflow_cc.so.2",
                     "tensorflow/python/_pywrap_tensorflow_internal.so",
                     "tensorflow/python/platform/_pywrap_cpu_feature_guard.so")

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


def record_line(site: Path, relative: str) -> str:
    """A RECORD line as pip writes it: the file's sha256 (urlsafe base64, no padding) and size, read from
    the file under `site`; empty fields for a file that is not there (yet)."""
    path = Path(site) / relative
    if not path.is_file():
        return f"{relative},,\n"
    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relative},sha256={digest},{len(data)}\n"


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
            (folder / "RECORD").write_text("".join(record_line(self.path, r) for r in record)
                                           + f"{folder.name}/RECORD,,\n")
        if installer is not None:
            (folder / "INSTALLER").write_text(installer + "\n")
        if installed_at is not None:
            os.utime(folder, (installed_at, installed_at))
        return self

    def tensorflow(self, name: str = "tensorflow-cpu", version: str = "2.21.0", build_info: str = BUILD_INFO_CPU,
                   requires: tuple[str, ...] = TF_2_21_REQUIRES, requires_python: str = ">=3.10",
                   tags: tuple[str, ...] = (TF_WHEEL_TAG,), installed_at: float | None = None,
                   record: tuple[str, ...] = ()) -> FakeSitePackages:
        """A TensorFlow wheel's files, and a RECORD listing them as pip writes it (paths relative to
        site-packages, the dist-info's own files included, the RECORD itself without hash). `record`:
        further files the build installs (an Intel build's bundled libiomp5), listed in the RECORD too."""
        info = f"{name.replace('-', '_')}-{version}.dist-info"
        self.file("tensorflow/__init__.py", "")
        self.file("tensorflow/python/__init__.py", "")
        self.file("tensorflow/python/platform/__init__.py", "")
        self.file("tensorflow/python/platform/build_info.py", build_info)
        for library in TF_SHARED_OBJECTS:
            self.file(library, "\x7fELF")
        record = (*TF_FILES, *TF_SHARED_OBJECTS, *record, f"{info}/METADATA", f"{info}/WHEEL", f"{info}/top_level.txt",
                  f"{info}/INSTALLER", "../../../bin/toco_from_protos")
        self.dist(name, version, requires, requires_python, top_level=("tensorflow",), tags=tags,
                  installed_at=installed_at, record=record)
        return self

    def healthy_dependencies(self, **versions: str) -> FakeSitePackages:
        for name, version in {**HEALTHY_DEPENDENCIES, **versions}.items():
            self.dist(name, version, top_level=(name,))
        return self

    def tensorflow_2_15(self, name: str = "tensorflow-cpu", **versions: str) -> FakeSitePackages:
        """tensorflow-cpu 2.15.1 with the dependencies pip resolved for it (numpy 1, Keras 2)."""
        self.tensorflow(name=name, version="2.15.1", requires=TF_2_15_REQUIRES, requires_python=">=3.9",
                        tags=(f"{CP}-{CP}-manylinux_2_17_x86_64", f"{CP}-{CP}-manylinux2014_x86_64"))
        return self.healthy_dependencies(**{**TF_2_15_DEPENDENCIES, **versions})

    def file(self, relative: str, text: str = "") -> FakeSitePackages:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return self
