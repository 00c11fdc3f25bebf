"""The one redactor (tfdoctor.facts.redact): a corpus of real secret formats that must go, a corpus of
real-looking non-secrets that must stay, properties over arbitrary text, and every output path it guards."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.command_line import run_cli

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


# -- issue 24: flag-style secrets, one-slash URLs, module names, linear time, every writer of facts --------

FLAG_SECRETS = [
    ("--tf_xla_auto_jit=2 --password=flagPw1 --xla_dump_to=/tmp/x", "flagPw1", "--xla_dump_to=/tmp/x"),
    ("train.py --api_key=flagKey2 --epochs=3", "flagKey2", "--epochs=3"),
    ("job --token flagTok3 --verbose", "flagTok3", "--verbose"),
    ("-password 'flag pw 4' rest", "flag pw 4", "rest"),
    ('--auth-token="flagTok5" x', "flagTok5", " x"),
    ("fatal: pw=flagPw6 in config", "flagPw6", "in config"),
    ("https:/alice:flagUrl7@pypi.example/simple", "flagUrl7", "pypi.example/simple"),
    ("/opt/lib:git+https:/flagUrl8@git.example/repo", "flagUrl8", "git.example/repo"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), [
    ("postgresql://tuner:pa/ss@db.example/optuna", "pa/ss", "@db.example/optuna"),  # SQLAlchemy takes it
    ("mysql+pymysql://u:a/b/c@db:3306/x?charset=utf8", "a/b/c", "@db:3306/x?charset=utf8"),
    ("redis://:s3c/ret@cache:6379/0", "s3c/ret", "@cache:6379/0"),
])
def test_a_url_password_holding_a_slash_is_redacted_whole(text, secret, kept):
    assert secret in text
    assert redact_text(text) == text.split("://")[0] + "://" + REDACTED + kept  # the user and the whole password


@pytest.mark.parametrize("text", ["git+https://github.com/org/repo.git@v1.2.0", "https://host:8080/path",
                                  "pip install git+https://example.org/a/b@main#egg=b"])
def test_a_vcs_reference_or_a_port_is_no_password(text):
    assert redact_text(text) == text


@pytest.mark.parametrize(("text", "secret", "kept"), FLAG_SECRETS)
def test_flag_style_secrets_and_one_slash_urls_are_redacted(text, secret, kept):
    for redacted in (redact_text(text), redact_value({"SLURM_JOB_NAME": text})["SLURM_JOB_NAME"]):
        assert secret not in redacted and REDACTED in redacted
    assert kept in redact_text(text)


@settings(max_examples=200, deadline=None)
@given(flag=st.sampled_from(["password", "api_key", "token", "auth_token", "db-passwd", "pw", "secret"]),
       dashes=st.sampled_from(["-", "--"]), sep=st.sampled_from(["=", " ", "  ", "\t"]),
       value=st.from_regex(r"[A-Za-z0-9_./+:@]{3,30}", fullmatch=True),
       before=st.sampled_from(["", "run ", "--xla_foo=1 ", "a b "]), after=st.sampled_from(["", " --x=1", " tail"]))
def test_a_secret_flag_value_never_survives(flag, dashes, sep, value, before, after):
    assert redact_text(f"{before}{dashes}{flag}{sep}{value}{after}") == f"{before}{dashes}{flag}{sep}{REDACTED}{after}"


@pytest.mark.parametrize("value", ["--xla_gpu_autotune_level=4 --xla_dump_to=/tmp/xla",
                                   "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit", "lib:/opt@2:/usr/lib",
                                   "--keyboard=us --monkey 3", "train --epochs 3 --batch-size 64"])
def test_ordinary_flags_and_path_lists_stay(value):
    assert redact_text(value) == value


def test_a_flag_value_split_from_its_flag_is_redacted_in_context():
    from tfdoctor.facts.redact import redact_in_context

    assert redact_in_context("--token", "tokVal9") == REDACTED
    assert redact_in_context("--epochs", "tokVal9") == "tokVal9"
    assert redact_in_context("", "ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r") == REDACTED


def test_standard_library_module_names_are_not_secrets():
    modules = {"secrets": "/usr/lib/python3.11", "token": "/usr/lib/python3.11", "tokenize": "/usr/lib/python3.11",
               "spwd": "/usr/lib/python3.11/lib-dynload", "keyring": "/x/ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r"}
    distributions = {"google-auth": {"version": "2.30.0", "location": "/site"}}
    redacted = redact_value({"python": {"modules": modules, "distributions": distributions}})
    assert redacted["python"]["modules"] == {**modules, "keyring": REDACTED}  # a token format still goes
    assert redacted["python"]["distributions"] == distributions
    assert redact_value({"env": {"GITHUB_TOKEN": "abc"}}) == {"env": {"GITHUB_TOKEN": REDACTED}}


def test_collect_keeps_standard_library_module_names(tmp_path):
    done = run_cli(["collect"], cwd=tmp_path)
    modules = json.loads(done.stdout)["sections"]["python"]["modules"]
    assert {"secrets", "token", "tokenize"} <= set(modules)
    assert REDACTED not in {modules["secrets"], modules["token"], modules["tokenize"]}


FLAG_PLANTED = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --password=flagS3cretA --api_key=flagS3cretB --token flagS3cretC",
                "XLA_FLAGS": "--xla_foo --token=flagS3cretD", "SLURM_JOB_NAME": "train --password=flagS3cretE",
                "SLURM_JOB_ID": "7", "LD_LIBRARY_PATH": "/x:https:/u:flagS3cretF@h.example/lib"}


@pytest.mark.parametrize("args", [["collect"], ["check", "-v"], ["check", "--format", "json"], ["check", "-q"],
                                  ["fix", "--write", "-"], ["report", "-o", "-"]])
def test_flag_secrets_never_reach_an_output(tmp_path, args):
    done = run_cli(args, cwd=tmp_path, env=FLAG_PLANTED)
    assert done.returncode in (0, 1), done.stderr
    shown = done.stdout + done.stderr
    if args[0] == "fix":  # the value a fix sets is the job's own value, exempt by design; comments are not
        shown = "\n".join(line for line in shown.splitlines() if not line.startswith(("TF_XLA_FLAGS=", "XLA_FLAGS=")))
    assert "XLA" in shown
    assert "flagS3cret" not in shown


# Each pattern of the redactor against the input that made it (or could make it) super-linear: the text is
# its trigger repeated to 120 KB, inside a variable as collect sees it. Before: 15–44 s for `a-a-a-…`.
ADVERSARIAL = {
    "URL_CREDENTIALS": "a-", "URL_CREDENTIALS one slash": "a:/a", "URL_CREDENTIALS password": "a://b:c/",
    "URL_CREDENTIALS password only": "a://:", "JWT": "eyJ-", "JWT run": "eyJaaaaaaaa.",
    "FLAG": "--a ", "FLAG quoted": "--token \"", "ASSIGNMENT": "a ", "ASSIGNMENT key": "a.",
    "ASSIGNMENT json": '"a":', "QUERY_SECRET": "?a-", "AUTH_SCHEME": "Bearer ",
    "AUTH_SCHEME header": "Authorization:a", "PRIVATE_KEY_BLOCK": "-----BEGIN A ", "TOKEN_FORMATS": "glpat-",
    "SECRET_NAME": "_KEY",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_every_redactor_pattern_is_linear_on_adversarial_text(name):
    import time

    fragment = ADVERSARIAL[name]
    text = fragment * (120_000 // len(fragment))
    started = time.process_time()
    redact_value({"XLA_FLAGS": text, text[:4000]: "x"})
    redact_text(text)
    excerpt(text)
    spent = time.process_time() - started
    assert spent < 3.0, f"{name}: {spent:.1f} s of CPU on 120 KB"


def test_profile_save_facts_and_its_json_go_through_the_redactor(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'workload failed: pw=stderrS3cret' >&2\nexit 1\n")
    fake.chmod(0o755)
    saved = tmp_path / "facts.json"
    done = run_cli(["profile", "--python", str(fake), "--save-facts", str(saved), "--format", "json"], cwd=tmp_path,
                   env={**PLANTED, **FLAG_PLANTED})
    assert done.returncode == 3, done.stderr
    _assert_clean(saved.read_text() + done.stdout)
    assert "flagS3cret" not in saved.read_text() and "stderrS3cret" not in done.stdout
    variables = json.loads(saved.read_text())["sections"]["env"]["variables"]
    assert json.loads(variables["TF_CONFIG"])["token"] == REDACTED


def test_a_tune_results_file_records_trial_errors_redacted(tmp_path):
    from tfdoctor.tune.results import ResultsLog, TrialRecord, load_results

    log = ResultsLog.create(tmp_path / "r.jsonl", {"objective": {"command": ["train.py", "--epochs=1"]}})
    log.append(TrialRecord(1, "search", {"OMP_NUM_THREADS": 2}, "failed", None, 1.0, {"OMP_NUM_THREADS": "2"},
                           error="Traceback … https://u:errS3cret@h/x --token errT0ken"))
    text = (tmp_path / "r.jsonl").read_text()
    assert "errS3cret" not in text and "errT0ken" not in text
    header, records = load_results(tmp_path / "r.jsonl")
    assert header["objective"]["command"] == ["train.py", "--epochs=1"]  # --resume runs it: kept as given
    assert records[0].params == {"OMP_NUM_THREADS": 2} and records[0].env == {"OMP_NUM_THREADS": "2"}


def test_a_failing_python_interpreter_stderr_is_redacted(tmp_path):
    bad = tmp_path / "python"
    bad.write_text("#!/bin/sh\necho 'cannot log in: pw=stderrPw1 --token stderrTok2 https:/u:stderrUrl3@h' >&2\n"
                   "exit 1\n")
    bad.chmod(0o755)
    done = run_cli(["check", "--python", str(bad), "-v", "--select", "PKG"], cwd=tmp_path)
    assert "failed the snapshot" in done.stdout
    assert "cannot log in: pw=<redacted> --token <redacted> https:/<redacted>@h" in done.stdout
    assert "Pw1" not in done.stdout and "Tok2" not in done.stdout
    assert "Url3" not in done.stdout


def test_tune_write_comments_redact_the_quoted_command(tmp_path):
    pytest.importorskip("optuna")
    done = run_cli(["tune", "--budget", "3", "--repeats", "1", "--leaders", "1", "--seed", "1", "--results",
                    str(tmp_path / "r.jsonl"), "--write", "-", "--metric", r"v: ([0-9]+)", "--", "sh", "-c",
                    "echo v: 3", "--password=tuneS3cret", "--token", "tuneT0ken"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "objective: sh -c" in done.stdout
    assert "tuneS3cret" not in done.stdout and "tuneT0ken" not in done.stdout


def test_a_url_cut_on_colons_is_redacted_in_every_record_of_a_split_path_list() -> None:
    """cuda_libs.ld_library_path_dirs holds LD_LIBRARY_PATH's entries as {dir, state} records (issue 37):
    `https://u:pw@host/lib` split on ':' leaves the password in a record of its own."""
    from tfdoctor.facts.redact import REDACTED, redact_value

    records = [{"dir": d, "state": "missing"} for d in ("/usr/lib", "https", "//u", "pw0rdS3cret@mirror.example/lib")]
    redacted = redact_value(records, "ld_library_path_dirs")
    assert "pw0rdS3cret" not in repr(redacted)
    assert redacted[0] == {"dir": "/usr/lib", "state": "missing"}
    assert redacted[3]["dir"] == REDACTED and all(r["state"] == "missing" for r in redacted)
