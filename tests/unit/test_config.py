"""TOML profiles (offsets_lib.job.config): loading, validation, secrets, `--conf` on commands.

No Spark: the real `offsets run` is stopped right after it has built its RunOptions.
"""

from __future__ import annotations

import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.cli import run_command as cli_run
from offsets_lib.job import config
from offsets_lib.job.config import ProfileError, conf_option, load_profile, parse_profile
from offsets_lib.job.options import UsageError

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-Value-42"
NOW = time.strptime("2026-11-21 10:17:00", "%Y-%m-%d %H:%M:%S")


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list:
    """Run the real `offsets run` up to its RunOptions, then stop it (exit 2) before Spark."""
    seen: list = []
    real = cli_run.run_options

    def stop(kw: dict, *, now_ms: int):
        seen.append(real(kw, now_ms=now_ms))
        raise UsageError("stopped by the test")

    monkeypatch.setattr(cli_run, "run_options", stop)
    return seen


def run_cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["run", *args], env=env, catch_exceptions=False)


# ---- loading ----------------------------------------------------------------------------------


def test_shipped_local_profile_holds_every_run_option() -> None:
    profile = load_profile(ROOT / "conf" / "local.toml")
    assert profile.options == {
        "source": "parquet",
        "inputs": ["sample/dump"],
        "output": "sample/tables",
        "retention": "7d",
        "as_of": "latest",
        "coordinator": "new",
        "run_id": "local",
        "max_reject_ratio": 0.01,
        "delta_writer": "delta-rs",
    }
    assert profile.kafka == {}


def test_shipped_prod_profile_resolves_secret_and_hourly_run_id() -> None:
    profile = load_profile(
        ROOT / "conf" / "prod-example.toml", environ={"KAFKA_SASL_PASSWORD": SECRET}, now=NOW
    )
    assert profile.options["source"] == "kafka"
    assert profile.options["run_id"] == "hourly-20261121T10Z"
    assert profile.kafka["security.protocol"] == "SASL_SSL"
    assert profile.kafka["sasl.password"] == SECRET
    assert profile.secret_keys == {"sasl.password"}
    # every option of `offsets run` except the per-invocation --input/--kafka-option/--end-offsets
    # and --warehouse (local sessions only; spark-submit uses the cluster's catalog)
    per_invocation = {"conf", "inputs", "kafka_options", "end_offsets", "warehouse"}
    shown = {p.name for p in main.commands["run"].params if not p.hidden}  # not removed ones
    run_params = shown - per_invocation
    assert run_params <= set(profile.options)
    assert SECRET not in (ROOT / "conf" / "prod-example.toml").read_text()


def test_every_option_of_run_has_a_profile_key() -> None:
    keyed = {param for param, _, _ in config.RUN_KEYS.values()} | {config.KAFKA_PARAM}
    assert {p.name for p in main.commands["run"].params if not p.hidden} - {"conf"} == keyed


def test_kafka_keys_accept_dots_underscores_and_nested_tables() -> None:
    profile = parse_profile(
        {
            "kafka": {
                "security_protocol": "SSL",
                "sasl.mechanism": "PLAIN",
                "ssl": {"ca": {"location": "/ca.pem"}},
                "enable_ssl_certificate_verification": False,
                "socket_timeout_ms": 5000,
            }
        },
        environ={},
    )
    assert profile.kafka == {
        "security.protocol": "SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "enable.ssl.certificate.verification": "false",
        "socket.timeout.ms": "5000",
    }


def test_input_may_be_a_single_string() -> None:
    assert parse_profile({"input": "dump/"}).options == {"inputs": ["dump/"]}


# ---- errors -----------------------------------------------------------------------------------


def test_unknown_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, 'source = "parquet"\nouptut = "x"\n')
    with pytest.raises(ProfileError, match=r"unknown key 'ouptut'; known keys: as_of, "):
        load_profile(path)


def test_dashed_key_gets_a_hint() -> None:
    with pytest.raises(ProfileError, match=r"unknown key 'as-of' \(use underscores"):
        parse_profile({"as-of": "now"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_reject_ratio": "high"}, r"max_reject_ratio: expected number between 0 and 1"),
        ({"input": []}, r"input: expected Parquet dump path"),
        ({"output": True}, r"output: expected root folder .* got bool"),
        ({"kafka": "x"}, r"\[kafka\] must be a table"),
        ({"kafka": {"bootstrap_servers": "b:9092"}}, r"top-level key bootstrap_servers"),
        ({"kafka": {"acks": [1]}}, r"kafka.acks: expected a string, number or boolean"),
    ],
)
def test_bad_values_are_refused(data: dict, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        parse_profile(data, environ={})


def test_literal_secret_is_refused_without_echoing_it() -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile({"kafka": {"sasl.password": SECRET}}, environ={})
    assert "sasl_password_env" in str(err.value)
    assert SECRET not in str(err.value)


def test_missing_env_var_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, '[kafka]\nsasl_password_env = "AUDIT_TEST_MISSING_PW"\n')
    with pytest.raises(ProfileError) as err:
        load_profile(path, environ={"OTHER": SECRET})
    message = str(err.value)
    assert "environment variable AUDIT_TEST_MISSING_PW is not set" in message
    assert "sasl.password" in message
    assert SECRET not in message


