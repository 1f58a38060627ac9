"""Codec for the records of Kafka's `__consumer_offsets` topic (pure Python, stdlib only).

Layouts are data (`layouts.py`), one generic reader/writer interprets them (`codec.py`), the
same tables are compiled into specialised readers for speed (`compiled.py`, tested equal to the
generic reader), and the functions below are the public API (see docs/design.md). This package
must not import pyspark, pyarrow or numpy: Spark executors and tests load it on its own.
"""

from offsets_lib.wire.api import (
    DecodedControl,
    DecodedKey,
    DecodedRecord,
    DecodedValue,
    decode_assignment,
    decode_control,
    decode_key,
    decode_record,
    decode_subscription,
    decode_value,
    subscription_topics,
    to_jsonable,
)
from offsets_lib.wire.codec import DecodeError, EncodeError
from offsets_lib.wire.encoders import (
    encode_assignment,
    encode_control,
    encode_key,
    encode_subscription,
    encode_value,
)
from offsets_lib.wire.layouts import RECORD_TYPES, Field, Message, RecordType

__all__ = [
    "RECORD_TYPES",
    "DecodeError",
    "DecodedControl",
    "DecodedKey",
    "DecodedRecord",
    "DecodedValue",
    "EncodeError",
    "Field",
    "Message",
    "RecordType",
    "decode_assignment",
    "decode_control",
    "decode_key",
    "decode_record",
    "decode_subscription",
    "decode_value",
    "encode_assignment",
    "encode_control",
    "encode_key",
    "encode_subscription",
    "encode_value",
    "subscription_topics",
    "to_jsonable",
]
