"""Does `tfdoctor check --python` agree with reality? Real virtual environments, real TensorFlow wheels.

    python benchmarks/python_env_truth.py [--cache /tmp/tfdoctor-pyenv-bench] [--only NAME ...] [--out FILE]
        [--baseline PYTHON] [--truth-cache FILE]

Builds (once, cached under --cache) three virtual environments of this interpreter: tensorflow-cpu 2.21.0
(the newest, built for numpy 2, Keras 3 as tf.keras), tensorflow-cpu 2.15.1 (the last built for
numpy 1, Keras 2 as tf.keras) and intel-tensorflow 2.14.0 (Intel's build; its AVX-512 twin is swapped in
for one situation). Puts each in a known state (one situation at a time, undone afterwards),
establishes the truth by importing TensorFlow and running a one-step Keras fit plus the import the
situation concerns, runs `tfdoctor check --python` on it, and prints per situation whether tfdoctor
agreed: it predicts "broken" when it reports an error-level finding, and for a broken situation it must
name the expected code. Wheels come from pip's index once (`pip download`), then from --cache/wheels
with --no-index. Heavy: ~1.5 GB of disk, about 20 s of TensorFlow import per situation.

--baseline PYTHON runs a second tfdoctor (another checkout's interpreter, `PYTHON -m tfdoctor`) on the same
state of each situation, so two versions of the checks are compared on the same environments in one run.
--truth-cache FILE keeps each situation's truth (it does not depend on tfdoctor): a later run with the same
file sets the state up and runs only the diagnoses.
--apply-fixes applies, in each situation the truth found broken, the fixes tfdoctor prints for its errors (its
variable changes, then each command, pip reading the wheel folder), and runs the truth and tfdoctor again: the
fix repairs the environment when both then say it works.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = sys.executable
TFDOCTOR = [sys.executable, "-m", "tfdoctor"]
NEW, OLD = "2.21.0", "2.15.1"
PREVIOUS = "2.20.0"  # protobuf>=5.28.0 without a cap, generated code of protobuf 5.28.3
# The releases between (issue 36 item 5): 2.17 built for numpy 1 (numpy<2.0.0, ml-dtypes<0.5.0, protobuf<5),
# 2.18 and 2.19 for numpy 2 with numpy and protobuf capped (numpy<2.1.0 / <2.2.0, protobuf<6).
R17, R18, R19 = "2.17.1", "2.18.1", "2.19.1"


def _has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return " avx512f" in handle.read(1 << 20)
    except OSError:
        return False


HAS_AVX512 = _has_avx512()
INTEL = "intel-2.14.0"  # intel-tensorflow 2.14.0 (Intel's build), with numpy held below 2
# Downloaded once into --cache/wheels (and a cp310 numpy for the copied-site-packages situation).
DOWNLOADS = [
    ("tensorflow-cpu==2.21.0", False), ("tensorflow-cpu==2.15.1", False), ("transformers<5", False),
    ("tf-keras==2.21.0", True), ("tensorflow==2.21.0", True), ("numpy==1.25.2", True), ("numpy==1.26.4", True),
    ("numpy==2.1.3", True), ("keras==3.11.3", True), ("keras==2.15.0", True), ("keras==3.6.0", True),
    ("protobuf==5.29.5", True), ("ml-dtypes==0.4.1", True), ("h5py==3.15.1", True), ("tensorboard==2.16.2", True),
    ("wrapt==1.16.0", True), ("intel-tensorflow-avx512==2.14.0", True), ("intel-tensorflow==2.14.0", False),
    ("tensorflow-cpu==2.20.0", False), ("tf-keras==2.20.1", True), ("tf-keras==2.19.0", True),
    ("tf-keras==2.18.0", True), ("tf-keras==2.17.0", True), ("protobuf==4.25.8", True), ("protobuf==6.33.6", True),
    ("protobuf==7.34.0", True), ("ml-dtypes==0.3.2", True), ("protobuf==5.28.0", True),
    ("ml-dtypes==0.5.4", True), ("ml-dtypes==0.6.0", True), ("ml-dtypes==0.7.0", True),
    ("tensorflow-cpu==2.17.1", False), ("tensorflow-cpu==2.18.1", False), ("tensorflow-cpu==2.19.1", False),
    ("numpy==2.0.2", True), ("numpy==2.2.6", True), ("tensorflow-text==2.20.0", True),
    ("tensorflow-text==2.21.0", True), ("tensorflow-addons==0.23.0", True), ("typeguard<3", True),
    ("tensorflow-io==0.37.1", True), ("jax==0.4.38", True), ("jaxlib==0.4.38", True), ("ml-dtypes==0.2.0", True),
    ("tensorflow-text==2.21.1", True),
]
# What "tf-keras works" means (issue 27 item 2): with TF_USE_LEGACY_KERAS=1 tf.keras is tf_keras; it trains
# (above), trains again with the callbacks that track a best value (tf-keras 2.17 initialises them with np.Inf,
# which numpy 2 removed), then saves and loads the model as .h5, .keras and a SavedModel.
SAVE_AND_LOAD = """
import tempfile, tf_keras
folder = tempfile.mkdtemp()
assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__
callbacks = [tf.keras.callbacks.EarlyStopping(monitor="loss"), tf.keras.callbacks.ReduceLROnPlateau(monitor="loss"),
             tf.keras.callbacks.ModelCheckpoint(f"{folder}/best.h5", monitor="loss", save_best_only=True)]
