"""XLA101+ (TF_XLA_FLAGS, XLA_FLAGS) and GPU101+ (GPU runtime variables)."""

from __future__ import annotations

from conftest import check_facts, env_fixes
from support.framework_facts import A100, T4, gpu_devices, make_facts

from tfdoctor.derive.xla_flags import auto_jit_valid, effective_tf_xla_flags, parse_bool, split_flags
from tfdoctor.model import Applicability, EnvFix, Severity, set_env, unset_env


def only(report):
    findings = report.findings()
    assert len(findings) == 1, [(f.code, f.message) for f in findings]
    return findings[0]


# -- parsing -------------------------------------------------------------------------------------

def test_split_flags_keeps_quotes_and_bare_words():
    flags = split_flags("--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit 'x y' --a=")
    assert [(f.name, f.value) for f in flags] == [("tf_xla_auto_jit", "2"), ("tf_xla_cpu_global_jit", None),
                                                  ("", None), ("a", "")]
    assert split_flags('--unbalanced="quote')[0].name == 'unbalanced'


def test_flag_values():
    assert [auto_jit_valid(v) for v in ("-1", "0", "1", "2", "fusible", "single-gpu(2)", "on", None)] == [
        True, True, True, True, True, True, False, False]
    assert [parse_bool(v) for v in (None, "true", "0", "yes")] == [True, True, False, None]
    assert effective_tf_xla_flags("--tf_xla_auto_jit=1 --tf_xla_auto_jit=0") == {"tf_xla_auto_jit": "0"}


# -- XLA ---------------------------------------------------------------------------------------

