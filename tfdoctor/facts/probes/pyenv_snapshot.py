"""A snapshot of one Python environment, standalone: standard library only, Python 3.8+.

tfdoctor imports this module to inspect its own interpreter, and runs its source under another
interpreter for `--python PATH` (that environment need not have tfdoctor installed). It never imports
TensorFlow: the wheel's facts are read from its files (build_info.py parsed with `ast`, METADATA,
WHEEL), since importing TensorFlow costs seconds and writes ~/.keras/keras.json.

Printed (when run as a script) or returned: a JSON-able dict.
"""

import ast
import json
import os
import platform
import re
import sys

# Distributions whose full metadata matters; every other one is listed by name and version only.
TENSORFLOW_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                    "tensorflow-macos", "tensorflow-aarch64", "tensorflow-cpu-aws", "tf-nightly",
                    "tf-nightly-cpu", "tf-nightly-gpu", "intel-tensorflow")
WATCHED_PREFIXES = ("nvidia-",)
WATCHED = ("keras", "tf-keras", "tf_keras", "numpy", "protobuf", "ml-dtypes", "tensorboard",
           "tensorflow-io-gcs-filesystem", "h5py", "tensorboard-plugin-profile", "xprof", "optuna")

_DIST_DIR = re.compile(r"^(?P<name>[^-]+(?:-[^-]+)*?)-(?P<version>[0-9][^-]*?)(?:-py[0-9.]+)?\.(dist|egg)-info$")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse_metadata(text):
    """Requires-Dist and Requires-Python from a METADATA (email-header) text."""
    requires = []
    requires_python = None
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break  # headers end at the first blank line; the long description follows
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        if key == "Requires-Dist":
            requires.append(value)
        elif key == "Requires-Python":
            requires_python = value
        elif key == "Name":
            name = value
        elif key == "Version":
            version = value
    return {"name": name, "version": version, "requires_dist": requires, "requires_python": requires_python}


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _literal_assignments(tree):
    """Module-level NAME = <literal> and NAME = {dict literal}; anything else is skipped."""
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return values


def read_build_info(path):
    """tensorflow/python/platform/build_info.py -> the build_info dict (cuda_version, cudnn_version…)."""
    try:
        tree = ast.parse(_read(path), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        return {"$unknown": "build_info.py unreadable: " + str(exc)}
    values = _literal_assignments(tree)
    info = values.get("build_info")
    if isinstance(info, dict):
        return {str(k): v for k, v in info.items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    # Older wheels: plain module-level constants.
    return {k: v for k, v in values.items() if not k.startswith("_") and isinstance(v, (str, int, bool))}


def _wheel_tags(dist_dir):
    try:
        text = _read(os.path.join(dist_dir, "WHEEL"))
    except OSError:
        return []
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]


def _scan(paths):
    """Every distribution on the path, first occurrence wins (as the import system would see it)."""
    found = {}
    for entry in paths:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for filename in names:
            match = _DIST_DIR.match(filename)
            if not match:
                continue
            key = normalize(match.group("name"))
            if key in found:
                found[key].setdefault("shadowed", []).append(entry)
                continue
            found[key] = {"version": match.group("version"), "location": entry,
                          "dist_dir": os.path.join(entry, filename)}
    return found


def _detail(info):
    dist_dir = info.pop("dist_dir")
    for meta_name in ("METADATA", "PKG-INFO"):
        try:
            meta = _parse_metadata(_read(os.path.join(dist_dir, meta_name)))
        except OSError:
            continue
        info["requires_dist"] = meta["requires_dist"]
        info["requires_python"] = meta["requires_python"]
        if meta["version"]:
            info["version"] = meta["version"]
        break
    info["wheel_tags"] = _wheel_tags(dist_dir)
    return info


def _find_package(paths, *parts):
    for entry in paths:
        candidate = os.path.join(entry, *parts)
        if entry and os.path.exists(candidate):
            return candidate
    return None


def snapshot(paths=None):
    paths = list(sys.path if paths is None else paths)
    dists = _scan(paths)
    watched = {}
    for key in list(dists):
        info = dists[key]
        if key in TENSORFLOW_DISTS or key in WATCHED or key.startswith(WATCHED_PREFIXES):
            watched[key] = _detail(dict(info))
        else:
            info.pop("dist_dir", None)
    tf_package = _find_package(paths, "tensorflow", "__init__.py")
    build_info_path = _find_package(paths, "tensorflow", "python", "platform", "build_info.py")
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "machine": platform.machine(),
        "path": paths,
        "distributions": {k: {"version": v["version"], "location": v["location"]} for k, v in sorted(dists.items())},
        "watched": watched,
        "tensorflow": {
            "package_dir": os.path.dirname(tf_package) if tf_package else None,
            "build_info": read_build_info(build_info_path) if build_info_path else None,
        },
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(snapshot(), sort_keys=True))
