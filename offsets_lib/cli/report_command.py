"""`offsets report`: one self-contained HTML page of a run (and report.json for alerting)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from offsets_lib.cli.app import EXIT_INPUT, EXIT_USAGE, fail, tables_options, tables_root
from offsets_lib.job.config import tables_conf_option

REPO_RULES = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def default_rules_url() -> str:
    """docs/rules.md of this checkout when present (a laptop's clone), else the relative path."""
    return REPO_RULES.as_uri() if REPO_RULES.is_file() else "docs/rules.md"


@click.command("report")
@tables_conf_option()
@tables_options
@click.option("--run-id", help="Run to show (default: the newest succeeded run).")
@click.option(
    "--history",
    type=click.IntRange(min=1),
    default=48,
    show_default=True,
    help="Retained runs drawn in the lag history (this run included).",
)
@click.option(
    "--out",
    "out",
    help="The HTML file (default: report-<run id>.html here); report.json goes beside it.",
)
@click.option(
    "--next-to-tables",
    is_flag=True,
    help="Write <tables>/_reports/<run id>.html and _reports/latest.html (with their .json) "
    "instead of --out, also on an object store.",
)
@click.option("--rules-url", help="Where the rule links point (default: docs/rules.md).")
def report_command(
    output: str | None,
    database: str | None,
    warehouse: str | None,
    run_id: str | None,
    history: int,
    out: str | None,
    next_to_tables: bool,
    rules_url: str | None,
) -> None:
    """Write one run's report: a single HTML file that needs nothing else to open.

    Pages Now (the data-loss list, expiry tiles and timeline), Lag, Groups, Commit activity and
    Run health; the file's path is printed.
    """
    import pandas as pd

    from offsets_lib.io.runs import NoRunsTable, NoSucceededRun
    from offsets_lib.tools import report_page

    if out and next_to_tables:
        fail(EXIT_USAGE, "--out and --next-to-tables exclude each other")
    if out and not out.endswith(".html"):
        fail(EXIT_USAGE, f"--out must name an .html file, got {out}")
    root = tables_root(output, database, warehouse)
    try:
        data = report_page.gather(root, run_id, history, pd.Timestamp.now(tz="UTC"))
    except KeyError:
        raise  # a bug, not unreadable input (KeyError is a LookupError)
    except (NoRunsTable, NoSucceededRun, LookupError, FileNotFoundError) as exc:
        fail(EXIT_INPUT, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    page = report_page.render(data, rules_url or default_rules_url())
    summary = json.dumps(report_page.summary(data), indent=1, ensure_ascii=False) + "\n"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", data.run.run_id)
    if next_to_tables:
        folder = root.rstrip("/") + "/_reports/"
        targets = [folder + f"{name}.html", folder + "latest.html"]
    else:
        targets = [out or f"report-{name}.html"]
    for target in targets:
        _write(target, page)
        _write(target.removesuffix(".html") + ".json", summary)
        click.echo(target if "://" in target else str(Path(target).resolve()))


def _write(uri: str, text: str) -> None:
    """A local file (its folder created) or an object store's object."""
    from offsets_lib.io import storage

    local = storage.local_path(uri)
    if local is not None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        Path(local).write_text(text, encoding="utf-8")
        return
    fs, path = storage.filesystem(uri)
    with fs.open_output_stream(path) as stream:
        stream.write(text.encode("utf-8"))