def test_misspelt_tf_xla_flag_is_fatal():
    finding = only(check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jti=2"}), select=["XLA1"]))
    assert finding.code == "XLA101"
    assert finding.evidence["suggestion"] == "tf_xla_auto_jit"
    assert finding.fixes == (EnvFix("Spell --tf_xla_auto_jti as --tf_xla_auto_jit",
                                    (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2"),)),)


def test_xla_flag_in_tf_xla_flags_moves_to_xla_flags():
    env = {"TF_XLA_FLAGS": "--xla_gpu_autotune_level=0 --tf_xla_auto_jit=2", "XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    # XLA104 adds its info note about auto-clustering (measured nowhere here): only the flag checks count.
    finding = only(check_facts(make_facts(env=env, gpus=gpu_devices(A100)), select=["XLA1"], ignore=["XLA104"]))
    assert finding.code == "XLA101"
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2"),
                                        set_env("XLA_FLAGS", "--xla_dump_to=/tmp/x --xla_gpu_autotune_level=0"))


def test_unknown_unlike_any_flag_is_a_warning_and_bare_word_an_error():
    report = check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_brand_new_flag=1 stray"}), select=["XLA101"])
    findings = report.findings()
    assert [(f.severity, f.evidence["flag"]) for f in findings] == [(Severity.WARNING, "--tf_xla_brand_new_flag=1"),
                                                                    (Severity.ERROR, "stray")]
    assert findings[1].fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_brand_new_flag=1"),)


def test_valid_tf_xla_flags_are_silent():
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_min_cluster_size=4"}
    report = check_facts(make_facts(env=env), select=["XLA1"])
    # Nothing is invalid: the info note on what only a run can tell, and (on this CPU-only host) XLA107's
    # warning that CPU clusters run single-threaded (tests/test_checks_release.py).
    assert report.codes() == ["XLA104", "XLA107"]
    assert [f.code for f in report.findings() if f.severity is not Severity.INFO] == ["XLA107"]


def test_invalid_auto_jit_value():
    finding = only(check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=on"}), select=["XLA1"]))
    assert finding.code == "XLA102"
    assert finding.fixes == (EnvFix("Remove --tf_xla_auto_jit=on", (unset_env("TF_XLA_FLAGS"),)),)


def test_invalid_boolean_and_integer_values():
    env = {"TF_XLA_FLAGS": "--tf_xla_cpu_global_jit=yes --tf_xla_max_cluster_size=big"}
    report = check_facts(make_facts(env=env), select=["XLA102"])
    assert [f.evidence["flag"] for f in report.findings()] == ["--tf_xla_cpu_global_jit=yes",
                                                               "--tf_xla_max_cluster_size=big"]


def test_xla_flags_problems():
    env = {"XLA_FLAGS": "--tf_xla_auto_jit=2 --xla_dump_too=/tmp/x --dump=1 --xla_gpu_some_rare_flag=true"}
    report = check_facts(make_facts(env=env), select=["XLA103"])
    findings = report.findings()
    assert [f.evidence["flag"] for f in findings] == ["--tf_xla_auto_jit=2", "--xla_dump_too=/tmp/x", "--dump=1"]
    assert findings[0].fixes[0].changes == (
        set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2"),
        set_env("XLA_FLAGS", "--xla_dump_to=/tmp/x --xla_gpu_some_rare_flag=true"))
    assert findings[1].severity is Severity.WARNING and findings[1].evidence["suggestion"] == "xla_dump_to"


def test_every_flag_fix_proposes_the_same_corrected_variables():
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=on --tf_xla_cpu_global_jit=yes stray --xla_dump_to=/tmp/d",
           "XLA_FLAGS": "--tf_xla_min_cluster_size=4 --xla_dump_hlo_as_txt"}
    report = check_facts(make_facts(env=env), select=["XLA101", "XLA102", "XLA103"])
    assert report.codes() == ["XLA101", "XLA102", "XLA103"]
    assert len({f.fixes[0].changes for f in report.findings()}) == 1
    assert env_fixes(report) == {"TF_XLA_FLAGS": "--tf_xla_cpu_global_jit=true --tf_xla_min_cluster_size=4",
                                 "XLA_FLAGS": "--xla_dump_hlo_as_text --xla_dump_to=/tmp/d"}


def test_valid_xla_flags_are_silent():
    assert check_facts(make_facts(env={"XLA_FLAGS": "--xla_dump_to=/tmp/x --xla_gpu_new_thing=1"}),
                       select=["XLA103"]).codes() == []


def test_auto_jit_with_recompilations_from_profile():
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"}
    facts = make_facts(env=env, profile={"xla_recompilations": 14, "xla_compile_seconds": 31.5})
    finding = only(check_facts(facts, select=["XLA104"]))
    assert "14 recompilation(s), costing 31.5 s" in finding.message
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_cpu_global_jit"),)


def test_auto_jit_without_a_profile_says_what_it_risks_and_how_to_tell():
    """Issue 12 item 5: only a run can tell whether the shapes vary; the finding says so at info level."""
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=4"}
    finding = only(check_facts(make_facts(env=env, gpus=gpu_devices(A100)), select=["XLA104"]))
    assert finding.severity is Severity.INFO
    assert finding.message == (
        "auto-clustering is on for the whole process (--tf_xla_auto_jit=2): if the input shapes vary (batch size, "
        "sequence length, a smaller last batch), every new shape compiles the clusters again, seconds each. To "
        "tell: `tfdoctor profile` reports XLA recompilations, `tfdoctor fix --validate` measures the job without "
        "it. If it hurts: pad or bucket the shapes, or use jit_compile=True on chosen functions")
    assert finding.evidence == {"env.TF_XLA_FLAGS": env["TF_XLA_FLAGS"], "profile.xla_recompilations": "not measured"}
    (fix,) = finding.fixes
    assert (fix.applicability, fix.changes) == (Applicability.UNSAFE,
                                                (set_env("TF_XLA_FLAGS", "--tf_xla_min_cluster_size=4"),))


def test_auto_jit_measured_without_recompilations_or_off_is_silent():
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}
    assert check_facts(make_facts(env=env, gpus=gpu_devices(A100), profile={"xla_recompilations": 0}),
                       select=["XLA104"]).codes() == []
    assert check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=0"}, profile={"xla_recompilations": 9}),
                       select=["XLA104"]).codes() == []
    # On the CPU without --tf_xla_cpu_global_jit nothing is clustered: XLA105's case, not this one.
    assert check_facts(make_facts(env=env), select=["XLA104"]).codes() == []


def test_auto_jit_on_cpu_needs_cpu_global_jit():
    finding = only(check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}), select=["XLA105"]))
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"),)
    assert check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}, gpus=gpu_devices(T4)),
                       select=["XLA105"]).codes() == []


def test_xla_devices_flag():
    env = {"TF_XLA_FLAGS": "--tf_xla_enable_xla_devices --tf_xla_auto_jit=2"}
    finding = only(check_facts(make_facts(env=env, gpus=gpu_devices(T4)), select=["XLA106"]))
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2"),)
    assert check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_enable_xla_devices=false"}),
                       select=["XLA106"]).codes() == []


# -- GPU runtime -------------------------------------------------------------------------------

