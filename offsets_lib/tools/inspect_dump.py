"""`offsets inspect`: print a raw `__consumer_offsets` dump one decoded record per line.

An operator's quick look, so no Spark and no JVM: the Parquet dump (files, folders or globs,
Spark's Kafka-source schema, ../shared/spec/contract.md "Inputs") is streamed with
`pyarrow.dataset` and every record goes through the project's codec (`offsets_lib.wire`).

Order (records.md section 11, item 1: by partition, then offset), read by `tools.dump_reader`
with memory bounded by one file. Duplicate (partition, offset) pairs are all printed.

Text format, one line per record (`format_line`):

    p=0 o=4 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3
        offset=42 leaderEpoch=5 metadata="" commitTimestamp=2023-11-13T22:13:20Z
    p=0 o=5 ... OffsetCommit[1] group=g1 topic=orders partition=1 -> TOMBSTONE
    p=0 o=7 ... GroupMetadata[2] group=g1 -> v3 protocolType=consumer generation=5 ... members=[m1
        client=client-m1 host=/10.0.0.12 rebalanceTimeout=300000 sessionTimeout=45000
        subscription=v1[orders] assignment=v1[orders-0,1]]          (one line in reality)
    p=0 o=9 ... CONTROL COMMIT producer=7 epoch=0 coordinatorEpoch=0
    p=0 o=11 ... REJECTED unknown record type 99 key=0063... value=...
    p=0 o=12 ... OffsetCommit[1] group=g1 topic=t partition=0 -> REJECTED unknown value
        version 7 for OffsetCommit (valid 0-4) value=000700

- Position first: offsets-topic partition, log offset, record timestamp (ISO-8601 UTC, `-` when
  the dump has none), then the record name and type number, the key fields, `->`, the value.
- Field names are Kafka's own; only fields the value's version carries are printed, tagged fields
  only when set. `*Timestamp` fields print as ISO-8601 UTC (negative sentinels such as -1 stay
  numbers); strings are quoted (JSON escapes) when empty, `null`, or containing spaces or
  separators; bytes print as `<N bytes>`; arrays as `[a,b]`, nested structs as `{k=v k=v}`.
- GroupMetadata members print as `memberId instance=.. client=.. host=.. ...`, separated by `; `;
  with protocolType `consumer` the embedded ConsumerProtocolSubscription / Assignment are decoded
  inline (`v1[topics owned=..]`, `v1[topic-p,p topic-p]`, `none` for an empty assignment).
- A value decoded with an older same-version layout (records.md section 7) says
  `layout="..."`; trailing bytes and skipped unknown tags are noted in parentheses.
- Transactional data records end with `[txn producer=P epoch=E]` (when the dump has the
  batch-metadata columns); control records (`is_control`) print their marker.
- Undecodable records print `REJECTED` with the codec's reason and the bytes in hex (first 32
  bytes, then `...(N bytes)`); when the key decoded, the key is shown and only the value failed.

`--json` prints one JSON object per record instead (`to_json`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from offsets_lib import wire
from offsets_lib.tools.dump_reader import BATCH_SIZE, RawRecord, fragments, read_records
from offsets_lib.wire.layouts import Field, Message

HEX_BYTES = 32
"""Bytes of a rejected key/value shown in hex before truncation."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# ---------------------------------------------------------------------------------------------
# Decoding


@dataclass(frozen=True)
class Inspected:
    """A raw record with what the codec made of it (`record` or `control`)."""

    raw: RawRecord
    record: wire.DecodedRecord | None = None
    control: wire.DecodedControl | None = None

    @property
    def group_id(self) -> str | None:
        """The key's group id (`group` or `GroupId`), None for control/undecodable keys."""
        if self.record is None:
            return None
        key = self.record.key
        return key.get("group", key.get("GroupId"))

    @property
    def error(self) -> str | None:
        if self.control is not None:
            return self.control.error
        return self.record.error if self.record is not None else None


