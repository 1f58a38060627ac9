"""What `offsets run` prints when it ends: the few lines an operator wants (the run's counts,
its lag, what the read could not see, the loader's refusals) and where the tables are.

Apart from the run's shell (`run_command`): these lines read only the run's report, its options
and its lag table, never the session.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from offsets_lib.audit.transactions import TRANSACTION_MAX_TIMEOUT_MS
from offsets_lib.job.options import RunOptions
from offsets_lib.job.run import RunReport

if TYPE_CHECKING:
    pass


def held_back_line(held_back: dict[int, int]) -> str:
    """What a read_committed run could not see: open transactions hold back every record after
    their first one, so those partitions' groups may lack pending or newer offsets.
    """
    parts = ", ".join(f"{p} ({n})" for p, n in sorted(held_back.items()))
    return (
        f"not read yet: {sum(held_back.values())} records after open transactions on offsets"
        f" partitions {parts}; their groups' pending transactional offsets and any later"
        " commits are not in this run (the next run reads them once the transactions end)"
    )


def unplaced_marker_line(offsets: int) -> str:
    """What a read without transaction markers leaves open under a Scala coordinator: offsets
    deleted within a transaction timeout of their last commit, before it expired, which the
    unread_marker_offsets table lists (TXN-MARKER-UNREAD, `compaction.is_behind_unread_marker`).
    """
    return (
        f"transaction markers not read: {offsets} offsets deleted within"
        f" {TRANSACTION_MAX_TIMEOUT_MS // 60_000} min of their last commit, before it expired,"
        " are reported deleted and listed in unread_marker_offsets (TXN-MARKER-UNREAD, with"
        " is_group_in_doubt for the groups whose existence depends on them); this read has no"
        " control records (read_committed): if a transaction wrote that commit and its COMMIT"
        " marker came after the delete, the Scala coordinator's loader re-creates the offset"
        " (semantics.md 1.3); a Parquet dump with batch metadata decides"
    )


# The summary names this many of the largest lags.
LARGEST_LAGS = 3


def lag_summary(options: RunOptions, report: RunReport) -> str | None:
    """The summary's lag line: how many offsets have a log-end offset, and the largest lags
    (by group, summed over its partitions). None when the run took no log-end offsets; a
    warning on stderr when it took some and none matched a committed offset."""
    from offsets_lib.io import sink

    if report.log_end_offsets is None or "lag" not in report.tables:
        return None
    columns = ["group_id", "log_end_offset", "lag"]
    rows = sink.read_table(options.output, "lag", run_id=options.run_id, columns=columns)
    known = rows.num_rows - rows.column("log_end_offset").null_count
    if rows.num_rows and not known:
        where = "--end-offsets" if options.source == "parquet" else "the cluster"
        click.echo(
            f"offsets: warning: none of the {report.log_end_offsets} log-end offsets from {where}"
            " is of a partition with a committed offset (topic and partition must match the"
            " __consumer_offsets records); the lag table's lag is empty",
            err=True,
        )
    line = f"lag: {known} of {rows.num_rows} offsets have a log-end offset"
    if not known:
        return line
    totals = (
        rows.group_by("group_id").aggregate([("lag", "sum")]).sort_by([("lag_sum", "descending")])
    )
    top = totals.slice(0, LARGEST_LAGS).to_pylist()
    largest = ", ".join(f"{r['group_id']} {r['lag_sum']:,}" for r in top if r["lag_sum"])
    behind = sum(1 for v in totals.column("lag_sum").to_pylist() if v)
    return line + f"; {behind} groups behind" + (f", largest: {largest}" if largest else "")


LOAD_FAILURE_LINES = 10  # the summary's LOG-6 lines at most


def load_failure_lines(report: RunReport) -> list[str]:
    """LOG-6: one line per record the broker's loader refuses (a few; all are in the load_failures
    table). Returns the lines, the first ones only when there are many."""
    lines = [
        f"the broker would fail to load offsets partition {partition} because of group"
        f" {group!r} ({check}, LOG-6)"
        for partition, group, check in report.load_failures_shown[:LOAD_FAILURE_LINES]
    ]
    more = report.load_failures - len(lines)
    if more > 0:
        lines.append(f"... and {more} more in the load_failures table")
    return lines


def print_summary(report: RunReport, options: RunOptions, lag_line: str | None = None) -> None:
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
    if lag_line:
        click.echo(lag_line)
    if report.orphaned_offsets:
        click.echo(f"orphaned offsets (group tombstoned, G-S3): {report.orphaned_offsets}")
    for line in load_failure_lines(report):
        click.echo(line)
    if report.unplaced_marker_deletes:
        click.echo(unplaced_marker_line(report.unplaced_marker_deletes))
    if options.database is not None:
        click.echo(f"tables in database {options.database}: {', '.join(sorted(report.tables))}")
        if report.views:
            names = ", ".join(v.removeprefix(f"{options.database}.") for v in report.views)
            click.echo(f"views of the latest succeeded run: {names}")
    else:
        click.echo(f"tables under {options.output}: {', '.join(sorted(report.tables))}")
