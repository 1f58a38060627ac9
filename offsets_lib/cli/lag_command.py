"""`offsets lag`: per committed offset, the log-end offset of the consumed partition and the lag."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from offsets_lib.cli.app import EXIT_INPUT, EXIT_USAGE, fail, tables_options, tables_root

HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "LAST-COMMIT",
    "SECONDS-SINCE-COMMIT",
)


@click.command("lag")
@tables_options
@click.option("--run-id", help="Run to report on (default: the newest succeeded run).")
@click.option(
    "--end-offsets",
    "end_offsets",
    help="CSV (header) or Parquet with columns topic, partition, log_end_offset.",
)
@click.option("--bootstrap-servers", help="Kafka: take log-end offsets from the cluster.")
@click.option(
    "--kafka-option", "kafka_options", multiple=True, help="Kafka client setting k=v (repeatable)."
)
@click.option("--group", "groups", multiple=True, help="Only this group (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def lag_command(
    output: str | None,
    database: str | None,
    warehouse: str | None,
    run_id: str | None,
    end_offsets: str | None,
    bootstrap_servers: str | None,
    kafka_options: tuple[str, ...],
    groups: tuple[str, ...],
    as_json: bool,
) -> None:
    """Lag of every committed offset of a run: log-end offset - committed offset.

    Log-end offsets come from --end-offsets, or from the cluster (--bootstrap-servers), or else
    from the run's own `lag` table (written by `offsets run`).
    """
    from offsets_lib.io.sources import InputNotReadable, SourceConfigError
    from offsets_lib.job.options import UsageError

    root = tables_root(output, database, warehouse)
    try:
        rows = _lag_rows(root, run_id, end_offsets, bootstrap_servers, kafka_options, groups)
    except (InputNotReadable, FileNotFoundError) as exc:
        fail(EXIT_INPUT, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except (SourceConfigError, UsageError, click.UsageError) as exc:
        fail(EXIT_USAGE, str(exc))
    rows.sort(key=lambda r: (r["group_id"], r["topic"], r["partition"]))
    if as_json:
        for r in rows:
            click.echo(json.dumps(_jsonable(r), sort_keys=True))
        return
    table = [HEADER] + [
        (
            r["group_id"],
            r["topic"],
            str(r["partition"]),
            _text(r["committed_offset"]),
            _text(r["log_end_offset"]),
            _text(r["lag"]),
            r["last_commit_at"].isoformat() if r["last_commit_at"] else "-",
            "-" if r["seconds_since_commit"] is None else f"{r['seconds_since_commit']:.0f}",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    for row in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def _text(value) -> str:
    return "-" if value is None else str(value)


def _jsonable(row: dict) -> dict:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}


def _latest_run(output: str) -> str:
    from offsets_lib.io import runs

    try:
        return runs.latest_run(output)["run_id"]
    except LookupError as exc:
        raise click.UsageError(str(exc)) from None


def _lag_rows(output, run_id, end_offsets, bootstrap_servers, kafka_options, groups) -> list:
    from offsets_lib.audit import lag
    from offsets_lib.io import sink, storage, watermarks
    from offsets_lib.io.sources import InputNotReadable

    for name in ("runs", "offsets"):
        if not storage.is_delta_table(sink.table_uri(output, name)):
            raise InputNotReadable(f"no {name} table under {output}")
    run_id = run_id or _latest_run(output)
    columns = list(lag.LAG_COLUMNS)
    if not end_offsets and not bootstrap_servers:
        if not storage.is_delta_table(sink.table_uri(output, "lag")):
            raise click.UsageError(
                f"no lag table under {output}: give --end-offsets FILE or --bootstrap-servers"
            )
        rows = sink.read_table(output, "lag", run_id=run_id, columns=columns).to_pylist()
        return [r for r in rows if not groups or r["group_id"] in groups]

    from offsets_lib.job import session
    from offsets_lib.job.options import kafka_client_settings

    offsets = sink.read_table(output, "offsets", run_id=run_id)
    if offsets.num_rows == 0 and not sink.read_table(output, "runs", run_id=run_id).num_rows:
        raise click.UsageError(f"no run {run_id!r} under {output}")
    as_of = offsets.column("as_of")[0].as_py() if offsets.num_rows else datetime.now(UTC)
    # the log-end offsets before the JVM starts: a missing file or a dead broker fails at once
    ends = None
    if end_offsets and watermarks.pyarrow_reaches(end_offsets):
        ends = watermarks.end_offsets_from_file(end_offsets)
    elif not end_offsets:
        settings = kafka_client_settings(bootstrap_servers, kafka_options)
        topics = sorted({t for t in offsets.column("topic").to_pylist() if t})
        ends = watermarks.end_offsets_from_cluster(settings, topics)
    spark = session.get_or_create()
    if ends is None:  # a file system only Spark reaches
        ends = watermarks.end_offsets_from_file(end_offsets, spark)
    frame = spark.createDataFrame(
        offsets.select(["group_id", "topic", "partition", "committed_offset", "commit_timestamp"])
    )
    if groups:
        frame = frame.filter(frame.group_id.isin(list(groups)))
    as_of_ms = int(as_of.timestamp() * 1000)
    result = lag.lag_frame(frame, ends, as_of_ms=as_of_ms).toArrow()
    return result.select(columns).to_pylist()
