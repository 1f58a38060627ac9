"""Input sources: raw-record DataFrames with Spark's Kafka-source schema.

- `parquet.read_parquet_dump` reads files, folders or globs of raw records.
- `kafka.read_kafka` reads a Kafka topic (default `__consumer_offsets`) as a bounded batch through
  the `offsets_kafka` Python data source; `kafka.resolve_end_offsets` fixes the end offsets.

Errors a caller maps to exit codes (see ../shared/spec/contract.md, "Exit status"):
`InputNotReadable` -> 3 (missing path, unreachable broker, unknown topic, not authorized);
`SourceConfigError` -> 2 (bad or incomplete source options).
Both carry ONE line meant for stderr, with secrets redacted.
"""

from __future__ import annotations


class InputNotReadable(Exception):
    """The input cannot be read: missing path, unreachable broker, unknown topic, no access.

    `str(exc)` is one line saying what and where; it never contains a secret.
    """


class SourceConfigError(ValueError):
    """The source options are invalid or incomplete (a usage/configuration error)."""


__all__ = ["InputNotReadable", "SourceConfigError"]
