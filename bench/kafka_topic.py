"""A dump's records on a real Kafka topic, for the benches that read them through the connector.

The test harness's broker settings flush every record (for the coordinator tests); a bench
producing millions of records needs the broker's defaults for that, and no retention deleting
the dump's old timestamps (`BROKER_SETTINGS`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds

BROKER_SETTINGS = {
    "log.flush.interval.messages": "9223372036854775807",
    "log.retention.ms": "-1",
    "num.partitions": "50",
}


def log_order(dump: str) -> pa.Table:
    """The dump's partition, offset, timestamp (epoch ms), key and value in log order."""
    table = ds.dataset(dump, format="parquet").to_table(
        columns=["partition", "offset", "timestamp", "key", "value"]
    )
    table = table.sort_by([("partition", "ascending"), ("offset", "ascending")])
    millis = table.column("timestamp").cast(pa.timestamp("ms")).cast(pa.int64())
    return table.set_column(table.schema.get_field_index("timestamp"), "timestamp", millis)


def create_topic(client_conf: dict[str, str], topic: str, partitions: int) -> None:
    """`client_conf`: the broker's client settings (`KafkaBroker.client_conf`)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({**client_conf, "log_level": 0})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result()


def produce(client_conf: dict[str, str], topic: str, records: pa.Table, partitions: int) -> int:
    """Produce `records` (a pyarrow table of partition, timestamp, key, value) in order, the
    dump's partition p to the topic's partition p modulo `partitions`."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            **client_conf,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "enable.idempotence": True,
            "log_level": 0,
        }
    )
    produced = 0
    for batch in records.to_batches(max_chunksize=100_000):
        columns = batch.to_pydict()
        rows = zip(
            columns["partition"],
            columns["timestamp"],
            columns["key"],
            columns["value"],
            strict=True,
        )
        for partition, timestamp, key, value in rows:
            while True:
                try:
                    producer.produce(
                        topic,
                        key=key,
                        value=value,
                        partition=partition % partitions,
                        timestamp=timestamp,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            produced += 1
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("the producer did not deliver every record within 120 s")
    return produced