def inspect_record(raw: RawRecord) -> Inspected:
    """Decode one raw record; control records (`is_control` true) as transaction markers. Returns
    the record with the codec's result (`record`, or `control` for a marker)."""
    if raw.is_control:
        return Inspected(raw, control=wire.decode_control(raw.key, raw.value))
    return Inspected(raw, record=wire.decode_record(raw.key, raw.value))


def _value_message(record_type: int, layout: str) -> Message | None:
    rt = wire.RECORD_TYPES.get(record_type)
    if rt is None:
        return None
    current = wire.RECORD_TYPES[rt.value_from].value if rt.value_from is not None else rt.value
    return next((m for m in (current, *rt.historical) if m.label == layout), None)


# ---------------------------------------------------------------------------------------------
# Text format

_PLAIN = re.compile(r"[^\s\"'=\[\]{},;()<>]+")


def iso_ms(ms: int) -> str:
    """Epoch milliseconds -> `2023-11-13T22:13:20Z` (`.mmm` only when not a whole second). Returns
    the ISO-8601 UTC text; a value out of datetime's range stays a number."""
    try:
        dt = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return str(ms)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def quote(text: str | None) -> str:
    """A string as printed: bare when unambiguous, else JSON-quoted; None -> null."""
    if text is None:
        return "null"
    if text in ("null", "true", "false") or not _PLAIN.fullmatch(text) or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


def hex_preview(data: bytes | None) -> str:
    """A rejected key or value in hex, cut after `HEX_BYTES` bytes so a line stays short. Returns
    the hex, ``...(N bytes)`` when cut; ``null`` for None."""
    if data is None:
        return "null"
    data = bytes(data)
    if len(data) <= HEX_BYTES:
        return data.hex() if data else '""'
    return f"{data[:HEX_BYTES].hex()}...({len(data)} bytes)"


def _shown(field: Field, version: int, values: dict) -> bool:
    if not field.present_in(version):
        return False
    return not (field.tagged_in(version) and values.get(field.name) == field.default_value())


def _scalar(field: Field, value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if field.name.lower().endswith("timestamp") and value >= 0:
            return iso_ms(value)
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, uuid.UUID):
        return str(value)
    return quote(str(value))


def _struct(fields: tuple[Field, ...], version: int, values: dict) -> str:
    return " ".join(
        f"{f.name}={_value(f, version, values.get(f.name))}"
        for f in fields
        if _shown(f, version, values)
    )


def _value(field: Field, version: int, value: Any) -> str:
    if value is None:
        return "null"
    if field.is_struct:
        if field.is_array:
            items = ("{" + _struct(field.fields, version, v) + "}" for v in value)
            return "[" + ", ".join(items) + "]"
        return "{" + _struct(field.fields, version, value) + "}"
    if field.is_array:
        return "[" + ",".join(_scalar(field, v) for v in value) + "]"
    return _scalar(field, value)


def _topic_partitions(items: list[dict]) -> str:
    return " ".join(f"{quote(tp['Topic'])}-{','.join(map(str, tp['Partitions']))}" for tp in items)


def _embedded_notes(decoded: dict) -> list[str]:
    notes = []
    if decoded.get("UserData") is not None:
        notes.append(f"userData=<{len(decoded['UserData'])} bytes>")
    if decoded.get("trailing_bytes"):
        notes.append(f"(+{decoded['trailing_bytes']} trailing bytes)")
    return notes


def subscription_text(data: bytes) -> str:
    """ConsumerProtocolSubscription inline: `v1[orders,payments owned=orders-0]`."""
    d = wire.decode_subscription(data)
    if d["error"]:
        return f"<{len(data)} bytes, undecodable: {d['error']}>"
    parts = [",".join(quote(t) for t in d["Topics"])]
    version = d["version"]
    if version >= 1 and d.get("OwnedPartitions"):
        parts.append(f"owned={_topic_partitions(d['OwnedPartitions'])}")
    if version >= 2 and d.get("GenerationId", -1) != -1:
        parts.append(f"generation={d['GenerationId']}")
    if version >= 3 and d.get("RackId") is not None:
        parts.append(f"rack={quote(d['RackId'])}")
    parts += _embedded_notes(d)
    return f"v{version}[{' '.join(parts)}]"


