"""`offsets run`: the audit job from the command line (and from jobs/offsets_job.py)."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import UTC, datetime

import click

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.cli.app import EXIT_INPUT, EXIT_LOCKED, EXIT_REJECTS, EXIT_USAGE, fail
from offsets_lib.io import sink
from offsets_lib.job.config import conf_option
from offsets_lib.job.run import (
    RejectRatioExceeded,
    RunOptions,
    RunReport,
    UsageError,
    parse_as_of,
    parse_retention,
    stages_kafka_records,
)

SPLIT_COMMITS = {"auto": None, "always": True, "never": False}  # RunOptions.split_commits


@click.command("run")
@conf_option()
@click.option(
    "--source", type=click.Choice(["parquet", "kafka"]), default="parquet", show_default=True
)
@click.option(
    "--input", "inputs", multiple=True, help="Parquet dump: file, folder or glob (repeatable)."
)
@click.option("--bootstrap-servers", help="Kafka: HOST:PORT[,HOST:PORT].")
@click.option("--topic", default="__consumer_offsets", show_default=True)
@click.option(
    "--kafka-option", "kafka_options", multiple=True, help="Kafka client setting k=v (repeatable)."
)
@click.option("--output", help="Root folder (or URI) of the Delta tables.")
@click.option(
    "--database",
    help="Register every table in the catalog as DATABASE.<table> (created if missing):"
    " managed, or external at --output when both are given.",
)
@click.option(
    "--warehouse",
    help="Local sessions: folder of a persistent catalog (Hive metastore on Derby) for"
    " --database; spark-submit uses the cluster's catalog.",
)
@click.option(
    "--retention", default="7d", show_default=True, help="offsets.retention.minutes of the cluster."
)
@click.option(
    "--as-of",
    "as_of",
    help="now | latest | ISO-8601 | epoch ms (default: now for kafka, latest for parquet).",
)
@click.option(
    "--coordinator",
    type=click.Choice([r.value for r in Coordinator]),
    default="new",
    show_default=True,
)
@click.option("--run-id", help="Run identifier; a rerun with the same id replaces that run's rows.")
@click.option("--max-reject-ratio", type=float, default=0.01, show_default=True)
@click.option(
    "--delta-writer",
    type=click.Choice(["delta-rs", "spark"]),
    help="Who commits the Delta tables: spark = Delta's Spark writer (always for --database),"
    " delta-rs = the audit tasks' files committed by delta-rs (tables at a path only).",
)
@click.option(
    "--shuffle",
    type=click.Choice(["auto", "files", "spark"]),
    default="auto",
    show_default=True,
    help="How records reach their audit task: files = Python tasks read the Parquet dump (Kafka:"
    " the records staged as Parquet under --output) and stage Arrow files (fastest; needs"
    " pyarrow access to input and output), spark = Spark's shuffle, auto = files when possible.",
)
@click.option(
    "--split-commits",
    type=click.Choice(list(SPLIT_COMMITS)),
    default="auto",
    show_default=True,
    help="Reduce offset commits per offset key in a first step, so that no audit task holds a"
    " dominant group's commits (engine/key_split.py). auto: the commits of the audit tasks"
    " that one group's records make over twice the average; always: all commits.",
)
@click.option(
    "--full",
    is_flag=True,
    default=False,
    help="Kafka: re-read the whole topic instead of continuing from the stored checkpoint.",
)
@click.option(
    "--end-offsets",
    "end_offsets",
    help="CSV/Parquet of log-end offsets (topic, partition, log_end_offset) for the lag table; "
    "--source kafka fetches the consumed topics' watermarks itself.",
)
@click.option(
    "--verbose", is_flag=True, default=False, help="Show Spark's and the JVM's warnings too."
)
def run_command(**kw: object) -> None:
    """Audit __consumer_offsets and write the Delta tables under --output (or --database)."""
    from offsets_lib.io.lock import OutputLocked, output_lock
    from offsets_lib.io.sources import InputNotReadable
    from offsets_lib.io.sources.parquet import check_local_inputs

    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    try:
        options = _options(kw, now_ms=now_ms)
        if options.source == "parquet":  # before the JVM starts: a typo fails at once
            check_local_inputs(list(options.inputs))
    except UsageError as exc:
        fail(EXIT_USAGE, str(exc))
    except InputNotReadable as exc:
        fail(EXIT_INPUT, str(exc))
    # The output's lock before the JVM starts: a second writer is told at once (exit 5).
    # With --database alone the output is the catalog's location, known once Spark runs.
    early_lock = output_lock(options.output, options.run_id) if options.output_given else None
    try:
        with early_lock or contextlib.nullcontext():
            report = _run(kw, options)
    except OutputLocked as exc:
        fail(EXIT_LOCKED, str(exc))
    print_summary(report, options)


def _run(kw: dict, options: RunOptions) -> RunReport:
    """Start the session, read the source and run; known failures exit with their code."""
    from offsets_lib.io.sources import (
        InputNotReadable,
        SourceConfigError,
        unwrap_input_not_readable,
    )
    from offsets_lib.job import run as run_module
    from offsets_lib.job import session

    full = bool(kw.get("full"))
    try:
        # a Kafka run's range before the JVM starts: its size decides how the JVM compiles
        ends, held_back = _kafka_range(options)
        spark = session.get_or_create(
            storage_uris=[*options.inputs, options.output],
            warehouse=kw.get("warehouse"),
            verbose=bool(kw.get("verbose")),
            quick_start=_jvm_moves_few_records(options, ends, full=full),
        )
        session.start_python_workers(spark)
        if options.database is not None:
            options = _with_database(spark, options)
        with _source_reading(spark, ends):
            raw, increment = _read_source(spark, options, ends, held_back, full=full)
            report = run_module.execute(
                spark,
                raw,
                options,
                echo=lambda line: click.echo(line, err=True),
                increment=increment,
                end_offsets=_end_offsets_source(spark, options, kw.get("end_offsets")),
            )
    except InputNotReadable as exc:
        fail(EXIT_INPUT, str(exc))
    except UsageError as exc:
        fail(EXIT_USAGE, str(exc))
    except SourceConfigError as exc:
        fail(EXIT_USAGE, str(exc))
    except RejectRatioExceeded as exc:
        fail(EXIT_REJECTS, str(exc))
    except Exception as exc:  # a Spark action wrapping an executor's InputNotReadable
        inner = unwrap_input_not_readable(exc)
        if inner is None:
            raise
        fail(EXIT_INPUT, str(inner))
    return report


def _options(kw: dict, *, now_ms: int) -> RunOptions:
    source = kw["source"]
    if source == "parquet" and not kw["inputs"]:
        raise UsageError("--source parquet needs --input PATH")
    if source == "kafka" and not kw["bootstrap_servers"]:
        raise UsageError("--source kafka needs --bootstrap-servers HOST:PORT")
    as_of = kw["as_of"] or ("now" if source == "kafka" else "latest")
    kafka_options = {}
    for item in kw["kafka_options"]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--kafka-option {item.split('=')[0]!r}: expected key=value")
        kafka_options[key.removeprefix("kafka.")] = value
    if kw["bootstrap_servers"]:
        kafka_options["bootstrap.servers"] = kw["bootstrap_servers"]
    ratio = kw["max_reject_ratio"]
    if not 0 <= ratio <= 1:
        raise UsageError("--max-reject-ratio must be between 0 and 1")
    database = kw.get("database") or None
    if not kw.get("output") and database is None:
        raise UsageError("--output PATH (or --database NAME) is required")
    try:
        delta_writer = sink.choose_writer(kw.get("delta_writer"), database=database)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_id = kw["run_id"] or datetime.fromtimestamp(now_ms / 1000, UTC).strftime(
        "run-%Y%m%dT%H%M%SZ"
    )
    return RunOptions(
        output=kw.get("output") or "",
        output_given=bool(kw.get("output")),
        database=database,
        run_id=run_id,
        source=source,
        inputs=tuple(kw["inputs"]),
        retention_ms=parse_retention(kw["retention"]),
        as_of=parse_as_of(as_of, now_ms=now_ms),
        coordinator=Coordinator(kw["coordinator"]),
        max_reject_ratio=ratio,
        delta_writer=delta_writer,
        shuffle=kw["shuffle"],
        split_commits=SPLIT_COMMITS[kw["split_commits"]],
        kafka_options=kafka_options,
        topic=kw["topic"],
    )


def _with_database(spark, options: RunOptions) -> RunOptions:
    """Create the database; without --output the job's folder is the database's own."""
    location = sink.ensure_database(spark, options.database)
    return options if options.output_given else replace(options, output=location)


def _kafka_range(options: RunOptions) -> tuple[dict[int, int] | None, dict[int, int]]:
    """A Kafka run's end offsets per partition (None for a dump), and the records open
    transactions hold back after them (`kafka.resolve_read_range`)."""
    if options.source != "kafka":
        return None, {}
    from offsets_lib.io.sources import kafka

    return kafka.resolve_read_range(options.kafka_options, options.topic)


def _jvm_moves_few_records(options: RunOptions, ends: dict[int, int] | None, *, full: bool) -> bool:
    """`session.is_quick_start` for a Kafka run: the records its connector reads since the
    stored checkpoint, when the file shuffle (`stages_kafka_records`) and delta-rs keep every
    other record out of the JVM. Dumps keep Spark's default (measured gain within the noise); so
    does --database alone (the output, and so the checkpoint, is known once Spark runs)."""
    from offsets_lib.io import incremental
    from offsets_lib.job import session

    if (
        ends is None
        or not options.output_given
        or options.delta_writer != "delta-rs"
        or not stages_kafka_records(options)
    ):
        return False
    previous = None if full else incremental.read_checkpoint(options.output, options.topic)
    start = previous.next_offsets if previous is not None else None
    return session.is_quick_start(incremental.records_between(start, ends))


def _source_reading(spark, ends: dict[int, int] | None) -> contextlib.AbstractContextManager:
    """The session settings a Kafka run's reads need while the run lasts (none for a dump)."""
    if ends is None:
        return contextlib.nullcontext()
    from offsets_lib.io.sources import kafka

    return kafka.connector_reads_internal_topics(spark)


