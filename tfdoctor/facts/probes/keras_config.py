"""keras.json, where Keras will look for it: $KERAS_HOME, else ~/.keras (Keras falls back to /tmp/.keras
when the home is not writable, and so does this probe)."""

from __future__ import annotations

import json

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe


def keras_json_path(machine: Machine) -> str | Unknown:
    home = machine.environ.get("KERAS_HOME")
    if home:
        return f"{home.rstrip('/')}/keras.json"
    user_home = machine.environ.get("HOME")
    if not user_home:
        return Unknown("neither KERAS_HOME nor HOME is set")
    path = f"{user_home.rstrip('/')}/.keras/keras.json"
    if not machine.exists(path) and machine.exists("/tmp/.keras/keras.json"):
        return "/tmp/.keras/keras.json"
    return path


@probe("keras")
def probe_keras(machine: Machine) -> dict[str, object]:
    path = keras_json_path(machine)
    if isinstance(path, Unknown):
        return {"path": path, "config": path}
    text = machine.read_text(path)
    if isinstance(text, Unknown):
        # A missing keras.json is a known fact: Keras then uses its defaults (channels_last, float32).
        return {"path": path, "exists": False, "config": None if not machine.exists(path) else text}
    try:
        config = json.loads(text)
    except ValueError as exc:
        return {"path": path, "exists": True, "config": Unknown(f"{path} is not JSON: {exc}")}
    if not isinstance(config, dict):
        return {"path": path, "exists": True, "config": Unknown(f"{path} does not hold a JSON object")}
    return {"path": path, "exists": True, "config": config}