def assignment_text(data: bytes) -> str:
    """ConsumerProtocolAssignment inline: `v1[orders-0,1 payments-3]`, `none` when empty."""
    d = wire.decode_assignment(data)
    if d["error"]:
        return f"<{len(data)} bytes, undecodable: {d['error']}>"
    if d["version"] is None:
        return "none"
    parts = [_topic_partitions(d["AssignedPartitions"]), *_embedded_notes(d)]
    return f"v{d['version']}[{' '.join(p for p in parts if p)}]"


_MEMBER_NAMES = {"groupInstanceId": "instance", "clientId": "client", "clientHost": "host"}


def _member(fields: tuple[Field, ...], version: int, m: dict, consumer: bool) -> str:
    parts = [quote(m.get("memberId"))]
    for f in fields:
        if f.name == "memberId" or not _shown(f, version, m):
            continue
        value = m.get(f.name)
        if f.name == "groupInstanceId" and value is None:
            continue  # dynamic member
        name = _MEMBER_NAMES.get(f.name, f.name)
        if consumer and f.name == "subscription" and value is not None:
            parts.append(f"{name}={subscription_text(value)}")
        elif consumer and f.name == "assignment" and value is not None:
            parts.append(f"{name}={assignment_text(value)}")
        else:
            parts.append(f"{name}={_value(f, version, value)}")
    return " ".join(parts)


def value_text(record_type: int, version: int, layout: str, values: dict) -> str:
    """The value fields of `version` as `name=value` pairs (GroupMetadata members compact)."""
    message = _value_message(record_type, layout)
    if message is None:  # cannot happen for a decoded value; keep the raw dict readable
        return " ".join(f"{k}={quote(str(v))}" for k, v in values.items())
    parts = []
    for f in message.fields:
        if not _shown(f, version, values):
            continue
        value = values.get(f.name)
        if record_type == 2 and f.name == "members" and value is not None:
            consumer = values.get("protocolType") == "consumer"
            members = "; ".join(_member(f.fields, version, m, consumer) for m in value)
            parts.append(f"members=[{members}]")
        else:
            parts.append(f"{f.name}={_value(f, version, value)}")
    return " ".join(parts)


def _position(raw: RawRecord) -> str:
    ts = "-" if raw.timestamp_ms is None or raw.timestamp_ms < 0 else iso_ms(raw.timestamp_ms)
    return f"p={raw.partition} o={raw.offset} {ts}"


def _txn_suffix(raw: RawRecord) -> str:
    if not raw.is_transactional:
        return ""
    return f" [txn producer={raw.producer_id} epoch={raw.producer_epoch}]"


def _control_text(raw: RawRecord, c: wire.DecodedControl) -> str:
    if c.error is not None:
        raw_bytes = f"key={hex_preview(raw.key)} value={hex_preview(raw.value)}"
        return f"CONTROL REJECTED {c.error} {raw_bytes}"
    name = c.type if c.type != "UNKNOWN" else f"UNKNOWN(type={c.type_id})"
    parts = ["CONTROL", name]
    if raw.producer_id is not None:
        parts.append(f"producer={raw.producer_id}")
    if raw.producer_epoch is not None:
        parts.append(f"epoch={raw.producer_epoch}")
    if c.coordinator_epoch is not None:
        parts.append(f"coordinatorEpoch={c.coordinator_epoch}")
    return " ".join(parts)


