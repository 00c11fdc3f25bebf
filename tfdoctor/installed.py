"""Where this tfdoctor was installed from, so that a hint to add an optional part (`tune`'s optuna, the
report's plotly) names a command that works: pip's record of the install (direct_url.json, PEP 610).

- installed from a folder (a clone: `pip install .`, `pip install -e .`): the folder, with the extra —
  `python -m pip install '/path/to/checkout[tune]'` (-e kept for an editable install);
- installed from a VCS URL: that URL at the recorded commit;
- installed from a package index (no direct_url.json): the name, `tfdoctor[tune]`.

The interpreter is this one (`sys.executable -m pip`): a bare `pip` may be another environment's.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import unquote, urlparse

DISTRIBUTION = "tfdoctor"


DIRECT_URL_LIMIT = 64 * 1024  # pip writes a URL and a commit or two flags: a few hundred bytes


def _read_direct_url(dist: object) -> bytes | None:
    """The distribution's direct_url.json, at most DIRECT_URL_LIMIT bytes, read as every file tfdoctor reads
    (tfdoctor.facts.bounded: a FIFO or device in its place is refused, not waited on); None without one."""
    import os

    from tfdoctor.facts.bounded import read_probe_file

    folder = getattr(dist, "_path", None)  # a PathDistribution's metadata folder; others have no such file
    if folder is None:
        return None
    try:
        read = read_probe_file(os.path.join(os.fspath(folder), "direct_url.json"), DIRECT_URL_LIMIT)
    except OSError:
        return None
    return None if read.truncated else read.data


def _direct_url() -> dict[str, object] | None:
    from importlib import metadata

    # Every record of the name, not the first: run from inside a clone, the build's tfdoctor.egg-info in the
    # current folder comes before the installed dist-info on sys.path, and it has no direct_url.json.
    texts = (_read_direct_url(dist) for dist in metadata.distributions(name=DISTRIBUTION))
    text = next((t for t in texts if t), None)
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def requirement(extra: str, direct: dict[str, object] | None) -> tuple[list[str], str]:
    """(pip options, requirement) installing tfdoctor with `extra` from where `direct` says it came from."""
    url = direct.get("url") if direct else None
    if not isinstance(url, str) or not url:
        return [], f"{DISTRIBUTION}[{extra}]"
    dir_info, vcs_info = direct.get("dir_info"), direct.get("vcs_info")  # type: ignore[union-attr]
    parsed = urlparse(url)
    if parsed.scheme == "file" and isinstance(dir_info, dict):
        folder = unquote(parsed.path)
        return (["-e"] if dir_info.get("editable") else []), f"{folder}[{extra}]"
    if isinstance(vcs_info, dict) and isinstance(vcs_info.get("vcs"), str):
        commit = vcs_info.get("commit_id")
        at = f"@{commit}" if isinstance(commit, str) and commit else ""
        return [], f"{DISTRIBUTION}[{extra}] @ {vcs_info['vcs']}+{url}{at}"
    return [], f"{DISTRIBUTION}[{extra}] @ {url}"


def install_extra_command(extra: str) -> str:
    """The command that adds tfdoctor's optional `extra` to this environment, as a user would type it."""
    from tfdoctor.fixes.quoting import sh_word

    options, wanted = requirement(extra, _direct_url())
    return " ".join([sh_word(sys.executable), "-m", "pip", "install", *options, sh_word(wanted)])
