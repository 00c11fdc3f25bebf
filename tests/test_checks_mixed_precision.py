"""LAY and MP: data layout and mixed precision against the hardware."""

from __future__ import annotations

import pytest
from conftest import check_facts
from support.framework_facts import A100, GTX1660, P100, T4, V100, gpu_devices, make_facts

from tfdoctor.model import AdminFix, Applicability, EnvFix, PythonFix, Severity, Status, unset_env

CHANNELS_FIRST = {"image_data_format": "channels_first", "floatx": "float32", "backend": "tensorflow"}


def codes(facts, select):
    return check_facts(facts, select=select).codes()


def only(report):
    findings = report.findings()
    assert len(findings) == 1, [f.code for f in findings]
    return findings[0]


# -- LAY ---------------------------------------------------------------------------------------

def test_channels_first_on_cpu_host():
    finding = only(check_facts(make_facts(keras=CHANNELS_FIRST), select=["LAY"]))
    assert finding.code == "LAY101"
    assert finding.evidence == {"keras.config.image_data_format": "channels_first",
                                "keras.path": "/home/u/.keras/keras.json", "gpus.visible": 0}
    admin, python = finding.fixes
    assert isinstance(admin, AdminFix) and "channels_last" in admin.title
    assert isinstance(python, PythonFix) and python.applicability is Applicability.UNSAFE
    assert 'set_image_data_format("channels_last")' in python.code


def test_channels_last_or_missing_keras_json_is_silent():
    assert codes(make_facts(keras={"image_data_format": "channels_last"}), ["LAY"]) == []
    assert codes(make_facts(keras=None), ["LAY"]) == []


def test_channels_first_on_gpu_host_without_mixed_precision_is_silent():
    assert codes(make_facts(keras=CHANNELS_FIRST, gpus=gpu_devices(A100)), ["LAY"]) == []


def test_channels_first_hidden_gpus_count_as_no_gpu():
    facts = make_facts(keras=CHANNELS_FIRST, gpus=gpu_devices(A100), env={"CUDA_VISIBLE_DEVICES": ""})
    assert codes(facts, ["LAY"]) == ["LAY101"]


