"""`offsets lag`: per committed offset, the log-end offset of the consumed partition and the lag."""

from __future__ import annotations

import json
from datetime import datetime

import click

from offsets_lib.cli.app import EXIT_INPUT, EXIT_USAGE, fail, tables_options, tables_root
from offsets_lib.job.config import tables_conf_option

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
@tables_conf_option()
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
    from offsets_lib.io import log_end_offsets
    from offsets_lib.io.sources import InputNotReadable, SourceConfigError
    from offsets_lib.job import session
    from offsets_lib.job.options import UsageError
    from offsets_lib.tools import in_doubt
    from offsets_lib.tools.lag_report import lag_report

    root = tables_root(output, database, warehouse)
    try:
        spark = None  # only for a file that pyarrow does not reach
        if end_offsets and not log_end_offsets.pyarrow_reaches(end_offsets):
            spark = session.get_or_create()
        rows = lag_report(
            root,
            run_id,
            end_offsets=end_offsets,
            bootstrap_servers=bootstrap_servers,
            kafka_options=kafka_options,
            groups=groups,
            spark=spark,
        )
    except (InputNotReadable, FileNotFoundError) as exc:
        fail(EXIT_INPUT, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except (SourceConfigError, UsageError) as exc:
        fail(EXIT_USAGE, str(exc))
    doubts = in_doubt.of_run(root, run_id, groups)
    rows = in_doubt.with_lag_rows(rows, doubts)
    rows.sort(key=lambda r: (r["group_id"], r["topic"], r["partition"]))
    if as_json:
        for r in rows:
            click.echo(json.dumps(_jsonable(r), sort_keys=True))
        return
    header = HEADER + (("IN-DOUBT",) if doubts.offsets else ())
    table = [header] + [
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
        + ((_text(r["in_doubt_offset"]),) if doubts.offsets else ())
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    if doubts.note():
        click.echo(doubts.note(), err=True)


def _text(value) -> str:
    return "-" if value is None else str(value)


def _jsonable(row: dict) -> dict:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}
