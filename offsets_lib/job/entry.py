"""`run(spark, **options)`: one whole run inside a session the caller has.

The library's entry point (a notebook, a Python job, `offsets run`, jobs/offsets_job.py and the
bench all come here): the output's lock, the source (a dump, or Kafka from the stored
checkpoint to the topic's end), the catalog side, the log-end offsets, the audit and its
publication. The session is used as given: never created, stopped or retuned here.

`Plan` is the same run in two halves for a caller that starts its session itself (the CLI):
what needs no session (checks, lock, Kafka's range, the local catalog read) before it starts,
and `Plan.run` once it runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.io import metastore, spark_settings, storage
from offsets_lib.job.options import AsOf, RunOptions, Source, UsageError, parse_as_of
from offsets_lib.job.run_catalog import CatalogSide
from offsets_lib.job.run_report import RunReport

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from offsets_lib.io import incremental

log = logging.getLogger(__name__)


class AuditOptions(TypedDict, total=False):
    """`RunOptions`' fields as `run`'s keywords (tests/unit keep the two equal); `as_of`
    also takes the command line's text (now, latest, ISO-8601), `run_id` defaults to the
    command line's run-<UTC time>, and `as_of` to now for Kafka."""

    source: Source
    inputs: Iterable[str]
    kafka_options: dict[str, str]
    topic: str
    output: str
    output_given: bool
    database: str | None
    warehouse: str | None
    retention_ms: int
    as_of: AsOf | str
    coordinator: Coordinator | str
    run_id: str
    max_reject_ratio: float
    delta_writer: str
    split_commits: bool
    full: bool
    end_offsets: str | None
    verbose: bool


def run(
    spark: SparkSession,
    *,
    echo: Callable[[str], None] = log.info,
    step: Callable[[str], None] = log.debug,
    **options: Unpack[AuditOptions],
) -> RunReport:
    """Audit one input (a dump's `inputs`, or the live topic through `kafka_options`) into the
    Delta tables under `output` (or `database`), in `spark` as it is.

    Raises UsageError (bad option), InputNotReadable / CatalogUnreachable (input or catalog
    not reachable), OutputLocked (another run writes there), RejectRatioExceeded; the `runs`
    row says how a started run ended. `echo` gets a line per finished stage, `step` a line as
    each step starts."""
    with Plan(run_options(**options)) as plan:
        return plan.run(spark, echo=echo, step=step)


def run_options(**given: Any) -> RunOptions:
    """`RunOptions` from `run`'s keywords, with the command line's defaults for the clock."""
    now = datetime.now(UTC)
    kafka = given.get("source") == "kafka"
    as_of = given.pop("as_of", "now" if kafka else None)
    given["as_of"] = (
        parse_as_of(as_of, now_ms=int(now.timestamp() * 1000))
        if (as_of is None or isinstance(as_of, str))
        else as_of
    )
    given.setdefault("run_id", now.strftime("run-%Y%m%dT%H%M%SZ"))
    try:
        return RunOptions(**given)
    except TypeError as exc:  # an unknown keyword
        raise UsageError(str(exc)) from None


class Plan:
    """One run's work that needs no session: the options' checks when made; the lock, the
    Kafka range and the local catalog read on entering (a second writer, a broker that does not
    answer fail before any session starts); `run` in a session; leaving removes the output
    folder the run created when it stayed empty."""

    def __init__(self, options: RunOptions) -> None:
        from offsets_lib.io import log_end_offsets
        from offsets_lib.io.sources.parquet import check_local_inputs

        _check_output(options)
        if options.source == "parquet":  # a typo fails at once
            check_local_inputs(list(options.inputs))
        else:  # the files the executors read, by a path that means the same there
            from offsets_lib.io.sources.kafka import with_absolute_files

            options = replace(options, kafka_options=with_absolute_files(options.kafka_options))
        self.options = options
        path = options.end_offsets
        # read now when pyarrow reaches it (a file that is not one fails at once)
        self._ends_file = (
            log_end_offsets.from_file(path)
            if path and log_end_offsets.pyarrow_reaches(path)
            else None
        )
        self._created = _folder_to_create(options)
        self._stack = contextlib.ExitStack()
        self.ends: dict[int, int] | None = None
        self._held_back: dict[int, int] = {}
        self._catalog_side: CatalogSide | None = None

    def __enter__(self) -> Plan:
        from offsets_lib.io.lock import output_lock
        from offsets_lib.job import session

        options = self.options
        self._stack.callback(_remove_if_empty, self._created)
        try:
            storage.check_reachable(*options.inputs, options.output, options.end_offsets)
            # With --database alone the output is the catalog's location: locked in `run`.
            if options.output_given:
                self._stack.enter_context(output_lock(options.output, options.run_id))
            if options.database is not None:  # a metastore service that refuses: at once
                metastore.check_metastore_ports(session.metastore_uris_to_start(options.warehouse))
            if options.source == "kafka":
                from offsets_lib.io.sources.kafka_admin import resolve_read_range

                self.ends, self._held_back = resolve_read_range(
                    options.kafka_options, options.topic
                )
            self._catalog_side = CatalogSide.prepare(options)  # read while a session starts
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    @property
    def quick_start(self) -> bool:
        """`quick_start` of this run's options and Kafka range."""
        return quick_start(self.options, self.ends)

    def run(
        self,
        spark: SparkSession,
        *,
        echo: Callable[[str], None] = log.info,
        step: Callable[[str], None] = log.debug,
    ) -> RunReport:
        """Read the source and run in `spark`; an executor's InputNotReadable is raised as
        itself."""
        from offsets_lib.io.sources import unwrap_input_not_readable
        from offsets_lib.job import run as run_module

        options = self.options
        try:
            if options.output_given and spark_settings.is_connect(spark):
                _check_workers_reach(spark, options.output)
            if self._catalog_side is not None:  # asked beside the audit where it can
                options = self.options = self._catalog_side.start(spark, options)
            with _source_reading(spark, self.ends):
                raw, increment = _read_source(spark, options, self.ends, self._held_back)
                report = run_module.execute(
                    spark,
                    raw,
                    options,
                    echo=echo,
                    step=step,
                    increment=increment,
                    end_offsets=self._end_offsets_source(spark, options),
                    catalog_side=self._catalog_side,
                )
            return report
        except Exception as exc:  # a Spark action wrapping an executor's InputNotReadable
            inner = unwrap_input_not_readable(exc)
            if inner is None or inner is exc:
                raise
            raise inner from None

    def _end_offsets_source(
        self, spark: SparkSession, options: RunOptions
    ) -> Callable[[], pa.Table] | None:
        """How the run gets log-end offsets for the lag table: a file, the cluster, or none."""
        from offsets_lib.io import log_end_offsets

        path, ends_file = options.end_offsets, self._ends_file
        if ends_file is not None:
            return lambda: ends_file
        if path:
            return lambda: log_end_offsets.from_file(path, spark)
        if options.source == "kafka":
            # every topic's: the run takes them before its audit tasks, which write the lag
            # rows and are the first to know which topics the groups consumed
            return lambda: log_end_offsets.from_cluster(options.kafka_options)
        return None