model.fit(np.zeros((8, 4)), np.zeros((8, 1)), epochs=1, steps_per_epoch=1, verbose=0, callbacks=callbacks)
for name in ("m.h5", "m.keras"):
    model.save(f"{folder}/{name}")
    tf.keras.models.load_model(f"{folder}/{name}")
tf.saved_model.save(model, f"{folder}/saved")
tf.saved_model.load(f"{folder}/saved")
"""
TRUTH = """
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(np.zeros((8, 4)), np.zeros((8, 1)), epochs=1, steps_per_epoch=1, verbose=0)
{extra}
print("TRUTH-OK")
"""


class Venv:
    def __init__(self, root: Path, wheels: Path, tensorflow: str) -> None:
        self.root, self.wheels, self.tensorflow = root, wheels, tensorflow
        self.python = root / "bin" / "python"
        # What `pip install` is given to make the environment: tensorflow-cpu==X, or Intel's build
        # (whose numpy>=1.23.5 has no cap: numpy is held below 2 as its users had to).
        self.requirements = (["intel-tensorflow==2.14.0", "numpy<2"] if tensorflow == INTEL
                             else [f"tensorflow-cpu=={tensorflow}"])

    def system_site_packages(self, visible: bool) -> None:
        """Turn the user site on or off (pyvenv.cfg's include-system-site-packages), as a venv made with
        --system-site-packages has it."""
        config = self.root / "pyvenv.cfg"
        lines = [line for line in config.read_text().splitlines() if not line.startswith("include-system-site")]
        lines.append(f"include-system-site-packages = {'true' if visible else 'false'}")
        config.write_text("\n".join(lines) + "\n")

    @property
    def site(self) -> Path:
        return next(self.root.glob("lib/python3*/site-packages"))

    def pip(self, *args: str) -> None:
        command = [str(self.python), "-m", "pip", "-q", "--disable-pip-version-check", args[0]]
        if args[0] == "install":
            command += ["--no-index", "--find-links", str(self.wheels)]
        command += args[1:]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pip {' '.join(args)} failed: {done.stderr.strip()[-400:]}")

    def ensure(self) -> None:
        if (self.root / "tf-ready").exists():
            return
        shutil.rmtree(self.root, ignore_errors=True)
        subprocess.run([PYTHON, "-m", "venv", str(self.root)], check=True, timeout=300)
        self.pip("install", *self.requirements)
        frozen = subprocess.run([str(self.python), "-m", "pip", "freeze"], capture_output=True, text=True,
                                check=True, timeout=300).stdout
        (self.root / "base.txt").write_text(frozen)
        (self.root / "tf-ready").write_text(self.tensorflow)

    def frozen(self, text: str | None = None) -> dict[str, str]:
        """name -> `name==version` of what is installed (or of a saved `pip freeze`)."""
        if text is None:
            text = subprocess.run([str(self.python), "-m", "pip", "freeze"], capture_output=True, text=True,
                                  check=True, timeout=300).stdout
        return {line.split("==")[0].lower().replace("_", "-"): line.strip() for line in text.splitlines()
                if "==" in line}

    def reset(self) -> None:
        """Back to what `pip install tensorflow-cpu==X` resolved: every package, TensorFlow included (a fix applied
        by --apply-fixes may have replaced it), installed again at its base version, and what was added removed."""
        base, now = self.frozen((self.root / "base.txt").read_text()), self.frozen()
        added = [name for name in now if name not in base]
        if added:
            self.pip("uninstall", "-y", *added)
        changed = [line for name, line in base.items() if now.get(name) != line or name in TOUCHED]
        if changed:
            self.pip("install", "--no-deps", *changed)

    def reinstall_tensorflow(self) -> None:
        self.pip("install", "--force-reinstall", "--no-deps", self.requirements[0])


# Packages the situations change; restored to the base version after each.
TOUCHED = ("numpy", "keras", "protobuf", "ml-dtypes", "h5py", "wrapt", "libclang", "tensorboard")



@dataclass
class Situation:
    name: str
    tensorflow: str
    healthy: bool
    expect: tuple[str, ...] = ()  # codes a broken situation must produce
    setup: Callable[[Venv, Path], dict[str, str]] = lambda venv, scratch: {}
    teardown: Callable[[Venv, Path], None] | None = None
    extra: str = ""  # the import the situation concerns
    notes: list[str] = field(default_factory=list)


def pip_state(*args: str) -> Callable[[Venv, Path], dict[str, str]]:
    def setup(venv: Venv, scratch: Path) -> dict[str, str]:
        venv.pip(*args)
        return {}
    return setup


def chain(*steps: Callable[[Venv, Path], dict[str, str]]) -> Callable[[Venv, Path], dict[str, str]]:
    def setup(venv: Venv, scratch: Path) -> dict[str, str]:
        env: dict[str, str] = {}
        for step in steps:
            env.update(step(venv, scratch))
        return env
    return setup


def env_state(**variables: str) -> Callable[[Venv, Path], dict[str, str]]:
    return lambda venv, scratch: dict(variables)


def delete_library(venv: Venv, scratch: Path) -> dict[str, str]:
    library = venv.site / "tensorflow" / "libtensorflow_framework.so.2"
    shutil.move(str(library), str(scratch / library.name))
    return {}


def restore_library(venv: Venv, scratch: Path) -> None:
    if (venv.site / "tensorflow" / "libtensorflow_framework.so.2").exists():  # --apply-fixes reinstalled it
        (scratch / "libtensorflow_framework.so.2").unlink()
        return
    shutil.move(str(scratch / "libtensorflow_framework.so.2"), str(venv.site / "tensorflow"))


def target_folder(requirement: str) -> Callable[[Venv, Path], Path]:
    """A folder outside the environment holding one package (`pip install --target`), as shared ones do."""
    def make(venv: Venv, scratch: Path) -> Path:
        folder = scratch / f"target-{requirement.replace('=', '')}"
        if not folder.exists():
            venv.pip("install", "--no-deps", "--target", str(folder), requirement)
        return folder
    return make


def truncate_library(venv: Venv, scratch: Path) -> dict[str, str]:
    """_pywrap_tfe.so cut to 4096 bytes, as an interrupted copy or a full disk leaves it (issue 27 item 1)."""
    library = venv.site / "tensorflow" / "python" / "_pywrap_tfe.so"
    shutil.copy2(library, scratch / library.name)
    with open(library, "r+b") as handle:
        handle.truncate(4096)
    return {}


def restore_truncated(venv: Venv, scratch: Path) -> None:
    shutil.move(str(scratch / "_pywrap_tfe.so"), str(venv.site / "tensorflow" / "python" / "_pywrap_tfe.so"))


def protobuf_in_user_site(version: str) -> Callable[[Venv, Path], dict[str, str]]:
    """protobuf installed with `pip install --user` (PYTHONUSERBASE points at a scratch folder) and the venv's
    own protobuf uninstalled: the venv sees the user site (include-system-site-packages), where it puts it
    after its own site-packages, so the user site's copy is the one imported only without the venv's (outside
    a venv the user site comes first)."""
    def setup(venv: Venv, scratch: Path) -> dict[str, str]:
        base = scratch / f"userbase-protobuf-{version}"
        python = venv.site.parent.name  # python3.X
        target = base / "lib" / python / "site-packages"
        if not target.exists():
            venv.pip("install", "--no-deps", "--target", str(target), f"protobuf=={version}")
        venv.pip("uninstall", "-y", "protobuf")
        venv.system_site_packages(True)
        return {"PYTHONUSERBASE": str(base)}
    return setup


def hide_user_site(venv: Venv, scratch: Path) -> None:
    venv.system_site_packages(False)


def drop_second_tensorflow(venv: Venv, scratch: Path) -> None:
    """Undo `pip install tf-keras` without --no-deps: it pulled the `tensorflow` distribution."""
    venv.pip("uninstall", "-y", "tf-keras")
    if any(venv.site.glob("tensorflow-*.dist-info")):
        venv.pip("uninstall", "-y", "tensorflow")
    venv.reinstall_tensorflow()


def numpy_from_pythonpath(venv: Venv, scratch: Path) -> dict[str, str]:
    folder = target_folder("numpy==2.1.3")(venv, scratch)
    return {"PYTHONPATH": str(folder)}


def numpy_via_pth(venv: Venv, scratch: Path) -> dict[str, str]:
    folder = target_folder("numpy==2.1.3")(venv, scratch)
    (venv.site / "shared-libs.pth").write_text(f"{folder}\n")
    return {}


def remove_pth(venv: Venv, scratch: Path) -> None:
    (venv.site / "shared-libs.pth").unlink()


def numpy_for_another_python(venv: Venv, scratch: Path) -> dict[str, str]:
    """What a site-packages copied from a Python 3.10 environment holds: numpy's cp310 wheel."""
    folder = scratch / "numpy-cp310"
    if not folder.exists():
        subprocess.run([str(venv.python), "-m", "pip", "-q", "install", "--no-index", "--find-links",
                        str(venv.wheels.parent / "wheels-cp310"), "--no-deps", "--target", str(folder),
                        "--python-version", "3.10", "--only-binary=:all:", "numpy==2.2.6"], check=True, timeout=600)
    venv.pip("uninstall", "-y", "numpy")
    for item in folder.iterdir():
        if item.name.startswith("numpy"):
            shutil.copytree(item, venv.site / item.name, dirs_exist_ok=True)
    return {}


def swap_back_intel(venv: Venv) -> None:
    """Undo the AVX-512 swap: what PKG015's fix does (same version of intel-tensorflow, --no-deps)."""
    venv.pip("uninstall", "-y", "intel-tensorflow-avx512")
    venv.reinstall_tensorflow()


def uninstall_after(name: str) -> Callable[[Venv, Path], None]:
    return lambda venv, scratch: venv.pip("uninstall", "-y", name)


def tf_keras_pair(version: str, healthy: bool) -> Situation:
    """tf-keras of another minor under 2.21, --no-deps, TF_USE_LEGACY_KERAS=1: import, fit, save and load."""
    return Situation(f"2.21 + tf-keras {version} --no-deps, TF_USE_LEGACY_KERAS=1", NEW, healthy,
                     () if healthy else ("PKG007",),
                     setup=chain(pip_state("install", "--no-deps", f"tf-keras=={version}"),
                                 env_state(TF_USE_LEGACY_KERAS="1")),
                     teardown=uninstall_after("tf-keras"), extra=SAVE_AND_LOAD)


SITUATIONS = [
    # -- healthy
    Situation("2.21 as installed", NEW, True),
    Situation("2.15 as installed", OLD, True),
    # numpy 1 under TensorFlow 2.21 works only with an ml-dtypes that still accepts it: 0.5.x (numpy>=1.21…);
    # 0.6.0 and 0.7.0 require numpy>=2.0.0 (issue 36), and pip resolves those for TensorFlow 2.21 now.
    Situation("2.21 + numpy 1.26.4, ml-dtypes 0.5.4 (numpy 1 under a numpy-2 build, in range)", NEW, True,
              setup=pip_state("install", "--no-deps", "numpy==1.26.4", "ml-dtypes==0.5.4")),
    Situation("2.21 + numpy 1.25.2, ml-dtypes 0.5.4 (below the floor)", NEW, True,
              setup=pip_state("install", "--no-deps", "numpy==1.25.2", "ml-dtypes==0.5.4")),
    Situation("2.21 + keras 3.11.3 (below the floor)", NEW, True,
              setup=pip_state("install", "--no-deps", "keras==3.11.3")),
    Situation("2.21 + h5py 3.15.1 (above the cap)", NEW, True, setup=pip_state("install", "--no-deps", "h5py==3.15.1"),
              extra="import h5py"),
    Situation("2.15 + tensorboard 2.16.2 (above the cap)", OLD, True,
              setup=pip_state("install", "--no-deps", "tensorboard==2.16.2"),
              extra="tf.summary.create_file_writer('/tmp/tfdoctor-bench-logs')"),
    Situation("2.15 + protobuf 5.29.5 (a major above the cap)", OLD, True,
              setup=pip_state("install", "--no-deps", "protobuf==5.29.5")),
    Situation("2.15 + ml-dtypes 0.4.1 (above ~=0.3.1)", OLD, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.4.1")),
    Situation("2.15 + wrapt 1.16.0 (above the cap)", OLD, True,
              setup=pip_state("install", "--no-deps", "wrapt==1.16.0")),
    Situation("2.21 + tf-keras without --no-deps (tensorflow 2.21.0 too)", NEW, True,
              setup=pip_state("install", "tf-keras==2.21.0"), teardown=drop_second_tensorflow),
    Situation("2.21 + tf-keras --no-deps, TF_USE_LEGACY_KERAS=1", NEW, True,
              setup=chain(pip_state("install", "--no-deps", "tf-keras==2.21.0"), env_state(TF_USE_LEGACY_KERAS="1")),
              teardown=uninstall_after("tf-keras"), extra="import tf_keras"),
    Situation("2.21 + transformers 4 + tf-keras --no-deps", NEW, True,
              setup=chain(pip_state("install", "transformers<5"),
                          pip_state("install", "--no-deps", "tf-keras==2.21.0")),
              teardown=lambda venv, scratch: venv.pip("uninstall", "-y", "transformers", "tf-keras"),
              extra="from transformers import TFBertModel; TFBertModel.__name__"),
    Situation("2.21 without libclang (never imported)", NEW, True, setup=pip_state("uninstall", "-y", "libclang")),
    Situation("2.15 + a .pth adding numpy 2 after site-packages (venv copy wins)", OLD, True,
              setup=numpy_via_pth, teardown=remove_pth),
    # -- broken
    Situation("2.15 + numpy 2.1.3", OLD, False, ("PKG005",), setup=pip_state("install", "--no-deps", "numpy==2.1.3")),
    Situation("2.21 + protobuf 5.29.5 (runtime older than gencode)", NEW, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "protobuf==5.29.5")),
    # Expected broken at first (2026-12-04), measured working: 0.6.0 declares numpy>=2.0.0 but its build still
    # runs on numpy 1.x; 0.7.0, built for the numpy 2 C API, does not (the situation after this one).
    Situation("2.21 + numpy 1.26.4, ml-dtypes 0.6.0 (in TensorFlow's ranges; ml-dtypes declares numpy>=2.0.0)",
              NEW, True, setup=pip_state("install", "--no-deps", "numpy==1.26.4", "ml-dtypes==0.6.0")),
    Situation("2.21 + numpy 1.26.4, ml-dtypes 0.7.0 (in TensorFlow's ranges; built for the numpy 2 C API)",
              NEW, False, ("PKG021",), setup=pip_state("install", "--no-deps", "numpy==1.26.4", "ml-dtypes==0.7.0")),
    # The same break with numpy 1.26.4 supplied by PYTHONPATH: PKG021's fix is then to take the folder out of
    # PYTHONPATH (no pip command: pip in the venv changes nothing that is imported); the situation after it is
    # the venv's own numpy 2.4.6 with ml-dtypes 0.7.0.
    Situation("2.21 + PYTHONPATH holding numpy 1.26.4, ml-dtypes 0.7.0 in the venv", NEW, False, ("PKG021",),
              setup=chain(pip_state("install", "--no-deps", "ml-dtypes==0.7.0"),
                          lambda venv, scratch: {"PYTHONPATH": str(target_folder("numpy==1.26.4")(venv, scratch))})),
    Situation("2.21 + ml-dtypes 0.7.0 (PYTHONPATH taken away: numpy 2.4.6 of the venv)", NEW, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.7.0")),
    Situation("2.21 + ml-dtypes 0.4.1 (below the floor)", NEW, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.4.1")),
    Situation("2.21 + keras 2.15.0", NEW, False, ("PKG005",), setup=pip_state("install", "--no-deps", "keras==2.15.0")),
    Situation("2.15 + keras 3.6.0", OLD, False, ("PKG005",), setup=pip_state("install", "--no-deps", "keras==3.6.0")),
    Situation("2.21 with libtensorflow_framework.so.2 deleted", NEW, False, ("PKG011",),
              setup=delete_library, teardown=restore_library),
    Situation("2.21 + tf-keras (tensorflow too), then pip uninstall tensorflow", NEW, False, ("PKG011",),
              setup=chain(pip_state("install", "tf-keras==2.21.0"), pip_state("uninstall", "-y", "tensorflow")),
              teardown=drop_second_tensorflow),
    Situation("2.21 + numpy copied from a Python 3.10 site-packages", NEW, False, ("PKG012",),
              setup=numpy_for_another_python, teardown=lambda venv, scratch: venv.pip("uninstall", "-y", "numpy")),
    Situation("2.15 + PYTHONPATH holding numpy 2.1.3", OLD, False, ("PKG005",), setup=numpy_from_pythonpath),
    Situation("2.21 without ml_dtypes", NEW, False, ("PKG009",), setup=pip_state("uninstall", "-y", "ml-dtypes")),
    Situation("2.21 without wrapt", NEW, False, ("PKG009",), setup=pip_state("uninstall", "-y", "wrapt")),
    Situation("intel-tensorflow 2.14 (numpy < 2) on this AVX2 CPU", INTEL, True),
    Situation("intel-tensorflow 2.14 + numpy 2.1.3 (its numpy range has no cap)", INTEL, False, ("PKG010",),
              setup=pip_state("install", "--no-deps", "numpy==2.1.3")),
    # Healthy where this CPU has AVX-512 (an AMD EPYC of Zen 4 does), broken with SIGILL where it does not.
    Situation(f"intel-tensorflow-avx512 2.14 on this CPU {'with' if HAS_AVX512 else 'without'} AVX-512", INTEL,
              HAS_AVX512, () if HAS_AVX512 else ("PKG015",),
              setup=chain(pip_state("uninstall", "-y", "intel-tensorflow"),
                          pip_state("install", "--no-deps", "intel-tensorflow-avx512==2.14.0")),
              teardown=lambda venv, scratch: swap_back_intel(venv)),
    Situation("2.21 + transformers 4 without tf-keras", NEW, False, ("PKG014",),
              setup=pip_state("install", "transformers<5"), teardown=uninstall_after("transformers"),
              extra="from transformers import TFBertModel; TFBertModel.__name__"),
    # -- issue 27 and issue 23 item 3
    Situation("2.21 with _pywrap_tfe.so truncated to 4096 bytes", NEW, False, ("PKG011",),
              setup=truncate_library, teardown=restore_truncated),
    tf_keras_pair("2.20.1", True),
    tf_keras_pair("2.19.0", True),
    tf_keras_pair("2.18.0", True),
    tf_keras_pair("2.17.0", False),
    Situation("2.21 + protobuf 4.25.8 from the user site (the venv's own uninstalled)", NEW, False, ("PKG005",),
              setup=protobuf_in_user_site("4.25.8"), teardown=hide_user_site),
    Situation("2.21 + ml-dtypes 0.3.2 (below the floor, built for numpy 1)", NEW, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.3.2")),
    Situation("2.20 as installed", PREVIOUS, True),
    Situation("2.20 + protobuf 6.33.6 (one major above its generated code, no cap)", PREVIOUS, True,
              setup=pip_state("install", "--no-deps", "protobuf==6.33.6")),
    Situation("2.20 + protobuf 7.34.0 (two majors above its generated code, no cap)", PREVIOUS, True,
              setup=pip_state("install", "--no-deps", "protobuf==7.34.0")),
    Situation("2.20 + protobuf 5.28.0 (in its range, older than its generated code 5.28.3)", PREVIOUS, False,
              ("PKG016",), setup=pip_state("install", "--no-deps", "protobuf==5.28.0")),
    # Below the floor, ml-dtypes breaks only the releases whose Python code names a type it lacks (2.20: int2)
    Situation("2.20 + ml-dtypes 0.4.1 (below the floor)", PREVIOUS, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.4.1")),
    Situation("2.15 + ml-dtypes 0.2.0 (below ~=0.3.1)", OLD, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.2.0")),
    # -- issue 36 item 5: the releases between, each as pip resolves it and moved one package at a time
    Situation("2.17 as installed", R17, True),
    Situation("2.17 + numpy 2.0.2 (a build for numpy 1)", R17, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "numpy==2.0.2")),
    Situation("2.17 + protobuf 5.29.5 (a major above the cap)", R17, True,
              setup=pip_state("install", "--no-deps", "protobuf==5.29.5")),
    Situation("2.17 + ml-dtypes 0.5.4 (above <0.5.0)", R17, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.5.4")),
    Situation("2.17 + ml-dtypes 0.2.0 (below the floor)", R17, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.2.0")),
    Situation("2.18 as installed", R18, True),
    # pip resolves ml-dtypes 0.7.0 (numpy>=2.0.0) for 2.18 and 2.19: numpy 1.26.4 afterwards, in TensorFlow's range
    Situation("2.18 + numpy 1.26.4 --no-deps (ml-dtypes 0.7.0 as pip resolved it)", R18, False, ("PKG021",),
              setup=pip_state("install", "--no-deps", "numpy==1.26.4")),
    Situation("2.18 + numpy 2.2.6 (above <2.1.0)", R18, True,
              setup=pip_state("install", "--no-deps", "numpy==2.2.6")),
    Situation("2.18 + protobuf 6.33.6 (a major above the cap)", R18, True,
              setup=pip_state("install", "--no-deps", "protobuf==6.33.6")),
    Situation("2.18 + protobuf 4.25.8 (in its range)", R18, True,
              setup=pip_state("install", "--no-deps", "protobuf==4.25.8")),
    Situation("2.19 as installed", R19, True),
    Situation("2.19 + numpy 1.26.4, ml-dtypes 0.7.0 (in TensorFlow's ranges)", R19, False, ("PKG021",),
              setup=pip_state("install", "--no-deps", "numpy==1.26.4", "ml-dtypes==0.7.0")),
    Situation("2.19 + numpy 1.26.4, ml-dtypes 0.5.4 (in every range)", R19, True,
              setup=pip_state("install", "--no-deps", "numpy==1.26.4", "ml-dtypes==0.5.4")),
    Situation("2.19 + ml-dtypes 0.4.1 (below the floor)", R19, True,
              setup=pip_state("install", "--no-deps", "ml-dtypes==0.4.1")),
    Situation("2.19 + protobuf 6.33.6 (a major above the cap)", R19, True,
              setup=pip_state("install", "--no-deps", "protobuf==6.33.6")),
    Situation("2.19 + protobuf 4.25.8 (in its range)", R19, True,
              setup=pip_state("install", "--no-deps", "protobuf==4.25.8")),
    Situation("2.19 + PYTHONPATH holding numpy 2.2.6 (above the cap)", R19, True,
              setup=lambda venv, scratch: {"PYTHONPATH": str(target_folder("numpy==2.2.6")(venv, scratch))}),
    # add-ons: built for the installed release, for the one before, and ended (no release for 2.21)
    # Expected healthy at first (2026-12-05): 2.21.0 is broken as published (tensorflow/text#1541), 2.21.1 fixed it
    Situation("2.21 + tensorflow-text 2.21.0 --no-deps (broken as published)", NEW, False, ("PKG010",),
              setup=pip_state("install", "--no-deps", "tensorflow-text==2.21.0"),
              teardown=uninstall_after("tensorflow-text"),
              extra="import tensorflow_text as text; text.WhitespaceTokenizer().tokenize(['a b'])"),
    Situation("2.21 + tensorflow-text 2.21.1 --no-deps", NEW, True,
              setup=pip_state("install", "--no-deps", "tensorflow-text==2.21.1"),
              teardown=uninstall_after("tensorflow-text"),
              extra="import tensorflow_text as text; text.WhitespaceTokenizer().tokenize(['a b'])"),
    Situation("2.21 + tensorflow-text 2.20.0 --no-deps (built for 2.20)", NEW, False, ("PKG017",),
              setup=pip_state("install", "--no-deps", "tensorflow-text==2.20.0"),
              teardown=uninstall_after("tensorflow-text"),
              extra="import tensorflow_text as text; text.WhitespaceTokenizer().tokenize(['a b'])"),
    Situation("2.21 + tensorflow-addons 0.23.0 (ended; built for 2.13-2.15)", NEW, False, ("PKG017",),
              setup=pip_state("install", "--no-deps", "tensorflow-addons==0.23.0", "typeguard<3"),
              teardown=lambda venv, scratch: venv.pip("uninstall", "-y", "tensorflow-addons", "typeguard"),
              extra="import tensorflow_addons as tfa; tfa.image.connected_components(tf.zeros((4, 4), tf.bool))"),
    Situation("2.21 + tensorflow-io 0.37.1 (ended; built for 2.16)", NEW, False, ("PKG017",),
              setup=pip_state("install", "--no-deps", "tensorflow-io==0.37.1"),
              teardown=uninstall_after("tensorflow-io"),
              extra="import tensorflow_io as tfio; tfio.experimental.text.re2_full_match(tf.constant(['abc']), 'a.c')"),
    # PYTHONPATH shadowing TensorFlow itself: another environment's whole site-packages (consistent: works), or
    # that TensorFlow alone (it then runs with this environment's numpy 2.4)
    Situation("2.21 + PYTHONPATH holding the 2.15 environment's site-packages", NEW, True,
              setup=lambda venv, scratch: {"PYTHONPATH": str(next(
                  (venv.root.parent / f"venv-{OLD}").glob("lib/python3*/site-packages")))}),
    Situation("2.21 + PYTHONPATH holding tensorflow-cpu 2.15.1 alone", NEW, False, ("PKG005",),
              setup=lambda venv, scratch: {"PYTHONPATH": str(target_folder(f"tensorflow-cpu=={OLD}")(venv, scratch))}),
    # the fix that pins numpy for TensorFlow 2.15 next to jax would pull ml-dtypes below jax's floor (issue 36)
    Situation("2.15 + jax 0.4.38, ml-dtypes 0.4.1, numpy 2.1.3", OLD, False, ("PKG005",),
              setup=pip_state("install", "--no-deps", "jax==0.4.38", "jaxlib==0.4.38", "ml-dtypes==0.4.1",
                              "numpy==2.1.3"),
              teardown=lambda venv, scratch: venv.pip("uninstall", "-y", "jax", "jaxlib")),
    # `tensorflow` next to `tensorflow-cpu` of another release: the later install's files win
    Situation("2.20 + tensorflow 2.21.0 --no-deps on top", PREVIOUS, False, ("PKG002",),
              setup=pip_state("install", "--no-deps", "tensorflow==2.21.0"), teardown=drop_second_tensorflow),
]


@dataclass
class Outcome:
    situation: Situation
    works: bool
    truth_detail: str
    errors: list[str]
    others: list[str]
    seconds: float
    baseline: tuple[list[str], list[str]] | None = None  # (errors, others) of the --baseline tfdoctor
    repaired: str = ""  # --apply-fixes: what applying tfdoctor's fixes did

    @property
    def agrees(self) -> bool:
        return self._agrees(self.errors)

    @property
    def baseline_agrees(self) -> bool | None:
        return None if self.baseline is None else self._agrees(self.baseline[0])

    def _agrees(self, errors: list[str]) -> bool:
        if self.situation.healthy != self.works:
            return False  # the situation did not behave as designed: counted as disagreement, shown
        if self.works:
            return not errors
        return bool(errors) and all(code in errors for code in self.situation.expect)


def clean_environment(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                                                             "TF_USE_LEGACY_KERAS", "PYTHONNOUSERSITE",
                                                             "PYTHONUSERBASE")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.update(extra)
    return env


def truth(venv: Venv, env: dict[str, str], extra: str) -> tuple[bool, str]:
    try:
        done = subprocess.run([str(venv.python), "-c", TRUTH.format(extra=extra)], capture_output=True, text=True,
                              env=env, timeout=600, cwd="/tmp", check=False)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    if done.returncode == 0 and "TRUTH-OK" in done.stdout:
        return True, "import + fit ok"
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if "Error" in line or "error" in line), lines[-1] if lines else "")
    if done.returncode < 0:  # killed by a signal: SIGILL is the "Illegal instruction" of a build the CPU cannot run
        import signal

        return False, f"exit {done.returncode}, {signal.Signals(-done.returncode).name}"
    return False, f"exit {done.returncode}: {last.strip()[:160]}"


def check_report(venv: Venv, env: dict[str, str], tfdoctor: list[str] = TFDOCTOR) -> dict:
    # cwd elsewhere: `python -m` puts the working directory first on sys.path, which would make a --baseline
    # interpreter import the tfdoctor of the checkout the benchmark runs from
    done = subprocess.run([*tfdoctor, "check", "--python", str(venv.python), "--select", "PKG,CPU",
                           "--format", "json"], capture_output=True, text=True, env=env, timeout=300, check=False,
                          cwd="/")
    return json.loads(done.stdout)


def error_findings(report: dict) -> list[dict]:
    return [finding for result in report["results"] for finding in result.get("findings", [])
            if (finding.get("severity") or result.get("severity")) == "error"]


def diagnose(venv: Venv, env: dict[str, str], tfdoctor: list[str] = TFDOCTOR) -> tuple[list[str], list[str]]:
    report = check_report(venv, env, tfdoctor)
    errors, others = [], []
    for result in report["results"]:
        for finding in result.get("findings", []):
            severity = finding.get("severity") or result.get("severity")
            (errors if severity == "error" else others).append(f"{finding['code']}" if severity == "error"
                                                              else f"{finding['code']}:{severity}")
    return sorted(set(errors)), sorted(set(others))


def apply_fixes(venv: Venv, env: dict[str, str], extra: str) -> str:
    """Apply the fixes of tfdoctor's errors as a user would (variables, then commands; pip reads the wheel
    folder), then run the truth and tfdoctor again: "repaired", or what is left."""
    findings = error_findings(check_report(venv, env))
    fixes = [fix for finding in findings for fix in finding.get("fixes", [])]
    fixed_env = dict(env, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(venv.wheels), PIP_DISABLE_PIP_VERSION_CHECK="1")
    commands = []
    for fix in fixes:
        for change in fix.get("changes", []):
            if change["op"] == "unset":
                fixed_env.pop(change["name"], None)
            elif change["op"] == "set":
                fixed_env[change["name"]] = change["value"]
        commands += fix.get("steps", [])
    if not commands and not any(fix.get("changes") for fix in fixes):
        return "no command offered: " + "; ".join(fix["title"] for fix in fixes)[:200]
    for command in commands:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=fixed_env, timeout=900,
                              check=False)
        if done.returncode != 0:
            return f"`{command}` failed: {done.stderr.strip()[-200:]}"
    after = {k: v for k, v in fixed_env.items() if not k.startswith("PIP_")}
    if any(" uninstall " in command for command in commands):
        extra = ""  # the fix removed the add-on the situation imported: what is left must work without it
    works, detail = truth(venv, after, extra)
    errors, _others = diagnose(venv, after)
    if works and not errors:
        return "repaired: " + " && ".join(commands or [f["title"] for f in fixes])[:300]
    return f"not repaired ({'works' if works else detail}; tfdoctor errors {errors}): " + " && ".join(commands)[:300]


def run(situation: Situation, venvs: dict[str, Venv], scratch: Path, baseline: list[str] | None = None,
        truths: dict[str, list] | None = None, fix: bool = False) -> Outcome:
    venv = venvs[situation.tensorflow]
    start = time.perf_counter()
    variables = situation.setup(venv, scratch)
    env = clean_environment(variables)
    try:
        known = (truths or {}).get(situation.name)
        works, detail = (bool(known[0]), f"{known[1]}; cached") if known else truth(venv, env, situation.extra)
        if truths is not None and not known:
            truths[situation.name] = [works, detail]
        errors, others = diagnose(venv, env)
        before = diagnose(venv, env, baseline) if baseline else None
        repaired = apply_fixes(venv, env, situation.extra) if fix and not works and errors else ""
    finally:
        if situation.teardown is not None:
            situation.teardown(venv, scratch)
        venv.reset()
    return Outcome(situation, works, detail, errors, others, time.perf_counter() - start, before, repaired)


def download(cache: Path) -> Path:
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    marker = wheels / ".complete"
    if not marker.exists() or marker.read_text() != repr(DOWNLOADS):
        for requirement, no_deps in DOWNLOADS:
            subprocess.run([PYTHON, "-m", "pip", "download", "-q", "-d", str(wheels), "--only-binary=:all:",
                            *(["--no-deps"] if no_deps else []), requirement], check=True, timeout=1800)
        subprocess.run([PYTHON, "-m", "pip", "download", "-q", "-d", str(cache / "wheels-cp310"), "--only-binary=:all:",
                        "--python-version", "3.10", "--no-deps", "numpy==2.2.6"], check=True, timeout=1800)
        marker.write_text(repr(DOWNLOADS))
    return wheels


def table(outcomes: list[Outcome]) -> str:
    with_baseline = any(o.baseline is not None for o in outcomes)
    extra_head = " baseline errors | baseline agrees |" if with_baseline else ""
    lines = ["| situation | expected | truth (import + 1-step fit + its import) | tfdoctor errors | "
             "other findings | agrees |" + extra_head,
             "|---|---|---|---|---|---|" + ("---|---|" if with_baseline else "")]
    for o in outcomes:
        expected = "healthy" if o.situation.healthy else "broken: " + ", ".join(o.situation.expect)
        row = (f"| {o.situation.name} | {expected} | {'works' if o.works else 'broken'} ({o.truth_detail}) | "
               f"{', '.join(o.errors) or '-'} | {', '.join(o.others) or '-'} | {'yes' if o.agrees else 'NO'} |")
        if with_baseline:
            row += (f" {', '.join(o.baseline[0]) or '-'} | {'yes' if o.baseline_agrees else 'NO'} |"
                    if o.baseline is not None else " | |")
        lines.append(row)
    agreed = sum(o.agrees for o in outcomes)
    healthy = sum(o.works for o in outcomes)
    lines.append("")
    lines.append(f"Agreement: {agreed}/{len(outcomes)} = {100 * agreed / len(outcomes):.0f} % "
                 f"({healthy} healthy, {len(outcomes) - healthy} broken by the truth run)")
    fixed = [o for o in outcomes if o.repaired]
    if fixed:
        lines.append(f"Fixes applied where broken: {sum(o.repaired.startswith('repaired') for o in fixed)} of "
                     f"{len(fixed)} repaired the environment")
        lines += [f"    {o.situation.name}: {o.repaired}" for o in fixed]
    if with_baseline:
        before = sum(bool(o.baseline_agrees) for o in outcomes)
        lines.append(f"Baseline agreement (same environments, same run): {before}/{len(outcomes)} = "
                     f"{100 * before / len(outcomes):.0f} %")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/tfdoctor-pyenv-bench"))
    parser.add_argument("--only", nargs="*", help="run the situations whose name contains one of these")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument("--baseline", help="the interpreter of another tfdoctor checkout, run on the same states")
    parser.add_argument("--truth-cache", type=Path, help="JSON of each situation's truth, reused and extended")
    parser.add_argument("--tensorflow", nargs="*", help="run the situations of these environments (2.21.0, …)")
    parser.add_argument("--apply-fixes", action="store_true", help="apply tfdoctor's fixes where broken, check again")
    args = parser.parse_args()
    baseline = [args.baseline, "-m", "tfdoctor"] if args.baseline else None
    truths = json.loads(args.truth_cache.read_text()) if args.truth_cache and args.truth_cache.exists() else None
    if args.truth_cache and truths is None:
        truths = {}
    wheels = download(args.cache)
    chosen = [s for s in SITUATIONS if (not args.only or any(part in s.name for part in args.only))
              and (not args.tensorflow or s.tensorflow in args.tensorflow)]
    venvs = {v: Venv(args.cache / f"venv-{v}", wheels, v) for v in (NEW, OLD, INTEL, PREVIOUS, R17, R18, R19)}
    for key in {s.tensorflow for s in chosen}:
        venvs[key].ensure()
    scratch = args.cache / "scratch"
    scratch.mkdir(exist_ok=True)
    outcomes = []
    started = time.perf_counter()
    for situation in chosen:
        outcome = run(situation, venvs, scratch, baseline, truths, args.apply_fixes)
        outcomes.append(outcome)
        if args.truth_cache and truths is not None:
            args.truth_cache.write_text(json.dumps(truths, indent=1) + "\n")
        then = "" if outcome.baseline is None else (
            f" baseline={'ok' if outcome.baseline_agrees else 'NO'} {outcome.baseline[0]} {outcome.baseline[1]}")
        print(f"{'ok ' if outcome.agrees else 'NO '} {situation.name}: truth={'works' if outcome.works else 'broken'} "
              f"({outcome.truth_detail}); errors={outcome.errors} others={outcome.others}{then} "
              f"[{outcome.seconds:.0f} s]" + (f"\n    fix: {outcome.repaired}" if outcome.repaired else ""), flush=True)
    text = table(outcomes)
    load = os.getloadavg()
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text += (f"\n\nMeasured {now} in {time.perf_counter() - started:.0f} s "
             f"on {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
             f"Python {sys.version.split()[0]}.")
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
