"""How a run's records reach their audit tasks: the engine policy that the run's shell asks.

The file shuffle's inputs (`plan_inputs`: the dump's files pyarrow reads, else the records
Spark reads: a Kafka run's, or a dump pyarrow cannot reach), the number of audit tasks
(`audit_tasks`, `incremental_tasks`), and the map stage over them (`mapped_pieces`).
`job/run.py` holds the rest of the run: the clock, the writes, the report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from offsets_lib.engine import exchange, pipeline
from offsets_lib.engine.routing import RECORDS_PER_TASK
from offsets_lib.engine.staging import KeptFiles, Staging
from offsets_lib.io import incremental, spark_settings
from offsets_lib.job.options import RunOptions

log = logging.getLogger(__name__)


def audit_tasks(spark: SparkSession, records: int) -> int:
    """Enough tasks for about RECORDS_PER_TASK records each, at least one per core of the
    session: every audit task writes a file per table, so a cluster's SQL shuffle default
    (200) would give an hourly run of a few thousand records 200 files per table."""
    return max(spark_settings.parallelism(spark), -(-records // RECORDS_PER_TASK))


def _expected_records(
    raw: DataFrame,
    increment: incremental.Increment | None,
    units: list[list[exchange.Unit]],
) -> int:
    """Records the run will audit: the Kafka offset ranges and the kept records, or the dump's
    row count (the footers the map's plan read, else a Spark count)."""
    if increment is not None:
        return increment.new_records + increment.kept_rows
    rows = [unit.rows for units_of_task in units for unit in units_of_task]
    if rows and None not in rows:
        return sum(rows)
    return raw.count()


def audit_line(inputs: Inputs) -> str:
    """The audit step's line: the records counted (the dump's Parquet footers, a Spark count or
    the Kafka range), the tasks, and who reads the records."""
    return (
        f"auditing {inputs.expected_records} records in {inputs.tasks} tasks"
        f" (read by {inputs.reader})"
    )


def kept_emitter(
    options: RunOptions, increment: incremental.Increment | None, tasks: int
) -> Callable[[pipeline.TaskEmitter], pipeline.TaskEmitter]:
    """What wraps the tasks' emitter: an incremental run's tasks also write the kept records."""
    if increment is None:
        return lambda emit: emit
    kept_id = incremental.next_kept_id(increment, options.run_id)
    return lambda emit: KeptFiles(emit, options.output, kept_id, tasks)


@dataclass(frozen=True)
class Inputs:
    """How the records reach the audit tasks: the map stage's input files by map task, pieces
    already cut by audit task (MAP_ARROW rows: an incremental run's stored kept records,
    exchange.stored_pieces), the number of audit tasks, and the records Spark reads, mapped in
    the tasks that read them (a Kafka run's, or a dump pyarrow cannot reach)."""

    units: list[list[exchange.Unit]]
    stored: list[dict[str, Any]]
    tasks: int
    records: DataFrame | None = None  # raw records (Kafka-source columns), exchange.map_records
    expected_records: int = 0  # the records the run audits (`_expected_records`)

    @property
    def reader(self) -> str:
        """Who reads the new records: Spark (its tasks map them), else pyarrow (the map's)."""
        return "Spark" if self.records is not None else "pyarrow"


def plan_inputs(
    spark: SparkSession,
    raw: DataFrame,
    increment: incremental.Increment | None,
) -> Inputs:
    """What the map stage reads: a dump's files by map task when pyarrow can read them, else
    its records as Spark reads them (`raw`, e.g. a store without a pyarrow file system); a Kafka
    run's records as Spark reads them (`_kafka_records`) and its kept records from their files,
    except those stored cut by audit task already."""
    units: list[list[exchange.Unit]] = []
    stored: list[exchange.StoredCut] = []
    tasks = None
    records = None
    if increment is None:
        planned = exchange.plan(raw.inputFiles(), map_tasks=_map_tasks(spark))
        if planned is None:
            log.info("Spark reads the input; its tasks map the records")
            records = raw
        else:
            units = planned
    else:
        new = increment.new_records
        kept = increment.kept_files
        cuts = exchange.stored_cuts(kept) if kept else []
        tasks = incremental_tasks(spark, new + increment.kept_rows, cuts)
        stored = [cut for cut in cuts if cut is not None and cut.tasks % tasks == 0]
        to_map = [uri for uri in kept if uri not in {cut.path for cut in stored}]
        records = _kafka_records(spark, raw, increment) if new else None
        if to_map:
            planned = exchange.plan(
                to_map,
                map_tasks=_map_tasks(spark),
                positioned=tuple(to_map),
                history=tuple(to_map),
            )
            if planned is None:  # under the output, which the staging folder showed pyarrow reaches
                raise RuntimeError(f"pyarrow cannot read the kept records at {to_map[0]}")
            units = planned
    expected = _expected_records(raw, increment, units)
    if tasks is None:
        tasks = audit_tasks(spark, expected)
    return Inputs(units, exchange.stored_pieces(stored, tasks), tasks, records, expected)


def _map_tasks(spark: SparkSession) -> int:
    minimum = spark.conf.get("spark.sql.files.minPartitionNum", None)
    return int(minimum) if minimum else spark_settings.parallelism(spark)


# An incremental run takes as many audit tasks as its stored kept records were cut for, or
# the fewest that divide that number, while they hold at most RECORDS_PER_TASK records each and
# number at most this many times the tasks the run needs: then none of those records is mapped
# again (exchange.stored_pieces). Measured (2 cores, 10k new records over a 10M-record
# topic whose 1.7M kept records were cut for 20 tasks): mapped again for 8 tasks, 3.3 s more;
# in all 20 tasks the hourly run took 22.9 s, in 10 (the fewest dividing 20) 19.8 s.
STORED_TASKS_FACTOR = 4


def incremental_tasks(
    spark: SparkSession, records: int, cuts: list[exchange.StoredCut | None]
) -> int:
    """The audit tasks of an incremental run: `audit_tasks`, or as stored (see
    STORED_TASKS_FACTOR)."""
    needed = audit_tasks(spark, records)
    counts = {cut.tasks if cut is not None else None for cut in cuts}
    if len(counts) == 1 and None not in counts:
        stored = counts.pop()
        fitting = [n for n in range(needed, stored + 1) if stored % n == 0]
        if fitting and fitting[0] <= STORED_TASKS_FACTOR * needed:
            return fitting[0]
    return needed


def _kafka_records(
    spark: SparkSession, raw: DataFrame, increment: incremental.Increment
) -> DataFrame:
    """A Kafka run's records as the map stage reads them from Spark's Kafka source
    (exchange.map_records). The connector reads each topic partition in a task of its own; a
    few records per partition (an hourly run) are read by fewer tasks, as many as `audit_tasks`
    gives the new records, so that the run does not start a task per partition (2 cores, a
    fresh JVM, 10k records of 50 partitions: 50 tasks 4 s, 8 tasks 3.6 s, 2 tasks 3.0-3.3 s).
    The number of partitions is the range's (asking Spark plans the Kafka scan once more:
    ~0.5 s)."""
    tasks = audit_tasks(spark, increment.new_records)
    return raw.coalesce(tasks) if tasks < len(increment.end_offsets) else raw


def mapped_pieces(
    spark: SparkSession, inputs: Inputs, staging: Staging, *, reduce_large: bool
) -> list[dict[str, Any]]:
    """The file shuffle's map stage (none when every record is in a stored piece): its pieces
    and the stored ones (with `reduce_large`, the map drops the superseded commits of tasks
    that look large, piece_files.LARGE_IN_BATCH)."""
    how = {
        "staging_uri": staging.uri,
        "tasks": inputs.tasks,
        "reduce_large": reduce_large,
        "run_records": inputs.expected_records,
    }
    pieces = list(inputs.stored)
    if inputs.units:
        pieces += exchange.map_pieces(spark, inputs.units, **how)
    if inputs.records is not None:
        pieces += exchange.map_records(inputs.records, **how)
    return pieces
