"""The servers of the cluster tests (tests/cluster/servers.py), one of each per test session:

- `s3`: SeaweedFS serving S3 on 127.0.0.1;
- `cluster`: a Spark standalone master and two workers from the installed pyspark;
- `scram_broker`: an Apache Kafka 4.4 broker whose one listener is SASL_SSL (SCRAM-SHA-512, a
  self-signed CA made for it), with the login of conf/prod-example.toml (`SASL_USER`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broker.brokers import KafkaBroker
from tests.cluster.servers import (
    KAFKA_VERSION,
    OFFSETS_PARTITIONS,
    SASL_PASSWORD,
    SASL_USER,
    S3Server,
    SparkCluster,
    run_cluster,
    run_s3,
)


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with run_s3(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[SparkCluster]:
    with run_cluster(tmp_path_factory.mktemp("spark-cluster"), s3) as spark:
        yield spark


@pytest.fixture(scope="session")
def scram_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """Kafka 4.4 over SASL_SSL; offsets kept 7 days, as the profile's `retention` says."""
    settings = {
        "offsets.retention.minutes": str(7 * 24 * 60),
        "offsets.retention.check.interval.ms": "600000",
        "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    }
    work = tmp_path_factory.mktemp("kafka-scram")
    broker = KafkaBroker(KAFKA_VERSION, work, settings, scram_users={SASL_USER: SASL_PASSWORD})
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
