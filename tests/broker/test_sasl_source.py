"""`--source kafka` against a Kafka 4.4.0 broker that requires a login (SASL PLAIN) and
authorizes every request (KRaft's StandardAuthorizer, no ACL allows anything by default).

One set of `--kafka-option` settings, in librdkafka's names or the Java client's, must log in
both the driver's offset look-ups (confluent-kafka) and Spark's connector (the Java client): the
tables then equal the Parquet path's on the same records, and the password shows nowhere. A
user who logs in but has no ACL may not describe or read `__consumer_offsets`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.io.sources import InputNotReadable
from offsets_lib.io.sources.kafka_admin import resolve_read_range
from offsets_lib.io.sources.kafka_names import jaas_config
from tests.broker.brokers import KafkaBroker
from tests.kafka.test_kafka_job import (
    create_topic,
    produce_rows,
    rows_on_own_partitions,
    scenario_specs,
    table_rows,
)
from tests.support.cli_lines import said

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

USER, PASSWORD = "alice", "alice-Pa55-w0rd"
# logs in, but no ACL names this user: the authorizer denies every topic
UNAUTHORIZED_USER, UNAUTHORIZED_PASSWORD = "mallory", "mallory-Pa55-w0rd"
# may describe __consumer_offsets (list its offsets), not read it
DESCRIBE_ONLY_USER, DESCRIBE_ONLY_PASSWORD = "dora", "dora-Pa55-w0rd"
OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = "offsets-sasl"
LOGIN_RDKAFKA = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "PLAIN",
    "sasl.username": USER,
    "sasl.password": PASSWORD,
}
LOGIN_JAVA = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": jaas_config("PLAIN", USER, PASSWORD),
}


# KRaft's authorizer; the broker's own logins (admin on the SASL listener, ANONYMOUS on the
# plaintext controller listener) and alice may do anything, nobody else anything at all
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": f"User:admin;User:ANONYMOUS;User:{USER}",
    "allow.everyone.if.no.acl.found": "false",
}


@pytest.fixture(scope="module")
def sasl_dump(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """A broker with a login, a topic holding golden scenarios' records, and the same records
    (with the broker's offsets) as a Parquet dump audited by the Parquet path."""
    work = tmp_path_factory.mktemp("kafka-sasl")
    broker = KafkaBroker(
        "4.4.0",
        work / "broker",
        settings=AUTHORIZER,
        sasl_users={
            USER: PASSWORD,
            UNAUTHORIZED_USER: UNAUTHORIZED_PASSWORD,
            DESCRIBE_ONLY_USER: DESCRIBE_ONLY_PASSWORD,
        },
    )
    broker.start()
    try:
        specs = scenario_specs([1, 2, 3, 4, 5, 6])
        rows, base = rows_on_own_partitions(specs)
        create_topic(broker.bootstrap, TOPIC, base, LOGIN_RDKAFKA)
        stored = produce_rows(broker.bootstrap, TOPIC, rows, LOGIN_RDKAFKA)
        _allow_describe_only(broker)
        pq.write_table(pa.Table.from_pylist(stored), work / "dump.parquet")
        output = work / "tables"
        as_of = str(specs[0]["config"]["evaluated_at_ms"])
        args = ["--input", str(work / "dump.parquet"), "--as-of", as_of, "--run-id", "parquet"]
        result = _run("--source", "parquet", "--output", str(output), *args)
        assert result.exit_code == 0, result.output
        yield {"broker": broker, "output": output, "as_of": as_of}
    finally:
        broker.stop()


def _allow_describe_only(broker: KafkaBroker) -> None:
    """__consumer_offsets made (a group's commit asks for its coordinator), and dora's one ACL,
    DESCRIBE on it, in force (this broker's authorizer lists it) before any test runs."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    consumer = Consumer({**broker.client_conf, "group.id": "made-offsets-topic"})
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
    consumer.close()
    binding = AclBinding(
        ResourceType.TOPIC,
        OFFSETS_TOPIC,
        ResourcePatternType.LITERAL,
        f"User:{DESCRIBE_ONLY_USER}",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    admin = AdminClient(broker.client_conf)
    admin.create_acls([binding])[binding].result(timeout=30)
    found = AclBindingFilter(*[getattr(binding, f) for f in _BINDING_FIELDS])
    for _ in range(100):
        if binding in admin.describe_acls(found, request_timeout=10).result():
            return
        time.sleep(0.1)
    raise AssertionError(f"the broker does not list {binding}")


_BINDING_FIELDS = (
    "restype",
    "name",
    "resource_pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


def _run(*args: str):
    return CliRunner().invoke(main, ["run", *args])


def _kafka_run(dump: dict[str, Any], run_id: str, login: dict[str, str], topic: str = TOPIC):
    options = [item for k, v in login.items() for item in ("--kafka-option", f"{k}={v}")]
    return _run(
        "--source",
        "kafka",
        "--bootstrap-servers",
        dump["broker"].bootstrap,
        "--topic",
        topic,
        *options,
        "--output",
        str(dump["output"]),
        "--as-of",
        dump["as_of"],
        "--run-id",
        run_id,
    )


def _shows_no_password(result, output: Path) -> None:
    assert PASSWORD not in result.output
    assert PASSWORD not in (result.stderr or "")
    runs = [p.read_bytes() for p in (output / "runs").rglob("*.parquet")]
    assert runs and not any(PASSWORD.encode() in data for data in runs)


@pytest.mark.parametrize("names", ["librdkafka", "java"])
def test_one_login_in_either_clients_names_reads_through_both_clients(sasl_dump, names):
    login = LOGIN_RDKAFKA if names == "librdkafka" else LOGIN_JAVA
    result = _kafka_run(sasl_dump, f"kafka-{names}", login)
    assert result.exit_code == 0, result.output
    output = str(sasl_dump["output"])
    via_kafka = table_rows(output, f"kafka-{names}")
    assert via_kafka["offsets"] and via_kafka["groups"]
    assert via_kafka == table_rows(output, "parquet")
    _shows_no_password(result, sasl_dump["output"])


def test_a_wrong_password_fails_on_the_driver_in_one_line_without_the_password(sasl_dump):
    wrong = {**LOGIN_RDKAFKA, "sasl.password": PASSWORD + "-wrong"}
    result = _kafka_run(sasl_dump, "wrong", wrong)
    assert result.exit_code == 3, result.output
    lines = said(result.stderr)
    assert len(lines) == 1, lines
    assert "authentication" in lines[0].lower() or "sasl" in lines[0].lower(), lines
    assert PASSWORD not in result.output and PASSWORD not in result.stderr


def test_a_wrong_password_is_not_readable_and_not_logged(sasl_dump, caplog):
    """The driver's look-up alone, its debug log kept: one line naming the broker."""
    bootstrap = sasl_dump["broker"].bootstrap
    wrong = {**LOGIN_RDKAFKA, "bootstrap.servers": bootstrap, "sasl.password": PASSWORD + "!"}
    caplog.set_level(logging.DEBUG, logger="offsets_lib")
    with pytest.raises(InputNotReadable) as info:
        resolve_read_range(wrong, TOPIC)
    message = str(info.value)
    assert message.startswith(f"kafka authentication failed (bootstrap.servers={bootstrap}")
    assert "\n" not in message
    assert PASSWORD not in message and PASSWORD not in caplog.text


def test_a_user_without_acls_fails_on_the_driver_in_one_line_without_the_password(sasl_dump):
    """mallory logs in, and may neither describe nor read `__consumer_offsets`: exit 3 (input
    not readable: authorization) with one line naming the topic, before any Spark job."""
    login = {
        **LOGIN_RDKAFKA,
        "sasl.username": UNAUTHORIZED_USER,
        "sasl.password": UNAUTHORIZED_PASSWORD,
    }
    result = _kafka_run(sasl_dump, "no-acl", login, topic="__consumer_offsets")
    assert result.exit_code == 3, result.output
    lines = said(result.stderr)
    assert lines == [
        "offsets: kafka: not authorized to describe topic '__consumer_offsets'"
        f" (bootstrap.servers={sasl_dump['broker'].bootstrap}, security.protocol=SASL_PLAINTEXT)"
    ], lines
    assert UNAUTHORIZED_PASSWORD not in result.output + result.stderr


def test_a_user_who_may_describe_but_not_read_fails_before_the_read_in_one_line(sasl_dump):
    """dora may list __consumer_offsets' offsets but not read its records: the driver asks the
    broker what this login may do before Spark's connector would fail in its tasks."""
    login = {
        **LOGIN_RDKAFKA,
        "sasl.username": DESCRIBE_ONLY_USER,
        "sasl.password": DESCRIBE_ONLY_PASSWORD,
    }
    result = _kafka_run(sasl_dump, "describe-only", login, topic=OFFSETS_TOPIC)
    assert result.exit_code == 3, result.output
    lines = said(result.stderr)
    assert lines == [
        "offsets: kafka: not authorized to read topic '__consumer_offsets'"
        f" (bootstrap.servers={sasl_dump['broker'].bootstrap}, security.protocol=SASL_PLAINTEXT)"
    ], lines
    assert DESCRIBE_ONLY_PASSWORD not in result.output + result.stderr
