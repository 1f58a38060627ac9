"""`offsets generate`: write a synthetic raw dump (offsets_lib/tools/generate/)."""

from __future__ import annotations

import sys

import click

from offsets_lib.cli.app import EXIT_USAGE


@click.command("generate")
@click.option("--out", required=True, help="Folder for the Parquet files (created if missing).")
@click.option("--groups", type=int, default=2000, show_default=True, help="Groups in the model.")
@click.option(
    "--records", type=int, default=200_000, show_default=True, help="Rows to write (exact)."
)
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed, same bytes.")
@click.option(
    "--partitions",
    type=int,
    default=50,
    show_default=True,
    help="Partitions of __consumer_offsets (offsets.topic.num.partitions).",
)
@click.option(
    "--profile",
    type=click.Choice(["realistic", "bench"]),
    default="realistic",
    show_default=True,
    help="realistic: every group and record type; bench: the benchmark's mix.",
)
@click.option(
    "--dominant-group-share",
    type=float,
    default=0.0,
    show_default=True,
    help="Share of the offset commits written by one group (a dominant group).",
)
@click.option(
    "--earlier-hours",
    type=click.IntRange(0, 24),
    default=0,
    show_default=True,
    help="Also write the dump as it was 1..N hours before its end (folders _<k>h-earlier, each "
    "with its _end_offsets.csv): audit them in order for a history of hourly runs.",
)
def generate_command(
    out: str,
    groups: int,
    records: int,
    seed: int,
    partitions: int,
    profile: str,
    dominant_group_share: float,
    earlier_hours: int,
) -> None:
    """Write a realistic synthetic __consumer_offsets dump, deterministic by seed."""
    from offsets_lib.tools.generate import GenerateError, generate_dump

    try:
        report = generate_dump(
            out,
            groups=groups,
            records=records,
            seed=seed,
            partitions=partitions,
            profile=profile,
            dominant_group_share=dominant_group_share,
            earlier_hours=earlier_hours,
        )
    except GenerateError as exc:
        click.echo(f"offsets: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(report.summary())
