"""Whether the user will profile (pure): the CUPTI checks of tfdoctor/checks/cupti.py and cupti_wsl.py
judge CUPTI by it, so it lives here, where both can read it."""

from __future__ import annotations

from tfdoctor.derive.versions import version_tuple
from tfdoctor.facts import Facts

PROFILER_DISTS = ("tensorboard-plugin-profile", "xprof")
# TensorBoard bundled the profile plugin until 2.1 (2.2 moved it to tensorboard-plugin-profile).
TENSORBOARD_BUNDLED_PROFILER_BEFORE = (2, 2)
PROFILE_INTENT = "profile"  # facts.meta["intent"] when `tfdoctor profile` asks before it runs
# Variables only TensorFlow's CUPTI tracer reads: a job that sets them is set up to trace (issue 35).
PROFILER_VARIABLES = ("TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL", "TF_GPU_CUPTI_USE_ACTIVITY_API")


def intends_to_profile(facts: Facts) -> bool:
    """The user will profile: a profiler plugin is installed (tensorboard-plugin-profile, xprof, or a
    TensorBoard before 2.2, which bundled it), the CUPTI tracer's own variables are set, or this is
    `tfdoctor profile`, whose profiler is ours."""
    if facts.meta.get("intent") == PROFILE_INTENT:
        return True
    if any(facts.env(name) not in (None, "") for name in PROFILER_VARIABLES):
        return True
    watched = facts.peek("python.watched")
    if not isinstance(watched, dict):
        return False
    if any(d in watched for d in PROFILER_DISTS):
        return True
    tensorboard = watched.get("tensorboard")
    version = version_tuple(tensorboard.get("version")) if isinstance(tensorboard, dict) else ()
    return bool(version) and version[:2] < TENSORBOARD_BUNDLED_PROFILER_BEFORE
