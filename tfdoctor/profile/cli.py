"""`tfdoctor profile`: run the micro-profile (or an A/B comparison) and show what it measured."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tfdoctor.profile.progress import progress_display
from tfdoctor.usage import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, UsageError, check_output, emit, write_section_page

BUILTIN_WORKLOADS = ("cnn", "matmul", "pyfunc")


def _environment(env_file: str | None) -> dict[str, str]:
    if not env_file:
        return dict(os.environ)
    from tfdoctor.profile.envfile import EnvFileError, environment_from_file

    try:
        return environment_from_file(env_file, os.environ)
    except EnvFileError as exc:
        raise UsageError(str(exc)) from None


@click.command()
@click.option("--workload", type=click.Choice(BUILTIN_WORKLOADS), default="cnn", show_default=True,
              help="cnn: a small CNN fed by tf.data; matmul: a matmul loop; pyfunc: the CNN behind a slow "
                   "tf.py_function pipeline (an input-bound example).")
@click.option("--script", type=click.Path(dir_okay=False), metavar="FILE",
              help="Profile your own training script instead (how its steps are found: docs/profile.md).")
@click.option("--steps", type=click.IntRange(1, 100000), default=20, show_default=True,
              help="Timed steps of a built-in workload (a script runs its own).")
@click.option("--warmup", type=click.IntRange(0, 10000), default=3, show_default=True,
              help="Untimed steps first (tracing, autotuning); for a script, its first N steps.")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True)
@click.option("--logdir", metavar="DIR", help="Keep the profile here (default: a new folder under the temp dir).")
@click.option("--env", "env_file", metavar="FILE", help="Judge the environment this script (env.sh) produces.")
@click.option("--compare", nargs=2, metavar="A.sh B.sh",
              help="Compare two environments by interleaved runs; report B's step time relative to A's.")
@click.option("--budget", type=click.FloatRange(10, 3600), default=60.0, show_default=True,
              help="Seconds a comparison may take, start to verdict (undecided when they run out).")
@click.option("--metric", type=click.Choice(["auto", "wall", "cpu"]), default="auto", show_default=True,
              help="What a comparison times per step: wall time, or the workload process's CPU time (auto: CPU "
                   "time unless the arms differ in threads or affinity, or steps wait for input or a GPU).")
@click.option("--timeout", type=click.FloatRange(1, 86400), default=300.0, show_default=True,
              help="Seconds the profiled run may take.")
@click.option("--python", metavar="PATH", help="Run the workload with this interpreter (it needs TensorFlow).")
@click.option("--save-facts", metavar="FILE", help="Also write all facts, with the profile, for check --facts.")
@click.option("--force", is_flag=True, help="Overwrite --save-facts FILE.")
@click.option("--measure-mixed-precision", "measure_mp", is_flag=True,
              help="Also compare the mixed policy check recommends here (mixed_bfloat16 on a CPU with bfloat16 "
                   "units, mixed_float16 on tensor-core GPUs; a declared TFDOCTOR_MIXED_PRECISION first) with "
                   "float32 (up to --budget seconds).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--html", "html_path", metavar="FILE",
              help="Also write the profile as a self-contained HTML page (the profile section of tfdoctor report).")
def profile(workload: str, script: str | None, steps: int, warmup: int, device: str, logdir: str | None,
            env_file: str | None, compare: tuple[str, str] | None, budget: float, timeout: float,
            python: str | None, save_facts: str | None, force: bool, measure_mp: bool, fmt: str,
            html_path: str | None = None, metric: str = "auto") -> None:
    """Run a short TensorFlow workload in a fresh process under the profiler and report what it measured."""
    if python and "/" not in python:  # a bare name (python3): looked up on PATH, as the shell would
        from tfdoctor.usage import on_path

        python = on_path(python) or python
    if python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UsageError(f"--python {python}: not an executable interpreter")
    check_output(html_path, force)
    if compare:
        _compare(compare, workload, device, budget, python, fmt, html_path, force, metric)
        return
    if script:
        from tfdoctor.facts.bounded import InputFileError, open_regular

        try:  # a FIFO would hold the workload until its timeout; a missing file is named as such
            os.close(open_regular(script, "--script"))
        except InputFileError as exc:
            raise UsageError(str(exc)) from None
    if logdir and Path(logdir).exists() and not Path(logdir).is_dir():
        # The profiler would fail to write under it and the profile would be silently lost.
        raise UsageError(f"--logdir {logdir}: not a directory")
    environ = _environment(env_file)
    from tfdoctor.profile.cupti_preflight import profile_preflight  # CUPTI's privileges, before a GPU run

    for line in profile_preflight(environ, device, python):
        emit(line + "\n", err=True, wrap=True)
    chosen = "script" if script else workload
    target = logdir or tempfile.mkdtemp(prefix="tfdoctor-profile-")
    from tfdoctor.profile.facts import profile_section
    from tfdoctor.profile.runner import run_workload

    with progress_display(fmt == "text") as progress:
        progress(f"running the {chosen} workload in a fresh process (importing TensorFlow…)")
        run = run_workload(chosen, environ, steps, warmup, timeout, device=device, logdir=target,
                           script=os.path.abspath(script) if script else None, python=python)
        progress("reading the profile")
        script_warmup = warmup if script else 0  # a built-in workload runs its warm-up before the profiler
        xspace, xspace_path = _read_xspace(target, run, bool(script), script_warmup) if run.ok else ({}, None)
        section = profile_section(run, chosen, xspace, xspace_path, script_warmup)
        if measure_mp and run.ok:
            measured = _measure_mixed_precision(environ, device, budget, python, progress, metric)
            section["mixed_precision"] = measured
            if measured["verdict"] in ("slower", "faster", "no-effect"):
                # The contract the MP checks read (tfdoctor/derive/precision.py): float32 time ÷ policy time.
                section["mixed_precision_policy"] = measured["policy"]
                section["mixed_precision_speedup"] = 1.0 / measured["ratio"]
    report = _report(section, save_facts, force, environ)
    document = {"profile": _jsonable(section), "findings": [f.to_json() for f in report.findings()]}
    if html_path is not None:
        _write_html(html_path, force, document)
    if fmt == "json":
        from tfdoctor.facts.redact import redact_value

        emit(json.dumps(redact_value(document), indent=2, sort_keys=True) + "\n", kind="json")
    else:
        from tfdoctor.profile.render import render_profile

        emit(render_profile(section, report), wrap=True)
    if not run.ok:
        raise SystemExit(EXIT_INTERNAL)
    raise SystemExit(EXIT_FINDINGS if report.findings() else EXIT_OK)


def policy_to_measure(facts: Any, device: str) -> tuple[str | None, str]:
    """(policy, why) — the Keras policy `--measure-mixed-precision` compares with float32: the one the
    user declares (what the MP checks judge), else the one they recommend for where TensorFlow computes
    (tfdoctor/derive/precision.py); (None, why not) when float32 is what they recommend."""
    from tfdoctor.derive.precision import PolicyDeclarationError, declared_policy, recommended_policy
    from tfdoctor.facts import NotChecked

    try:
        declared = declared_policy(facts)
        if declared is not None and declared.name != "float32":
            return declared.name, f"declared ({declared.source})"
        recommended = recommended_policy(facts, cpu_only=device == "cpu")
    except PolicyDeclarationError as exc:
        return None, f"TFDOCTOR_MIXED_PRECISION={exc} is not a Keras policy"
    except NotChecked as exc:
        return None, f"cannot tell which policy to measure: {exc}"
    if recommended is None:
        return None, ("check recommends float32 here (no GPU with tensor cores TensorFlow can use, no "
                      "avx512_bf16/amx_bf16 on the CPU)")
    return recommended.policy, f"recommended by check: {recommended.why}"


def _measure_mixed_precision(environ: dict[str, str], device: str, budget: float, python: str | None,
                             progress: Callable[[str], None], metric: str = "auto") -> dict[str, Any]:
    """The policy check would recommend (or the declared one) against float32 on the CNN workload, as
    facts: policy, why, verdict, ratio (policy / float32), interval and the metric timed."""
    from tfdoctor.derive.precision import set_policy_code
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.machine import Machine
    from tfdoctor.profile.compare import Arm, compare
    from tfdoctor.registry import load_registry

    progress("mixed precision: reading the machine (which policy check recommends)")
    facts = gather_facts(load_registry().probes, Machine(environ=environ, python=python))
    policy, why = policy_to_measure(facts, device)
    if policy is None:
        return {"verdict": "not-measured", "policy": None, "why": why, "summary": f"not measured: {why}"}
    # Whatever --workload says: a policy changes Keras layers only (the matmul loop has none), and the
    # pyfunc pipeline's wait for input would hide what it changes; the CNN is where a policy shows.
    workload = "cnn"
    result = compare(Arm("float32", environ), Arm(policy, environ, set_policy_code(policy)), workload,
                     budget=budget, device=device, python=python, metric=metric,
                     progress=lambda message: progress(f"mixed precision ({policy}): {message}"))
    data = {"verdict": result.verdict if not result.error else "error", "policy": policy, "why": why,
            "summary": f"{policy} against float32: {result.describe()}", "metric": result.metric,
            "workload": workload, "seconds": result.seconds, "budget": budget}
    if result.interval:
        data |= {"ratio": result.interval.ratio, "low": result.interval.low, "high": result.interval.high,
                 "confidence": result.interval.confidence}
    return data


def _read_xspace(logdir: str, run: Any, script: bool, warmup: int) -> tuple[dict[str, Any] | Any, str | None]:
    from tfdoctor.facts import Unknown
    from tfdoctor.profile.facts import found_steps
    from tfdoctor.profile.xspace import find_xspace_files, load_xspace, summarize_xspace

    files = find_xspace_files(logdir)
    if not files:
        return Unknown(f"the profiler wrote no *.xplane.pb under {logdir}"), None
    try:
        found = found_steps(run)
        return summarize_xspace(load_xspace(files[0]), script=script,
                                warmup=warmup, step_source=found.get("source"),
                                gap_is_input=bool(found.get("gap_is_input"))), str(files[0])
    except ValueError as exc:
        return Unknown(str(exc)), str(files[0])


def _write_html(path: str, force: bool, document: dict[str, Any]) -> None:
    """The profile section alone: a run's document, or a comparison's verdict."""
    write_section_page(path, force, "profile", [document])


def _jsonable(section: dict[str, Any]) -> Any:
    from tfdoctor.facts import to_jsonable

    return to_jsonable(section)


def _report(section: dict[str, Any], save_facts: str | None, force: bool, environ: dict[str, str]) -> Any:
    """The PROF checks over the profile facts (profile itself yields no findings: checks do)."""
    from tfdoctor.engine import run_checks
    from tfdoctor.facts import Facts
    from tfdoctor.registry import load_registry, select_checks

    registry = load_registry()
    if save_facts:
        from tfdoctor.engine import gather_facts
        from tfdoctor.facts.machine import Machine
        from tfdoctor.fixes.write import WriteError, write_file

        facts = gather_facts(registry.probes, Machine(environ=environ))
        facts.sections["profile"] = section
        try:
            write_file(save_facts, facts.dumps() + "\n", force=force)
        except WriteError as exc:
            raise UsageError(str(exc)) from None
    else:
        from tfdoctor.facts.probes.environment import is_relevant

        facts = Facts({"profile": section,
                       "env": {"variables": {k: v for k, v in environ.items() if is_relevant(k)}}})
    return run_checks(select_checks(registry.checks, ("PROF",), ()), facts, registry.errors)


def _compare(files: tuple[str, str], workload: str, device: str, budget: float, python: str | None,
             fmt: str, html_path: str | None = None, force: bool = False, metric: str = "auto") -> None:
    from tfdoctor.profile.compare import Arm, compare

    arms = [Arm(name, _environment(name)) for name in files]
    with progress_display(fmt == "text") as progress:
        result = compare(arms[0], arms[1], workload, budget=budget, device=device, python=python,
                         progress=progress, metric=metric)
    if html_path is not None:
        _write_html(html_path, force, result.to_json())
    if fmt == "json":
        emit(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n", kind="json")
    else:
        emit(f"{files[1]} against {files[0]} ({workload} workload): {result.describe()}\n", wrap=True)
    raise SystemExit(EXIT_INTERNAL if result.error else EXIT_OK)
