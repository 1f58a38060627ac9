"""The split audit: offset commits reduced per offset key first, then the usual audit.

A group's records all meet in one audit task, so one dominant group made one task hold its whole
share of a dump. The map drops the commit values a later plain value of the same key replaces
(audit.superseded_commits); a task that stays oversized (its group's commits transactional, or
each of another key) takes this path: its records first go to tasks by offset key
(routing.audit_tasks_of with `by_offset_key`), where audit.commit_reduction keeps the few
commits per key that the audit needs and counts the rest; the kept commits and the group-level
records then reach the per-group audit as staged pieces (exchange.audit_pieces).

`oversized_pieces` takes the oversized tasks' pieces of the map, cut again by offset key, and
`reduce_pieces` runs the first step over them; it writes the forwarded records as pieces under
the run's staging folder, and its counts as staged metric and stats rows that join the audit's
manifest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import SparkSession

from offsets_lib.audit import commit_reduction
from offsets_lib.engine import exchange, routing
from offsets_lib.engine.piece_files import (
    Route,
    arrow_uri,
    cut,
    routed_pieces,
    task_records,
    write_piece_file,
)
from offsets_lib.engine.staging import MANIFEST_ARROW, Staging
from offsets_lib.engine.task_runner import run_tasks
from offsets_lib.io import spark_settings

PIECE = "piece"  # manifest kind of a forwarded piece (path, batch, task)
REDUCED_ARROW = (
    MANIFEST_ARROW.append(pa.field("batch", pa.int32()))
    .append(pa.field("task", pa.int32()))
    .append(pa.field("num_bytes", pa.int64()))
)


def _reduce_task(
    batches: list[pa.RecordBatch], *, staging: Staging, tasks: int
) -> Iterator[pa.RecordBatch]:
    """One first-step task: reduce its SPLIT_ARROW records, write the forwarded ones as pieces
    by group task, stage its counts; yields REDUCED_ARROW rows (pieces and staged files)."""
    table = (
        pa.Table.from_batches(batches).cast(commit_reduction.SPLIT_ARROW)
        if batches
        else commit_reduction.SPLIT_ARROW.empty_table()
    )
    reduced = commit_reduction.reduce_commits(
        table.to_batches(), needs_decoding=routing.decoded_by_key_split(table)
    )
    pieces = write_piece_file(
        cut([reduced.forwarded], tasks), arrow_uri(f"{staging.uri}/forwarded")
    )
    rows: list[dict[str, Any]] = [
        {
            "kind": PIECE,
            "path": piece["path"],
            "batch": piece["batch"],
            "task": piece["task"],
            "num_rows": piece["num_rows"],
            "num_bytes": piece["num_bytes"],
        }
        for piece in pieces.to_pylist()
    ]
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=REDUCED_ARROW)
    for staged in staging(reduced.counted):
        yield _with_piece_columns(staged)


_PIECE_COLUMNS = ("batch", "task", "num_bytes")  # REDUCED_ARROW's own, after MANIFEST_ARROW's


def _with_piece_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    nulls = [pa.nulls(batch.num_rows, REDUCED_ARROW.field(n).type) for n in _PIECE_COLUMNS]
    return pa.RecordBatch.from_arrays([*batch.columns, *nulls], schema=REDUCED_ARROW)


def gathered(pieces: list[dict[str, Any]], *, tasks: int, cores: int) -> tuple[list, int]:
    """The first step's pieces (by offset-key task of `tasks`) gathered into as many tasks as
    their records need (routing.tasks_for): offset-key task k is reduced in task k % that
    number, which keeps each key in one task. Measured (2 cores): a dominant group's
    3.3M commits in 20 first-step tasks spent ~1.3 s of the tasks' 4.1 s outside the reduce."""
    owned = sum(p["num_rows"] for p in pieces if p["task"] != routing.MARKERS)
    reducers = routing.tasks_for(owned, cores=cores, at_most=tasks)
    return [
        p if p["task"] == routing.MARKERS else dict(p, task=p["task"] % reducers) for p in pieces
    ], reducers


@dataclass(frozen=True)
class ReduceTask:
    """First-step task t: the records of its routed pieces (`routes[t]`, marker copies flagged
    `is_copy`) reduced per offset key (`_reduce_task`) -> REDUCED_ARROW rows."""

    routes: list[list[Route]]
    staging: Staging
    tasks: int
    schema: ClassVar[pa.Schema] = REDUCED_ARROW

    def __call__(self, task: int) -> Iterator[pa.RecordBatch]:
        if not self.routes[task]:  # no piece went to this task
            return
        records = task_records(self.routes[task], copies_as_history=False)
        yield from _reduce_task(records, staging=self.staging, tasks=self.tasks)


def reduce_pieces(
    spark: SparkSession, pieces: list[dict[str, Any]], *, staging: Staging, tasks: int
) -> list[dict[str, Any]]:
    """First step over pieces cut by offset-key task (`oversized_pieces`), in `gathered` tasks
    -> REDUCED_ARROW rows (one Spark job)."""
    reducing, reducers = gathered(pieces, tasks=tasks, cores=spark_settings.parallelism(spark))
    routes = routed_pieces(reducing, tasks=reducers)
    reduced = run_tasks(spark, ReduceTask(routes, staging, tasks), reducers)
    return [r.asDict() for r in reduced.collect()]


def oversized_pieces(
    spark: SparkSession,
    pieces: list[dict[str, Any]],
    oversized: set[int],
    *,
    staging: Staging,
    tasks: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The first step's pieces for the `oversized` audit tasks of a per-group map
    (exchange.map_pieces) only: their offset commits (and the records that resolve and
    delimit them) cut again by offset key (exchange.remap_pieces), for `reduce_pieces`; and
    their other records, in pieces that go to the per-group audit directly. Every other piece
    of the map goes to the per-group audit as it is. The transaction markers reach the first
    step as context (copies in every task: they resolve there and are neither forwarded nor
    counted), since the per-group audit receives them from the map's own marker pieces. A
    task is still oversized here when the map could not drop its commits (transactional, or
    each of another offset key: piece_files.LARGE_IN_BATCH). Measured on a 10M-record dump
    with one group holding 30 % of the commits (2 cores): mapping the whole dump again by
    offset key (5.5 s) and reducing all of it (9.9 s) made the run 37.3 s; splitting only the
    oversized task, 29.3 s."""
    to_split = [p for p in pieces if p["task"] in oversized]
    remapped = exchange.remap_pieces(spark, to_split, staging_uri=staging.uri, tasks=tasks)
    first_step = [p for p in remapped if not p["is_direct"]]
    direct = [p for p in remapped if p["is_direct"]]
    context = [dict(p, is_context=True) for p in pieces if p["task"] == routing.MARKERS]
    return first_step + context, direct


def forwarded_pieces(reduced: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The forwarded pieces of the first step's rows, as exchange.audit_pieces takes them."""
    return [dict(r) for r in reduced if r["kind"] == PIECE]


def staged_rows(reduced: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The first step's staged files and stats rows, as manifest rows (MANIFEST_ARROW)."""
    names = MANIFEST_ARROW.names
    return [{n: r[n] for n in names} for r in reduced if r["kind"] != PIECE]