def _read_source(
    spark,
    options: RunOptions,
    ends: dict[int, int] | None,
    held_back: dict[int, int],
    *,
    full: bool,
):
    """(raw records, increment): kafka reads from the stored checkpoint unless --full."""
    if ends is None:  # a dump is a snapshot: always a full run
        from offsets_lib.io.sources.parquet import read_parquet_dump

        return read_parquet_dump(spark, list(options.inputs)), None
    from offsets_lib.io import incremental
    from offsets_lib.io.sources import kafka

    increment = incremental.begin(
        spark, options.output, options.topic, ends, full=full, held_back=held_back
    )
    raw = kafka.read_kafka(
        spark,
        kafka_options=options.kafka_options,
        topic=options.topic,
        start_offsets=increment.start_offsets,
        end_offsets=ends,
    )
    return raw, increment


def _end_offsets_source(spark, options: RunOptions, path: str | None):
    """How the run gets log-end offsets for the lag table: a file, the cluster, or none."""
    from offsets_lib.io import watermarks

    if path:
        return lambda: watermarks.end_offsets_from_file(spark, path)
    if options.source == "kafka":
        # every topic's: the run takes them before its audit tasks, which write the lag rows
        # and are the first to know which topics the groups consumed
        return lambda: watermarks.end_offsets_from_cluster(options.kafka_options)
    return None


