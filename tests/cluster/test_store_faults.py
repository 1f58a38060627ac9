"""An object store that cannot be used gets one line naming the URI and the cause, exit 3, from
every command that reads or writes the tables, before any lock or Spark work: against the real
SeaweedFS of conftest.py (wrong keys, a missing bucket, identities whose policy denies) and an
endpoint where no server listens.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.cluster.servers import (
    ACCESS_KEY,
    BIN,
    DENIED_KEY,
    DENIED_SECRET,
    READER_KEY,
    READER_SECRET,
    SECRET_KEY,
    S3Server,
    clean_env,
)
from tests.support.ports import free_ports

pytestmark = pytest.mark.slow  # SeaweedFS's start, then one `offsets` process per case

TABLES = "s3a://audit/faults"
READ_ARGS = {
    "prune": ["--keep-runs", "3"],
    "fetch": ["--all-groups"],
    "fence-check": ["--group", "g", "--member", "m", "--member-epoch", "1", "--topic", "t",
                    "--partition", "0"],
    "lag": [],
}  # fmt: skip
NO_CREDENTIALS = (
    "no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or run with an"
    " instance role)"
)


def offsets(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "offsets"), *args], env=clean_env(env), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def keys(s3: S3Server, access: str, secret: str) -> dict[str, str]:
    return s3.env | {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret}


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("fault-dump") / "dump"
    done = offsets(["generate", "--out", str(out), "--groups", "3", "--records", "50"], {})
    assert done.returncode == 0, done.stderr
    return str(out)


def faults(s3: S3Server) -> dict[str, tuple[dict[str, str], str, str]]:
    """fault -> (environment, URI the line names, cause)."""
    (nobody,) = free_ports(1)
    stopped = f"http://127.0.0.1:{nobody}"
    return {
        "stopped": (
            s3.env | {"AWS_ENDPOINT_URL": stopped},
            TABLES,
            f"cannot reach {stopped}: connection refused",
        ),
        "wrong secret": (
            keys(s3, ACCESS_KEY, "not-the-secret"),
            TABLES,
            "wrong credentials: the secret key does not match the access key",
        ),
        "unknown key": (
            keys(s3, "no-such-key", SECRET_KEY),
            TABLES,
            "wrong credentials: the access key is not known to the store",
        ),
        "no credentials": ({"AWS_ENDPOINT_URL": s3.endpoint}, TABLES, NO_CREDENTIALS),
        "missing bucket": (s3.env, "s3a://no-such-bucket/faults", "the bucket does not exist"),
        "policy denies": (
            keys(s3, DENIED_KEY, DENIED_SECRET),
            TABLES,
            "access denied by the credentials' policy",
        ),
    }


FAULTS = ["stopped", "wrong secret", "unknown key", "no credentials", "missing bucket",
          "policy denies"]  # fmt: skip


def assert_one_line(done: subprocess.CompletedProcess, line: str) -> None:
    assert (done.returncode, done.stderr, done.stdout) == (3, f"offsets: {line}\n", "")


@pytest.mark.parametrize("fault", FAULTS)
def test_run_names_the_uri_and_the_cause_before_the_lock(
    s3: S3Server, dump: str, fault: str
) -> None:
    env, uri, cause = faults(s3)[fault]
    done = offsets(["run", "--input", dump, "--output", uri, "--run-id", "f"], env)
    assert_one_line(done, f"{uri}: {cause}")
    assert SECRET_KEY not in done.stderr


# each reading command once, each with another fault: they share one check (cli/app.py)
@pytest.mark.parametrize(
    ("command", "fault"),
    [("prune", "policy denies"), ("fetch", "missing bucket"), ("fence-check", "wrong secret"),
     ("lag", "stopped")],
)  # fmt: skip
def test_reading_commands_name_the_uri_and_the_cause(
    s3: S3Server, command: str, fault: str
) -> None:
    env, uri, cause = faults(s3)[fault]
    done = offsets([command, "--output", uri, *READ_ARGS[command]], env)
    assert_one_line(done, f"{uri}: {cause}")


def test_a_policy_that_allows_reading_but_not_writing_stops_the_run_at_the_lease(
    s3: S3Server, dump: str
) -> None:
    env = keys(s3, READER_KEY, READER_SECRET)
    done = offsets(["run", "--input", dump, "--output", TABLES, "--run-id", "f"], env)
    cause = "access denied by the credentials' policy"
    assert_one_line(done, f"{TABLES}/_offsets_audit.lock: {cause}")


def test_the_library_check_raises_the_same_line(s3: S3Server, monkeypatch) -> None:
    """What the report and the notebook call before reading (`storage.check_reachable`)."""
    from offsets_lib.io import storage

    for name, value in keys(s3, DENIED_KEY, DENIED_SECRET).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(storage.StoreUnreachable) as raised:
        storage.check_reachable("/a/local/path", None, TABLES)
    assert str(raised.value) == f"{TABLES}: access denied by the credentials' policy"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    storage.check_reachable(TABLES)  # the store answers: nothing raised


def test_the_lease_still_refuses_a_second_run_and_takes_over_its_own(
    s3: S3Server, monkeypatch
) -> None:
    from offsets_lib.io.lock import OutputLocked, _ObjectStoreLease

    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    output = f"{TABLES}/lease"
    with _ObjectStoreLease(output, "first"):
        with pytest.raises(OutputLocked) as raised:
            _ObjectStoreLease(output, "second").__enter__()
        assert "being written by run first" in str(raised.value)
        again = _ObjectStoreLease(output, "first")  # a retried attempt of the same run
        again.__enter__()
        again.stop.set()
        again.renewer.join()
