"""`offsets lag`'s rows: one run's lag, from its `lag` table or against log-end offsets asked now.

Without a source of log-end offsets the run's own `lag` table is read with delta-rs (no Spark).
With a file or a cluster the run's committed offsets are joined with the log-end offsets in
Arrow by the one lag rule (`audit.lag.lag_rows`, which `offsets run`'s tasks apply too): no JVM
(`offsets lag --end-offsets FILE` on 482 offsets, 2 cores at load ~21: 5.7-10.2 s, against
111 s when it joined them on a Spark session it started).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import lag
from offsets_lib.io import log_end_offsets, runs, sink, storage
from offsets_lib.io.sources import InputNotReadable
from offsets_lib.job.options import UsageError, kafka_client_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_to_report(output: str) -> str:
    """The run a lag report reads by default: the latest succeeded one (`io.runs.latest_run`).
    Returns its run id; `UsageError` (exit status 2) when no run succeeded."""
    try:
        return runs.latest_run(output)["run_id"]
    except LookupError as exc:
        raise UsageError(str(exc)) from None


def lag_report(
    output: str,
    run_id: str | None = None,
    *,
    end_offsets: str | None = None,
    bootstrap_servers: str | None = None,
    kafka_options: Sequence[str] = (),
    groups: Sequence[str] = (),
    spark: SparkSession | None = None,
) -> list[dict[str, Any]]:
    """The lag rows of one run (`audit.lag.LAG_COLUMNS`), unsorted; no Spark unless the
    log-end offsets file is on a file system only `spark` reaches. The log-end offsets come
    from ``end_offsets`` (a CSV or Parquet file), else ``bootstrap_servers``, else the run's
    `lag` table. Raises `InputNotReadable` (no `runs` or `offsets` table, an unreadable
    log-end offset source) or `UsageError` (no such run; no source and no `lag` table).
    """
    for name in ("runs", "offsets"):
        if not storage.is_delta_table(sink.table_uri(output, name)):
            raise InputNotReadable(f"no {name} table under {output}")
    run_id = run_id or run_to_report(output)
    columns = list(lag.LAG_COLUMNS)
    if not end_offsets and not bootstrap_servers:
        if not storage.is_delta_table(sink.table_uri(output, "lag")):
            raise UsageError(
                f"no lag table under {output}: give --end-offsets FILE or --bootstrap-servers"
            )
        rows = sink.read_table(output, "lag", run_id=run_id, columns=columns).to_pylist()
        return [r for r in rows if not groups or r["group_id"] in groups]

    offsets = sink.read_table(output, "offsets", run_id=run_id)
    if offsets.num_rows == 0 and not sink.read_table(output, "runs", run_id=run_id).num_rows:
        raise UsageError(f"no run {run_id!r} under {output}")
    return _joined_rows(offsets, end_offsets, bootstrap_servers, kafka_options, groups, spark)


def _joined_rows(
    offsets: pa.Table,
    end_offsets: str | None,
    bootstrap_servers: str | None,
    kafka_options: Sequence[str],
    groups: Sequence[str],
    spark: SparkSession | None,
) -> list[dict[str, Any]]:
    """The run's committed offsets joined with log-end offsets read now (`lag_report`), in
    Arrow: a few rows per partition of a cluster and per committed offset, no JVM."""
    as_of = offsets.column("as_of")[0].as_py() if offsets.num_rows else datetime.now(UTC)
    if end_offsets:  # Spark reads only a file system pyarrow does not reach
        ends = log_end_offsets.from_file(end_offsets, spark)
    else:
        settings = kafka_client_settings(bootstrap_servers, kafka_options)
        topics = sorted({t for t in offsets.column("topic").to_pylist() if t})
        ends = log_end_offsets.from_cluster(settings, topics)
    offsets = offsets.select(
        ["group_id", "topic", "partition", "committed_offset", "commit_timestamp"]
    )
    if groups:
        offsets = offsets.filter(pc.is_in(offsets.column("group_id"), pa.array(list(groups))))
    joined = lag.with_end_offsets(offsets, lag.latest_end_offsets(ends))
    result = lag.lag_rows(joined, as_of_ms=int(as_of.timestamp() * 1000))
    return result.select(list(lag.LAG_COLUMNS)).to_pylist()
