"""Input sources: raw-record DataFrames with Spark's Kafka-source schema.

- `parquet.read_parquet_dump` reads files, folders or globs of raw records.
- `kafka.read_kafka` reads a Kafka topic (default `__consumer_offsets`) as a bounded batch through
  Spark's Kafka connector; `kafka_admin.resolve_read_range` fixes the end offsets.

Errors a caller maps to exit codes (see ../shared/spec/contract.md, "Exit status"):
`InputNotReadable` -> 3 (missing path, unreachable broker, unknown topic, not authorized);
`SourceConfigError` -> 2 (bad or incomplete source options).
Both carry ONE line meant for stderr, with secrets redacted.
"""

from __future__ import annotations

import re


class InputNotReadable(Exception):
    """The input cannot be read: missing path, unreachable broker, unknown topic, no access.

    `str(exc)` is one line saying what and where; it never contains a secret.
    """


class SourceConfigError(ValueError):
    """The source options are invalid or incomplete (a usage/configuration error)."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (its type's name when it has none): what an
    `InputNotReadable` line quotes of the error behind it."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_WRAPPED = re.compile(r"(?:offsets_lib\.sources\.)?InputNotReadable: ([^\n]+)")


def unwrap_input_not_readable(exc: BaseException) -> InputNotReadable | None:
    """The InputNotReadable raised in a Python worker (an executor task) that Spark wrapped.

    Spark reports a Python worker's exception as a PythonException / Py4JJavaError whose text
    holds the worker's traceback; this finds `InputNotReadable: <line>` in it (the last one).
    Returns None when `exc` does not carry one.
    """
    if isinstance(exc, InputNotReadable):
        return exc
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        found = _WRAPPED.findall(str(exc))
        if found:
            return InputNotReadable(found[-1].strip())
        exc = exc.__cause__ or exc.__context__
    return None


__all__ = [
    "InputNotReadable",
    "SourceConfigError",
    "first_line",
    "unwrap_input_not_readable",
]