def _record_text(raw: RawRecord, r: wire.DecodedRecord) -> str:
    rt = wire.RECORD_TYPES.get(r.record_type) if r.record_type is not None else None
    if rt is None or (r.error is not None and not r.key):  # the key itself failed
        return f"REJECTED {r.error} key={hex_preview(raw.key)} value={hex_preview(raw.value)}"
    head = f"{rt.name}[{rt.type}] {_struct(rt.key.fields, 0, r.key)}"
    if r.key_trailing_bytes:
        head += f" (+{r.key_trailing_bytes} trailing key bytes)"
    if r.error is not None:
        return f"{head} -> REJECTED {r.error} value={hex_preview(raw.value)}"
    if r.is_tombstone:
        return f"{head} -> TOMBSTONE"
    body = f"v{r.version}"
    if r.layout != "current":
        body += f" layout={quote(r.layout)}"
    fields = value_text(rt.type, r.version, r.layout, r.value or {})
    if fields:
        body += f" {fields}"
    if r.trailing_bytes:
        body += f" (+{r.trailing_bytes} trailing bytes)"
    if r.unknown_tags:
        body += f" ({r.unknown_tags} unknown tags skipped)"
    return f"{head} -> {body}"


def format_line(item: Inspected) -> str:
    """The one-line text form of a record (see the module docstring)."""
    if item.control is not None:
        body = _control_text(item.raw, item.control)
    else:
        assert item.record is not None
        body = _record_text(item.raw, item.record) + _txn_suffix(item.raw)
    return f"{_position(item.raw)} {body}"


# ---------------------------------------------------------------------------------------------
# JSON format


def to_json(item: Inspected) -> dict:
    """One JSON object: position, batch metadata, record type, key, value fields, error.

    `key`/`value` are the codec's field dicts through `wire.to_jsonable` (bytes as hex, UUIDs as
    strings; `value` holds every field of the table, with defaults for those the version lacks).
    `key_hex`/`value_hex` (full) are added for rejected records.
    """
    raw = item.raw
    ts = raw.timestamp_ms
    out: dict[str, Any] = {
        "partition": raw.partition,
        "offset": raw.offset,
        "timestamp": iso_ms(ts) if ts is not None and ts >= 0 else None,
        "timestamp_ms": ts,
        "producer_id": raw.producer_id,
        "producer_epoch": raw.producer_epoch,
        "is_transactional": raw.is_transactional,
        "is_control": raw.is_control,
    }
    if item.control is not None:
        c = item.control
        out.update(
            record_type=None,
            record_name="CONTROL",
            control=c.type,
            control_type_id=c.type_id,
            control_version=c.version,
            coordinator_epoch=c.coordinator_epoch,
        )
    else:
        r = item.record
        assert r is not None
        out.update(
            record_type=r.record_type,
            record_name=r.name,
            group_id=item.group_id,
            key=wire.to_jsonable(r.key),
            version=r.version,
            layout=r.layout,
            tombstone=r.is_tombstone,
            value=wire.to_jsonable(r.value),
            trailing_bytes=r.trailing_bytes,
            key_trailing_bytes=r.key_trailing_bytes,
            unknown_tags=r.unknown_tags,
        )
    out["error"] = item.error
    if item.error is not None:
        out["key_hex"] = None if raw.key is None else bytes(raw.key).hex()
        out["value_hex"] = None if raw.value is None else bytes(raw.value).hex()
    return out


def json_line(item: Inspected) -> str:
    """`to_json` as one line of JSON (`--json`)."""
    return json.dumps(to_json(item), ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# The command's loop


@dataclass
class Counts:
    printed: int = 0
    rejected: int = 0


def inspect_dump(
    paths: Iterable[str],
    echo: Callable[[str], None],
    *,
    group: str | None = None,
    limit: int | None = None,
    as_json: bool = False,
    batch_size: int = BATCH_SIZE,
) -> Counts:
    """Print the dump's records through `echo`, filtered by group id, at most `limit` lines. Raises
    InputNotReadable (a missing or unreadable input)."""
    counts = Counts()
    if limit is not None and limit <= 0:
        fragments(paths)  # still report a missing input
        return counts
    render = json_line if as_json else format_line
    for raw in read_records(paths, batch_size=batch_size):
        item = inspect_record(raw)
        if group is not None and item.group_id != group:
            continue
        echo(render(item))
        counts.printed += 1
        counts.rejected += item.error is not None
        if limit is not None and counts.printed >= limit:
            break
    return counts