def held_back_line(held_back: dict[int, int]) -> str:
    """What a read_committed run could not see: open transactions hold back every record after
    their first one, so those partitions' groups may lack pending or newer offsets."""
    parts = ", ".join(f"{p} ({n})" for p, n in sorted(held_back.items()))
    return (
        f"not read yet: {sum(held_back.values())} records after open transactions on offsets"
        f" partitions {parts}; their groups' pending transactional offsets and any later"
        " commits are not in this run (the next run reads them once the transactions end)"
    )


def print_summary(report: RunReport, options: RunOptions) -> None:
    """The few lines an operator wants after a run."""
    as_of = (
        datetime.fromtimestamp(report.as_of_ms / 1000, UTC).isoformat() if report.as_of_ms else "-"
    )
    click.echo(
        f"run {report.run_id}: {report.status} (as of {as_of}, coordinator {options.coordinator})"
    )
    click.echo(
        f"records: {report.records_read} read, {report.records_decoded} decoded,"
        f" {report.records_rejected} rejected"
    )
    groups = ", ".join(f"{k} {v}" for k, v in sorted(report.groups_by_type_state.items())) or "none"
    click.echo(f"groups: {groups}")
    click.echo(
        f"offsets: {report.offsets_total} live, {report.offsets_expired} expired now,"
        f" {report.offsets_expiring_24h} expiring within 24 h;"
        f" groups deleted now: {report.groups_deleted}"
    )
    if report.records_held_back:
        click.echo(held_back_line(report.records_held_back))
    if report.orphaned_offsets:
        click.echo(f"orphaned offsets (group tombstoned, G-S3): {report.orphaned_offsets}")
    if options.database is not None:
        click.echo(f"tables in database {options.database}: {', '.join(sorted(report.tables))}")
    else:
        click.echo(f"tables under {options.output}: {', '.join(sorted(report.tables))}")