def test_channels_first_with_mixed_float16_on_gpu():
    facts = make_facts(keras=CHANNELS_FIRST, gpus=gpu_devices(A100), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"})
    finding = only(check_facts(facts, select=["LAY"]))
    assert finding.code == "LAY102"
    assert finding.evidence["env.TFDOCTOR_MIXED_PRECISION"] == "mixed_float16"


def test_channels_first_with_auto_mixed_precision_on_gpu():
    facts = make_facts(keras=CHANNELS_FIRST, gpus=gpu_devices(V100), env={"TF_ENABLE_AUTO_MIXED_PRECISION": "1"})
    assert codes(facts, ["LAY"]) == ["LAY102"]


def test_unknown_keras_config_is_not_checked():
    facts = make_facts(keras={"$unknown": "/home/u/.keras/keras.json is not JSON"})
    report = check_facts(facts, select=["LAY101"])
    assert report.result("LAY101").status is Status.NOT_CHECKED


# -- MP on GPUs --------------------------------------------------------------------------------

def test_mixed_float16_on_pascal_gets_no_gain():
    facts = make_facts(gpus=gpu_devices(P100), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"})
    finding = only(check_facts(facts, select=["MP"]))
    assert finding.code == "MP101"
    assert finding.evidence == {"env.TFDOCTOR_MIXED_PRECISION": "mixed_float16",
                                "gpus.visible": ["0: Tesla P100-PCIE-16GB (cc 6.0)"]}
    assert 'set_global_policy("float32")' in finding.fixes[0].code


def test_mixed_float16_on_gtx_1660_has_no_tensor_cores():
    facts = make_facts(gpus=gpu_devices(GTX1660), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"})
    assert codes(facts, ["MP"]) == ["MP101"]


def test_mixed_float16_on_t4_is_silent():
    facts = make_facts(gpus=gpu_devices(T4), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"})
    assert codes(facts, ["MP"]) == []


def test_bfloat16_before_ampere():
    facts = make_facts(gpus=gpu_devices(V100), env={"TFDOCTOR_MIXED_PRECISION": "mixed_bfloat16"})
    finding = only(check_facts(facts, select=["MP"]))
    assert finding.code == "MP101" and "bfloat16 tensor cores" in finding.message


def test_measured_gain_silences_the_hardware_table():
    facts = make_facts(gpus=gpu_devices(P100), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
                       profile={"mixed_precision_speedup": 1.3, "mixed_precision_policy": "mixed_float16"})
    assert codes(facts, ["MP101"]) == []


def test_tensor_core_gpu_in_float32_suggests_mixed_float16():
    finding = only(check_facts(make_facts(gpus=gpu_devices(V100, V100)), select=["MP"]))
    assert finding.code == "MP102"
    assert [f.title for f in finding.fixes] == ["Set the Keras policy to mixed_float16 (tensor cores)"]
    assert finding.fixes[0].applicability is Applicability.UNSAFE


def test_ampere_also_suggests_bfloat16():
    finding = only(check_facts(make_facts(gpus=gpu_devices(A100)), select=["MP102"]))
    assert [f.code.splitlines()[1] for f in finding.fixes] == [
        'tf.keras.mixed_precision.set_global_policy("mixed_float16")',
        'tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")',
    ]


def test_mixed_gpu_fleet_with_old_card_is_not_nudged():
    assert codes(make_facts(gpus=gpu_devices(A100, P100)), ["MP102"]) == []


def test_measured_no_gain_silences_suggestion():
    facts = make_facts(gpus=gpu_devices(A100),
                       profile={"mixed_precision_speedup": 0.98, "mixed_precision_policy": "mixed_float16"})
    assert codes(facts, ["MP102"]) == []


def test_declared_mixed_float16_on_tensor_cores_is_silent():
    facts = make_facts(gpus=gpu_devices(A100), env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"})
    assert codes(facts, ["MP"]) == []


# -- MP on CPUs --------------------------------------------------------------------------------

def test_float16_on_cpu_is_slow_and_suggests_bfloat16_when_available():
    facts = make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"}, flags=("avx512f", "avx512_bf16"))
    finding = only(check_facts(facts, select=["MP103"]))
    assert "7.1× slower" in finding.message
    assert finding.evidence["cpu.cpuinfo.flags.bf16"] == ["avx512_bf16"]
    assert 'set_global_policy("mixed_bfloat16")' in finding.fixes[0].code


def test_float16_on_cpu_without_bf16_suggests_float32():
    finding = only(check_facts(make_facts(env={"TFDOCTOR_MIXED_PRECISION": "float16"}), select=["MP103"]))
    assert 'set_global_policy("float32")' in finding.fixes[0].code


def test_float16_on_cpu_uses_measured_figure():
    facts = make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
                       profile={"mixed_precision_speedup": 0.25, "mixed_precision_policy": "mixed_float16"})
    finding = only(check_facts(facts, select=["MP103"]))
    assert "4.0× slower" in finding.message and "measured on this host" in finding.message


def test_float32_on_cpu_without_bf16_is_silent():
    assert codes(make_facts(env={"TFDOCTOR_MIXED_PRECISION": "float32"}), ["MP"]) == []


def test_bfloat16_on_cpu_without_bf16_units():
    finding = only(check_facts(make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_bfloat16"}), select=["MP"]))
    assert finding.code == "MP104"
    assert finding.evidence["cpu.cpuinfo.flags.bf16"] == []


def test_bfloat16_on_cpu_with_amx_is_silent():
    facts = make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_bfloat16"}, flags=("amx_bf16", "amx_tile"))
    assert codes(facts, ["MP"]) == []


def test_bf16_cpu_without_policy_suggests_mixed_bfloat16():
    finding = only(check_facts(make_facts(flags=("avx512_bf16",)), select=["MP"]))
    assert finding.code == "MP105"
    assert "2.0×" in finding.message
    assert finding.fixes[0].code.endswith('set_global_policy("mixed_bfloat16")\n')


def test_bf16_cpu_with_gpu_is_not_nudged_to_cpu_bfloat16():
    assert codes(make_facts(flags=("avx512_bf16",), gpus=gpu_devices(T4)), ["MP105"]) == []


def test_misspelt_policy_declaration():
    finding = only(check_facts(make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_fp16"}), select=["MP"]))
    assert finding.code == "MP001"
    assert finding.evidence == {"env.TFDOCTOR_MIXED_PRECISION": "mixed_fp16"}


# -- TF_ENABLE_AUTO_MIXED_PRECISION and keras.json floatx -------------------------------------

def _with_tensorflow(facts, version: str, cuda: str | None = None):
    """`facts` with a python section naming TensorFlow `version` (tests/support/gpu_scenarios.py's shape)."""
    from support.gpu_scenarios import python_section

    facts.sections["python"] = python_section(tf_version=version, cuda=cuda, pins={})
    return facts


def test_auto_mixed_precision_without_tensor_cores_is_a_no_op_in_nvidia_tensorflow_1():
    facts = _with_tensorflow(make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "1"}), "1.15.5")
    finding = only(check_facts(facts, select=["MP"]))
    assert finding.code == "MP106"
    assert finding.fixes == (EnvFix("Unset TF_ENABLE_AUTO_MIXED_PRECISION",
                                    (unset_env("TF_ENABLE_AUTO_MIXED_PRECISION"),)),)


def test_auto_mixed_precision_on_tensor_cores_explains_rewrite_in_nvidia_tensorflow_1():
    facts = _with_tensorflow(make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "true"}, gpus=gpu_devices(V100)),
                             "1.15.5", cuda="10.0")
    finding = only(check_facts(facts, select=["MP"]))
    assert (finding.code, finding.severity) == ("MP107", Severity.INFO)
    assert "rewrites graphs to float16 in this TensorFlow 1 build" in finding.message
    assert [f.kind for f in finding.fixes] == ["env", "python"]


@pytest.mark.parametrize("version, under", [("2.15.1", "TensorFlow 2.15.1"), (None, "TensorFlow 2")])
def test_auto_mixed_precision_is_ignored_by_tensorflow_2(version, under):
    # TensorFlow 2 never reads the variable (tfdoctor/knowledge/tensorflow_variables.toml): MP107 says so,
    # on a tensor-core GPU as on a CPU (where MP106 used to call it a skipped rewrite), and stays a warning.
    for gpus, fix_kinds in ((gpu_devices(V100), ["env", "python"]), (None, ["env"])):
        facts = make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "1"}, gpus=gpus)
        if version:
            facts = _with_tensorflow(facts, version, cuda="12.2")
        finding = only(check_facts(facts, select=["MP"]))
        assert (finding.code, finding.severity) == ("MP107", Severity.WARNING)
        assert finding.message == (f"TF_ENABLE_AUTO_MIXED_PRECISION=1 has no effect in {under}: TensorFlow 2 never "
                                   "reads it (it is NVIDIA's TensorFlow 1 switch), so nothing is rewritten to "
                                   "float16; the job runs in float32")
        assert [f.kind for f in finding.fixes] == fix_kinds
        assert "https://github.com/NVIDIA/tensorflow/issues/39" in finding.evidence["sources"]


def test_auto_mixed_precision_with_a_keras_policy_names_the_policy_as_what_works():
    facts = make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "1", "TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
                       gpus=gpu_devices(V100))
    finding = only(check_facts(facts, select=["MP107"]))
    assert finding.message.endswith("the declared Keras policy mixed_float16 is what gives mixed precision here")
    assert [f.kind for f in finding.fixes] == ["env"]  # no policy to suggest: it is already set


def test_auto_mixed_precision_off_is_silent():
    assert codes(make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "0"}, gpus=gpu_devices(P100)),
                 ["MP106", "MP107"]) == []


def test_float16_floatx_is_pure_low_precision():
    facts = make_facts(keras={"floatx": "float16", "image_data_format": "channels_last"}, gpus=gpu_devices(A100))
    report = check_facts(facts, select=["MP"])
    assert report.codes() == ["MP108"]
    finding = report.findings()[0]
    assert finding.evidence == {"keras.config.floatx": "float16", "keras.path": "/home/u/.keras/keras.json"}
    assert 'set_global_policy("mixed_float16")' in finding.fixes[1].code


def test_float16_floatx_on_cpu_also_slow():
    facts = make_facts(keras={"floatx": "float16"})
    assert codes(facts, ["MP"]) == ["MP103", "MP108"]
