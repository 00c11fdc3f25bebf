"""The one redactor (tfdoctor.facts.redact): a corpus of real secret formats that must go, a corpus of
real-looking non-secrets that must stay, properties over arbitrary text, and every output path it guards."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_cli import run_cli
from tfdoctor.facts.redact import REDACTED, excerpt, redact_text, redact_value

# Each secret is planted inside ordinary text; none of its characters may survive. These are the
# documented example or test formats of each provider (none is a live credential).
SECRETS = {
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-session-key-id": "ASIAY34FZKBOKMUTVV7A",
    "github-classic": "ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r",
    "github-oauth": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "github-fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP0123456789ab",
    "gitlab-pat": "glpat-xYz12AbCdEf34GhIjK5l",
    "gitlab-deploy": "gldt-AbCdEfGhIjKlMnOpQrSt12",
    "slack-bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack-user": "xoxp-1234567890-1234567890-1234567890123-0123456789abcdef0123456789abcdef",
    "slack-app": "xapp-1-A0123456789-1234567890123-0123456789abcdef",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
           ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "huggingface": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "google-api": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "npm": "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
}
# (text with a secret, the secret part that must disappear, a part that must stay)
IN_CONTEXT = [
    ("https://alice:s3cr3tPw@pypi.example.com/simple", "s3cr3tPw", "pypi.example.com/simple"),
    ("https://x-access-token:abc123def@github.com/org/repo.git", "abc123def", "github.com/org/repo.git"),
    ("/opt/lib:https://bob:hunter22@mirror.example/lib:/usr/lib64", "hunter22", "/usr/lib64"),
    ("/srv/py:https://store.example/pkgs?token=Zq8xT5wq&v=2", "Zq8xT5wq", "v=2"),
    ("s3://bucket/obj?X-Amz-Signature=deadbeefcafe1234&X-Amz-Date=20260101", "deadbeefcafe1234", "X-Amz-Date"),
    ("password=hunter2 user=bob", "hunter2", "user=bob"),
    ("DB_PASSWD='c0rrect horse'", "c0rrect horse", "DB_PASSWD="),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY"),
    ('{"api_key": "k-123-456", "host": "node1"}', "k-123-456", '"host": "node1"'),
    ("Authorization: Bearer abcdef0123456789xyz", "abcdef0123456789xyz", "Authorization"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "Authorization"),
    ("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nok",
     "b3BlbnNzaC1rZXktdjEAAAAA", "ok"),
]
# Real-looking values tfdoctor needs: not one character may change.
NON_SECRETS = [
    "/usr/local/cuda-12.4/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu",
    "/home/alice/.venvs/tf/lib/python3.11/site-packages/nvidia/cudnn/lib",
    "12.4.1", "8.9.7.29", "535.183.01", "2.16.1+nv24.05",
    "gpu-node-017.cluster.example.org", "login01.hpc.example.edu:6817",
    "GPU-5f8e6a2c-1b2d-4c3e-9f4a-0123456789ab", "MIG-9c4a2f61-0b7e-5d3c-8e21-7f6a5b4c3d2e",
    "/root/.cache/pip/wheels/3f/ab/9d1c0e6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
    "/tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.whl",
    "tensorflow/__init__.py,sha256=Q2p4pJd0f9pKX8f2cGxPq7bKQ0m1l8x9h2rYx1h4F3E,21832",
    "0000:3b:00.0", "mlx5_0:1,mlx5_1:1", "granularity=fine,compact,1,0", "{0}:4:2,{8:4}",
    "--xla_gpu_autotune_level=4 --xla_dump_to=/tmp/xla", "Basic configuration checks passed",
    "compute capability 8.0 (sm_80)", "/proc/driver/nvidia/gpus/0000:3b:00.0/information",
    '{"cluster": {"worker": ["host1:2222", "host2:2222"]}, "task": {"type": "worker", "index": 0}}',
    "4(x2)", "0-63", "tokenizer output at /data/tokens/train-00001.tfrecord",
]


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_format_is_redacted_in_text_and_values(name):
    secret = SECRETS[name]
    text = f"the job failed near {secret} (see log)"
    assert secret not in redact_text(text) and REDACTED in redact_text(text)
    assert redact_text(text).endswith("(see log)")
    assert redact_value({"SOME_VARIABLE": f"x {secret} y"}) == {"SOME_VARIABLE": REDACTED}


@pytest.mark.parametrize(("text", "secret", "kept"), IN_CONTEXT)
def test_secrets_in_context_go_and_the_context_stays(text, secret, kept):
    for redacted in (redact_text(text), redact_value(text)):
        assert secret not in redacted
        assert REDACTED in redacted
    assert kept in redact_text(text)


@pytest.mark.parametrize("value", NON_SECRETS)
def test_ordinary_values_are_left_alone(value):
    assert redact_text(value) == value
    assert redact_value({"LD_LIBRARY_PATH": value}) == {"LD_LIBRARY_PATH": value}


def test_json_in_a_variable_is_redacted_key_by_key():
    tf_config = {"cluster": {"chief": ["c:2222"], "worker": ["w1:2222"]}, "task": {"type": "worker", "index": 0},
                 "rpc_layer": "grpc", "auth": {"token": "s3cr3t-token-value"}}
    redacted = redact_value({"TF_CONFIG": json.dumps(tf_config)})
    back = json.loads(redacted["TF_CONFIG"])
    assert back["auth"] == REDACTED  # a secret-named key goes whole
    assert back["cluster"] == tf_config["cluster"] and back["task"] == tf_config["task"]


def test_free_text_and_secret_named_variables_go_whole():
    redacted = redact_value({"SLURM_JOB_COMMENT": "ticket 42, deploy with pw hunter2", "GITHUB_TOKEN": "abc",
                             "NCCL_IB_HCA": "mlx5_0"})
    assert redacted == {"SLURM_JOB_COMMENT": REDACTED, "GITHUB_TOKEN": REDACTED, "NCCL_IB_HCA": "mlx5_0"}


def test_excerpt_is_short_single_line_and_redacted():
    line = "root:$6$abc:19000:0:99999:7:::\n" * 1000 + "password=hunter2"
    shown = excerpt(line, 80)
    assert len(shown) <= 81 and "\n" not in shown and shown.endswith("…")
    assert excerpt("x password=hunter2 y") == f"x password={REDACTED} y"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_idempotent_and_never_grows_a_secret(text):
    once = redact_text(text)
    assert redact_text(once) == once


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(alphabet=st.characters(blacklist_categories=("L", "N")), max_size=20),
       suffix=st.text(alphabet=st.characters(blacklist_categories=("L", "N")), max_size=20),
       name=st.sampled_from(sorted(SECRETS)))
def test_a_token_between_any_separators_is_redacted(prefix, suffix, name):
    assert SECRETS[name] not in redact_text(prefix + SECRETS[name] + suffix)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.from_regex(r"/[a-z0-9_.+-]{1,12}(/[a-z0-9_.+-]{1,12}){0,4}", fullmatch=True), min_size=1,
                max_size=6))
def test_path_lists_are_never_changed(paths):
    value = ":".join(paths)
    assert redact_value({"PATH": value}) == {"PATH": value}


# -- every output path ---------------------------------------------------------------------------

PLANTED = {
    "TF_CONFIG": json.dumps({"cluster": {"worker": ["w1:2222"]}, "task": {"type": "worker", "index": 0},
                             "token": "tfc0nfigS3cret"}),
    "SLURM_JOB_COMMENT": "deploy key 0xC0MMENTSECRET",
    "LD_LIBRARY_PATH": "/usr/lib:https://u:ldpathS3cret@mirror.example/lib",
    "PYTHONPATH": "/srv:https://h.example/p?token=pyth0nS3cret",
    "OMP_NUM_THREADS": "glpat-ompVal0eS3cretAbCdEfGh",  # not a number: THR001 quotes it in its message
}
LEAKS = ("tfc0nfigS3cret", "0xC0MMENTSECRET", "ldpathS3cret", "pyth0nS3cret", "ompVal0eS3cret")


def _assert_clean(text: str) -> None:
    leaked = [leak for leak in LEAKS if leak in text]
    assert not leaked, f"leaked {leaked}"


def test_collect_redacts_every_planted_secret(tmp_path):
    done = run_cli(["collect"], cwd=tmp_path, env=PLANTED)
    assert done.returncode == 0, done.stderr
    _assert_clean(done.stdout)
    variables = json.loads(done.stdout)["sections"]["env"]["variables"]
    assert json.loads(variables["TF_CONFIG"])["task"] == {"type": "worker", "index": 0}
    assert variables["LD_LIBRARY_PATH"] == f"/usr/lib:https://{REDACTED}@mirror.example/lib"


@pytest.mark.parametrize("args", [["check"], ["check", "-v"], ["check", "--format", "json"], ["check", "-q"],
                                  ["fix", "--print"], ["fix", "--print", "--shell", "fish"]])
def test_reports_and_fix_comments_redact_what_they_quote(tmp_path, args):
    done = run_cli([*args, "--select", "THR001"], cwd=tmp_path, env=PLANTED)
    assert done.returncode in (0, 1), done.stderr
    assert "THR001" in done.stdout + done.stderr
    _assert_clean(done.stdout + done.stderr)