def test_profile_found_under_conf_by_bare_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.CONF_DIR_ENV, raising=False)
    monkeypatch.chdir(ROOT)
    assert load_profile("local.toml").path == str(Path("conf") / "local.toml")


def test_profile_found_under_conf_dir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(config.CONF_DIR_ENV, str(ROOT / "conf"))
    assert load_profile("local.toml").options["output"] == "sample/tables"
    with pytest.raises(ProfileError, match=r"'nope.toml' not found \(looked at nope.toml, "):
        load_profile("nope.toml")


# ---- secrets never printed --------------------------------------------------------------------


def test_secret_absent_from_repr_and_str() -> None:
    profile = parse_profile(
        {"kafka": {"sasl_password_env": "PW", "sasl_username": "u"}}, environ={"PW": SECRET}
    )
    assert profile.kafka["sasl.password"] == SECRET
    for text in (repr(profile), str(profile), str(profile.kafka_masked()), f"{profile}"):
        assert SECRET not in text
        assert "'sasl.password': '***'" in text


def test_secret_absent_from_cli_output(tmp_path: Path, captured: list) -> None:
    path = write(
        tmp_path,
        'source = "kafka"\nbootstrap_servers = "b:9092"\noutput = "out"\n'
        '[kafka]\nsasl_password_env = "AUDIT_TEST_PW"\nsasl_mechanism = "PLAIN"\n',
    )
    env = {"AUDIT_TEST_PW": SECRET}
    result = run_cli("--conf", str(path), env=env)
    assert result.exit_code == 2
    assert captured[0].kafka_options["sasl.password"] == SECRET  # reached the Kafka client
    assert SECRET not in result.output
    helped = run_cli("--conf", str(path), "--help", env=env)
    assert helped.exit_code == 0, helped.output
    assert "--conf FILE" in helped.output
    assert SECRET not in helped.output


# ---- click: the command line wins -------------------------------------------------------------


def test_profile_fills_run_options(tmp_path: Path, captured: list) -> None:
    path = write(
        tmp_path,
        'input = ["a", "b"]\noutput = "tables"\nretention = "2d"\nas_of = 1700000000000\n'
        'coordinator = "classic-2.4"\nrun_id = "r1"\nmax_reject_ratio = 0.5\n',
    )
    assert run_cli("--conf", str(path)).exit_code == 2
    options = captured[0]
    assert options.inputs == ("a", "b")
    assert options.output == "tables"
    assert options.retention_ms == 2 * 86_400_000
    assert options.as_of == 1_700_000_000_000
    assert options.coordinator.value == "classic-2.4"
    assert (options.run_id, options.max_reject_ratio) == ("r1", 0.5)


def test_command_line_wins_over_profile(tmp_path: Path, captured: list) -> None:
    path = write(
        tmp_path,
        'input = ["a"]\noutput = "tables"\nrun_id = "from-profile"\nretention = "2d"\n',
    )
    # --conf given after the options it is overridden by: eager, so the order does not matter
    assert run_cli("--run-id", "cli", "--input", "c", "--conf", str(path)).exit_code == 2
    options = captured[0]
    assert (options.run_id, options.inputs, options.output) == ("cli", ("c",), "tables")
    assert options.retention_ms == 2 * 86_400_000


def test_kafka_options_merge_per_key(tmp_path: Path, captured: list) -> None:
    path = write(
        tmp_path,
        'source = "kafka"\nbootstrap_servers = "b:9092"\noutput = "o"\n'
        '[kafka]\nsecurity_protocol = "SASL_SSL"\nclient_id = "profile"\n',
    )
    args = ["--conf", str(path), "--kafka-option", "client.id=cli", "--kafka-option", "x.y=1"]
    assert run_cli(*args).exit_code == 2
    assert captured[0].kafka_options == {
        "security.protocol": "SASL_SSL",
        "client.id": "cli",
        "x.y": "1",
        "bootstrap.servers": "b:9092",
    }