def quick_start(options: RunOptions, ends: dict[int, int] | None) -> bool:
    """`local_tuning.is_quick_start` for a session started for this run: a Kafka run whose
    connector reads few records since the stored checkpoint (delta-rs keeps every other record
    out of the JVM). Dumps keep Spark's default (measured gain within the noise); so does
    --database alone (the checkpoint is known once Spark runs)."""
    from offsets_lib.io import incremental
    from offsets_lib.job import local_tuning

    if ends is None or not options.output_given or options.delta_writer != "delta-rs":
        return False
    previous = None if options.full else incremental.read_checkpoint(options.output, options.topic)
    start = previous.next_offsets if previous is not None else None
    return local_tuning.is_quick_start(incremental.records_between(start, ends))


def _check_workers_reach(spark: SparkSession, output: str) -> None:
    """InputNotReadable (one line) unless the session's Python workers see the output, which
    the run has locked (so made) already: a Connect server's workers run elsewhere, and the
    audit tasks write the tables there with delta-rs, with their own storage settings."""
    import pyarrow as pa

    local = storage.local_path(output)
    where = os.path.abspath(local) if local is not None else output

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.fs as pafs

        from offsets_lib.io import storage

        for _ in batches:
            pass
        try:
            fs, path = storage.filesystem(where)
            error = "" if fs.get_file_info(path).type != pafs.FileType.NotFound else "not found"
        except Exception as exc:  # what the worker's pyarrow says, in one line
            error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        yield pa.record_batch([pa.array([error])], names=["error"])

    error = spark.range(1).mapInArrow(probe, "error string").first()[0]
    if error:
        from offsets_lib.io.sources import InputNotReadable

        raise InputNotReadable(
            f"the session's Python workers cannot reach --output {output} ({error}): they write"
            " the tables with delta-rs and need the storage's settings themselves (README,"
            " Spark Connect)"
        )


def _check_output(options: RunOptions) -> None:
    """A local output must be a folder, or a path where one can be created."""
    path = _local_output(options)
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"--output {options.output} is a file; give a folder for the tables")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--output {options.output}: {parent} is a file, not a folder")


def _folder_to_create(options: RunOptions) -> Path | None:
    """The local output folder this run creates (None if it exists or is not local)."""
    path = _local_output(options)
    return None if path is None or path.exists() else path


def _local_output(options: RunOptions) -> Path | None:
    """The given output's folder on this machine (None: not given, or not local)."""
    local = storage.local_path(options.output) if options.output_given else None
    return None if local is None else Path(local)


def _remove_if_empty(folder: Path | None) -> None:
    """Remove the output folder a run created when it holds no file: a run that never started
    (bad input, Ctrl-C while starting) leaves nothing behind. A run that published a `runs`
    row keeps it."""
    if folder is None or not folder.is_dir():
        return
    if any(p.is_file() or p.is_symlink() for p in folder.rglob("*")):
        return
    shutil.rmtree(folder, ignore_errors=True)


def _source_reading(spark: SparkSession, ends: dict[int, int] | None) -> Any:
    """The session settings a Kafka run's reads need while the run lasts (none for a dump)."""
    if ends is None:
        return contextlib.nullcontext()
    from offsets_lib.io.sources import kafka

    return kafka.connector_reads_internal_topics(spark)


def _read_source(
    spark: SparkSession,
    options: RunOptions,
    ends: dict[int, int] | None,
    held_back: dict[int, int],
) -> tuple[DataFrame, incremental.Increment | None]:
    """(raw records, increment): Kafka reads from the stored checkpoint unless `full`."""
    if ends is None:  # a dump is a snapshot: always a full run
        from offsets_lib.io.sources.parquet import read_parquet_dump

        return read_parquet_dump(spark, list(options.inputs)), None
    from offsets_lib.io import incremental
    from offsets_lib.io.sources import kafka

    increment = incremental.begin(
        options.output, options.topic, ends, full=options.full, held_back=held_back
    )
    raw = kafka.read_kafka(
        spark,
        kafka_options=options.kafka_options,
        topic=options.topic,
        start_offsets=increment.start_offsets,
        end_offsets=ends,
    )
    return raw, increment
