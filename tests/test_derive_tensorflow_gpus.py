"""Layout, precision and XLA checks ask "can this TensorFlow use a GPU", not "does the host have one"
(issue 12 item 4): tensorflow-cpu or a build without CUDA on a GPU host runs every convolution on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts
from support.fake_site_packages import BUILD_INFO_CPU, BUILD_INFO_CUDA, FakeSitePackages
from support.framework_facts import A100, gpu_devices, make_facts

from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.facts.probes.pyenv_snapshot import snapshot

CHANNELS_FIRST = {"image_data_format": "channels_first", "floatx": "float32", "backend": "tensorflow"}


def gpu_host(site: FakeSitePackages | None, env: dict[str, str] | None = None, keras=CHANNELS_FIRST,
             flags: tuple[str, ...] = ("avx2", "fma")):
    facts = make_facts(env=env, gpus=gpu_devices(A100, A100), keras=keras, flags=flags)
    if site is not None:
        facts.sections["python"] = snapshot(paths=[str(site)], environ={}, prefix=str(site.path.parent / "prefix"))
    return facts


@pytest.fixture
def site(tmp_path: Path) -> FakeSitePackages:
    return FakeSitePackages(tmp_path / "site-packages")


def test_tensorflow_cpu_on_a_gpu_host_uses_no_gpu(site):
    site.tensorflow(name="tensorflow-cpu", version="2.21.0").healthy_dependencies()
    gpus = tensorflow_gpus(gpu_host(site))
    assert (gpus.gpus, len(gpus.visible)) == ((), 2)
    assert gpus.why_not == "tensorflow-cpu 2.21.0 is a CPU-only distribution"
    assert gpus.evidence == {"gpus.visible": 2, "gpus.usable_by_tensorflow": 0,
                             "tensorflow.distribution": "tensorflow-cpu"}


def test_a_build_without_cuda_under_the_gpu_name_uses_no_gpu(site):
    site.tensorflow(name="tensorflow", version="2.21.0", build_info=BUILD_INFO_CPU).healthy_dependencies()
    gpus = tensorflow_gpus(gpu_host(site))
    assert not gpus
    assert gpus.why_not == "tensorflow 2.21.0 was built without CUDA (build_info is_cuda_build: False)"


def test_the_cuda_build_uses_the_visible_gpus(site):
    site.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA).healthy_dependencies()
    gpus = tensorflow_gpus(gpu_host(site, env={"CUDA_VISIBLE_DEVICES": "1"}))
    assert [g.index for g in gpus.gpus] == [1]
    assert gpus.why_not == ""


def test_an_unreadable_installation_keeps_the_host_verdict():
    # No python facts (a facts file recorded without them): trust the host, as before.
    assert [g.index for g in tensorflow_gpus(gpu_host(None)).gpus] == [0, 1]


def test_channels_first_with_tensorflow_cpu_on_a_gpu_host(site):
    site.tensorflow(name="tensorflow-cpu").healthy_dependencies()
    report = check_facts(gpu_host(site), select=["LAY"])
    assert report.codes() == ["LAY101"]
    (finding,) = report.findings()
    assert finding.message == (
        "/home/u/.keras/keras.json sets image_data_format=channels_first but TensorFlow cannot use this host's "
        "GPUs (tensorflow-cpu 2.21.0 is a CPU-only distribution): every convolution runs on the CPU in a "
        "CPU-unfriendly layout")
    assert finding.evidence["gpus.usable_by_tensorflow"] == 0


def test_channels_first_with_the_cuda_build_is_silent(site):
    site.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA).healthy_dependencies()
    assert check_facts(gpu_host(site), select=["LAY"]).codes() == []


def test_precision_rules_follow_the_cpu_when_tensorflow_cannot_use_the_gpus(site):
    site.tensorflow(name="tensorflow-cpu").healthy_dependencies()
    env = {"TFDOCTOR_MIXED_PRECISION": "mixed_float16"}
    report = check_facts(gpu_host(site, env=env, keras=None), select=["MP"])
    assert report.codes() == ["MP103"]  # float16 on the CPU; not MP101/MP102 about the idle A100s
    assert report.findings()[0].message.startswith(
        "policy mixed_float16 (env.TFDOCTOR_MIXED_PRECISION) but TensorFlow cannot use this host's GPUs "
        "(tensorflow-cpu 2.21.0 is a CPU-only distribution): float16 on the CPU runs about 7.1× slower")
    # The tensor-core nudge belongs to a TensorFlow that can use the tensor cores.
    assert check_facts(gpu_host(site, keras=None), select=["MP"]).codes() == []
    cuda = FakeSitePackages(site.path.parent / "cuda-site")
    cuda.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA).healthy_dependencies()
    assert check_facts(gpu_host(cuda, keras=None), select=["MP"]).codes() == ["MP102"]


def test_auto_jit_on_a_gpu_host_with_tensorflow_cpu_is_not_clustered(site):
    site.tensorflow(name="tensorflow-cpu").healthy_dependencies()
    env = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}
    report = check_facts(gpu_host(site, env=env, keras=None), select=["XLA105"])
    assert report.codes() == ["XLA105"]
    assert "(tensorflow-cpu 2.21.0 is a CPU-only distribution)" in report.findings()[0].message
    cuda = FakeSitePackages(site.path.parent / "cuda-site")
    cuda.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA).healthy_dependencies()
    assert check_facts(gpu_host(cuda, env=env, keras=None), select=["XLA105"]).codes() == []