def test_multi_gpu_with_global_thread_mode():
    finding = only(check_facts(make_facts(gpus=gpu_devices(A100, A100)), select=["GPU1"]))
    assert finding.code == "GPU101"
    assert env_fixes(check_facts(make_facts(gpus=gpu_devices(A100, A100)), select=["GPU101"])) == {
        "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "2"}


def test_single_gpu_input_bound_profile_triggers_thread_mode():
    facts = make_facts(gpus=gpu_devices(T4), profile={"input_bound": True})
    assert check_facts(facts, select=["GPU101"]).codes() == ["GPU101"]
    assert check_facts(make_facts(gpus=gpu_devices(T4)), select=["GPU101"]).codes() == []


def test_private_thread_mode_is_silent():
    env = {"TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "2"}
    assert check_facts(make_facts(env=env, gpus=gpu_devices(A100, A100)), select=["GPU1"]).codes() == []


def test_thread_settings_invalid():
    assert only(check_facts(make_facts(env={"TF_GPU_THREAD_MODE": "private"}), select=["GPU102"])).message.startswith(
        "TF_GPU_THREAD_MODE='private' is not one of")
    finding = only(check_facts(make_facts(env={"TF_GPU_THREAD_COUNT": "2"}), select=["GPU102"]))
    assert finding.message == "TF_GPU_THREAD_COUNT=2 is ignored: TF_GPU_THREAD_MODE is unset"
    finding = only(check_facts(make_facts(env={"TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "0"}),
                               select=["GPU102"]))
    assert finding.fixes[0].changes == (set_env("TF_GPU_THREAD_COUNT", "2"),)


def test_more_ranks_than_gpus_without_memory_growth():
    facts = make_facts(env={"SLURM_NTASKS_PER_NODE": "8"}, gpus=gpu_devices(A100, A100, A100, A100))
    finding = only(check_facts(facts, select=["GPU103"]))
    assert finding.evidence["env.SLURM_NTASKS_PER_NODE"] == 8 and finding.evidence["gpus.host"] == 4
    assert finding.fixes == (EnvFix("Let TensorFlow grow GPU memory on demand",
                                    (set_env("TF_FORCE_GPU_ALLOW_GROWTH", "true"),)),)


def test_one_gpu_per_task_is_not_sharing():
    # Slurm --gpus-per-task: 4 tasks, each with its own CUDA_VISIBLE_DEVICES, on a 4-GPU host.
    facts = make_facts(env={"SLURM_NTASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "2"},
                       gpus=gpu_devices(A100, A100, A100, A100))
    assert check_facts(facts, select=["GPU103"]).codes() == []


def test_nvml_processes_mark_a_shared_gpu():
    facts = make_facts(gpus=gpu_devices(T4, compute_processes=[{"pid": 4242, "used_mib": 900}]))
    assert only(check_facts(facts, select=["GPU103"])).evidence == {
        "nvml.devices.compute_processes": {0: 1}, "env.TF_FORCE_GPU_ALLOW_GROWTH": None, "env.TF_GPU_ALLOCATOR": None}


def test_shared_gpu_with_growth_or_one_rank_per_gpu_is_silent():
    gpus = gpu_devices(A100, A100)
    assert check_facts(make_facts(env={"LOCAL_WORLD_SIZE": "4", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}, gpus=gpus),
                       select=["GPU103"]).codes() == []
    assert check_facts(make_facts(env={"LOCAL_WORLD_SIZE": "4", "TF_GPU_ALLOCATOR": "cuda_malloc_async"}, gpus=gpus),
                       select=["GPU103"]).codes() == []
    assert check_facts(make_facts(env={"LOCAL_WORLD_SIZE": "2"}, gpus=gpus), select=["GPU103"]).codes() == []


def test_memory_settings_invalid():
    report = check_facts(make_facts(env={"TF_FORCE_GPU_ALLOW_GROWTH": "1", "TF_GPU_ALLOCATOR": "async"}),
                         select=["GPU104"])
    assert [f.fixes[0].changes for f in report.findings()] == [(set_env("TF_FORCE_GPU_ALLOW_GROWTH", "true"),),
                                                               (set_env("TF_GPU_ALLOCATOR", "cuda_malloc_async"),)]
    finding = only(check_facts(make_facts(env={"TF_GPU_ALLOCATOR": "cuda_malloc"}), select=["GPU104"]))
    assert finding.fixes[0].changes == (unset_env("TF_GPU_ALLOCATOR"),)
    assert check_facts(make_facts(env={"TF_FORCE_GPU_ALLOW_GROWTH": "false", "TF_GPU_ALLOCATOR": "cuda_malloc_async"}),
                       select=["GPU104"]).codes() == []


def test_log_level_hiding_warnings():
    finding = only(check_facts(make_facts(env={"TF_CPP_MIN_LOG_LEVEL": "3"}), select=["GPU105"]))
    assert "warnings and errors" in finding.message
    assert finding.fixes[0].changes == (set_env("TF_CPP_MIN_LOG_LEVEL", "1"),)
    assert check_facts(make_facts(env={"TF_CPP_MIN_LOG_LEVEL": "1"}), select=["GPU105"]).codes() == []


def test_determinism_left_on():
    env = {"TF_DETERMINISTIC_OPS": "1", "TF_CUDNN_DETERMINISTIC": "true"}
    finding = only(check_facts(make_facts(env=env), select=["GPU106"]))
    assert finding.evidence == {"env.TF_DETERMINISTIC_OPS": "1", "env.TF_CUDNN_DETERMINISTIC": "true"}
    assert finding.fixes[0].applicability is Applicability.UNSAFE
    assert finding.fixes[0].changes == (unset_env("TF_DETERMINISTIC_OPS"), unset_env("TF_CUDNN_DETERMINISTIC"))
    assert check_facts(make_facts(env={"TF_DETERMINISTIC_OPS": "0"}), select=["GPU106"]).codes() == []