def test_profile_kafka_settings_used_without_command_line(tmp_path: Path, captured: list) -> None:
    path = write(
        tmp_path,
        'source = "kafka"\nbootstrap_servers = "b:9092"\noutput = "o"\n'
        '[kafka]\nsecurity_protocol = "SSL"\n',
    )
    assert run_cli("--conf", str(path), "--bootstrap-servers", "c:1").exit_code == 2
    assert captured[0].kafka_options == {"security.protocol": "SSL", "bootstrap.servers": "c:1"}


def test_conf_option_on_any_command(tmp_path: Path) -> None:
    @click.command()
    @conf_option()
    @click.option("--output")
    def show(output: str) -> None:
        click.echo(f"output={output}")

    path = write(tmp_path, 'output = "from-profile"\nsource = "parquet"\n')
    result = CliRunner().invoke(show, ["--conf", str(path)])
    assert result.exit_code == 0
    assert "output=from-profile" in result.output
    assert "source not used by this command" in result.output


# ---- exit status 2, one line --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "not found"),
        ("source = [unclosed\n", "is not valid TOML"),
        ('surce = "kafka"\n', "unknown key 'surce'"),
        ('coordinator = "classic-9"\n', "coordinator: 'classic-9' is not one of"),
        ('shuffle = "spark"\n', "shuffle: --shuffle was removed: every run takes the file shuffle"),
        ('output = "o"\n[kafka]\nsasl_password_env = "AUDIT_TEST_UNSET_VAR"\n', "AUDIT_TEST_UNSET"),
    ],
)
def test_bad_profile_exits_2_with_one_line(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "p.toml" if text is None else write(tmp_path, text)
    result = CliRunner().invoke(main, ["run", "--conf", str(path)], env={})
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("offsets: ")
    assert message in lines[0]


def test_undecodable_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(b"\xff\xfe\x00")
    result = CliRunner().invoke(main, ["run", "--conf", str(path)])
    assert result.exit_code == 2
    assert "is not UTF-8 text" in result.output


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"output": "s3://b/t", "database": "audit", "source": "kafka"}, {"output": "s3://b/t"}),
        (
            {"database": "audit", "warehouse": "/w", "retention": "7d"},
            {"database": "audit", "warehouse": "/w"},
        ),
        ({"source": "parquet", "input": ["dump"]}, {}),
    ],
)
def test_tables_default_map_is_where_the_tables_are(data: dict, expected: dict) -> None:
    """A run's profile tells a command on its tables only where they are: its output when it
    has one (a catalog run's tables are there too), else its database."""
    assert parse_profile(data).tables_default_map() == expected


def test_tables_profile_resolves_no_kafka_secret() -> None:
    data = {"output": "t", "kafka": {"sasl_password_env": "NOT_SET_ANYWHERE"}}
    with pytest.raises(ProfileError, match="NOT_SET_ANYWHERE is not set"):
        parse_profile(data, environ={})
    profile = parse_profile(data, environ={}, resolve_kafka=False)
    assert (profile.kafka, profile.tables_default_map()) == ({}, {"output": "t"})


def test_readers_take_the_runs_profile_with_the_cluster_from_env(
    no_spark: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`offsets lag --conf` asks the profile's cluster with its login (the password from the
    environment); fetch and fence-check take where the tables are and need no secret."""
    from click.testing import CliRunner

    from offsets_lib.cli import main
    from offsets_lib.tools import lag_report

    path = write(
        tmp_path,
        'output = "t"\nbootstrap_servers = "b:9093"\nsource = "kafka"\n'
        '[kafka]\nsasl_username = "u"\nsasl_password_env = "AUDIT_TEST_LAG_PW"\n',
    )
    asked = {}

    def fake_report(root, run_id, **kw):
        asked.update(root=root, **kw)
        return []

    monkeypatch.setattr(lag_report, "lag_report", fake_report)
    refused = CliRunner().invoke(main, ["lag", "--conf", str(path)])
    assert refused.exit_code == 2 and "AUDIT_TEST_LAG_PW" in refused.output, refused.output
    monkeypatch.setenv("AUDIT_TEST_LAG_PW", SECRET)
    line = ["lag", "--conf", str(path), "--kafka-option", "client.id=c"]
    result = CliRunner().invoke(main, line)
    assert result.exit_code == 0, result.output
    assert (asked["root"], asked["bootstrap_servers"]) == ("t", "b:9093")
    assert asked["kafka_options"] == ("sasl.username=u", f"sasl.password={SECRET}", "client.id=c")
    monkeypatch.delenv("AUDIT_TEST_LAG_PW")
    fetched = CliRunner().invoke(main, ["fetch", "--conf", str(path), "--group", "g"])
    assert (fetched.exit_code, fetched.output) == (
        3,
        "offsets: no tables under t (no runs table): run `offsets run` first\n",
    )
