"""Small `__consumer_offsets` logs for tests: real record bytes with batch metadata (producer
ids, control markers), as one raw batch an audit task takes (`task_input.RAW_ARROW`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from offsets_lib import wire
from offsets_lib.audit import task_input

Record = dict[str, Any]


def commit(
    offset: int,
    producer: int = -1,
    *,
    group: str = "g",
    topic: str = "orders",
    partition: int = 0,
    commit_ms: int = 1_000,
) -> Record:
    """An offset commit of `offset`; written by a transaction when `producer` >= 0."""
    key = wire.encode_key(1, {"group": group, "topic": topic, "partition": partition})
    fields = {"offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": commit_ms}
    return {"key": key, "value": wire.encode_value(1, 3, fields), "producer_id": producer}


def tombstone(*, group: str = "g", topic: str = "orders", partition: int = 0) -> Record:
    key = wire.encode_key(1, {"group": group, "topic": topic, "partition": partition})
    return {"key": key, "value": None, "producer_id": -1}


def marker(producer: int, kind: str = "commit") -> Record:
    key, value = wire.encode_control(kind, 0)
    return {"key": key, "value": value, "producer_id": producer, "is_control": True}


def group_record(record_type: int, group: str, value: dict | None, **key: str) -> Record:
    """A group-level record (type >= 3, value schema version 0); None value = tombstone."""
    key_bytes = wire.encode_key(record_type, {"GroupId": group, **key})
    value_bytes = None if value is None else wire.encode_value(record_type, 0, value)
    return {"key": key_bytes, "value": value_bytes, "producer_id": -1}


def classic_group_value(
    members: int, *, protocol_type: str, protocol: str, generation: int, state_ms: int
) -> bytes:
    """A classic group's GroupMetadataValue v3 with `members` copies of one member: Stable with
    members, Empty without."""
    member = {
        "memberId": "m", "groupInstanceId": None, "clientId": "c", "clientHost": "h",
        "rebalanceTimeout": 1, "sessionTimeout": 1, "subscription": b"", "assignment": b"",
    }  # fmt: skip
    value = {
        "protocolType": protocol_type, "generation": generation, "protocol": protocol,
        "leader": "m", "currentStateTimestamp": state_ms, "members": [member] * members,
    }  # fmt: skip
    return wire.encode_value(2, 3, value)


def batch(records: list[Record]) -> pa.RecordBatch:
    """The records at log offsets 0, 1, 2... of offsets-topic partition 0."""
    rows = []
    for offset, record in enumerate(records):
        producer = record["producer_id"]
        rows.append(
            {
                "log_partition": 0, "log_offset": offset, "log_timestamp_ms": 1_000 + offset,
                "key": record["key"], "value": record["value"], "producer_id": producer,
                "producer_epoch": 0 if producer >= 0 else -1,
                "is_transactional": producer >= 0,
                "is_control": record.get("is_control", False), "is_history": False,
            }
        )  # fmt: skip
    return pa.RecordBatch.from_pylist(rows, schema=task_input.RAW_ARROW)
