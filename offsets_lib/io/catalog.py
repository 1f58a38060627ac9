"""Where the tables of a catalog database live, and their registration: the one place that
resolves "database or path".

`offsets run --database NAME` writes every table as it does for a path (delta-rs), into one
root folder, ``<root>/<table>`` (``--output``, else the database's folder), then registers the
tables it created in the catalog: ``CREATE TABLE ... USING delta LOCATION`` (external tables;
Delta reads their schema, comments and partitioning from the table's log). The readers (`offsets
fetch`, `fence-check`, `lag`, the lag-audit notebook) read the tables of a root folder with
delta-rs and pyarrow, no Spark. For a database this module asks the catalog for every table's
location in one metastore query (``SHOW TABLE EXTENDED``, no Delta log is read) and returns
that root, so the path-based readers work unchanged. Only the catalog needs Spark: the caller
passes the function that opens one (``session.get_or_create`` of job/session.py, which io may
not import)::

    root = resolve_tables_root(None, "audit", warehouse=w, open_session=session.get_or_create)

Beside the tables, a catalog run keeps one view per table, ``latest_<table>``: that table's
rows of the latest succeeded run, so that dashboards and SQL users need no run id. The views
select by `audit.runs.latest_succeeded_sql`, the readers' own rule, evaluated when read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping

from pyspark.sql import SparkSession

from offsets_lib.audit.runs import latest_succeeded_sql
from offsets_lib.audit.tables import RUN_ID
from offsets_lib.io import storage

__all__ = [
    "LATEST_VIEW_PREFIX",
    "NoTablesInDatabase",
    "create_latest_views",
    "identifier",
    "latest_view_sql",
    "resolve_tables_root",
    "sql_string",
    "table_locations",
    "tables_root",
]


class NoTablesInDatabase(LookupError):
    """The catalog has no such database, or no table in it (exit 3 like a missing output)."""


def identifier(name: str) -> str:
    """A name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A string literal for Spark SQL."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


LOCATION_LINE = "Location: "  # of SHOW TABLE EXTENDED's `information`
VIEW_LINE = "Type: VIEW"  # the same answer's line for a view (no location, no Delta log)


def table_locations(spark: SparkSession, database: str) -> dict[str, str]:
    """Location of every table of ``database``, by table name, from the catalog.

    One ``SHOW TABLE EXTENDED`` asks the metastore alone. Why: ``DESCRIBE DETAIL`` per table
    (before) loads each table's Delta log in a Spark job; the 9 tables of a run took 526 s that
    way against 1.9 s on this shared 2-core machine (load ~24). A catalog whose answer lacks a
    location is asked per table with ``DESCRIBE DETAIL``."""
    if not spark.catalog.databaseExists(database):
        raise NoTablesInDatabase(f"no database {database!r} in the catalog")
    shown = spark.sql(f"SHOW TABLE EXTENDED IN {identifier(database)} LIKE '*'")
    locations = {}
    for row in shown.collect():  # a row per table: the catalog's answer, not data
        if row["isTemporary"]:
            continue
        lines = row["information"].splitlines()
        if VIEW_LINE in lines:  # the latest_<table> views
            continue
        found = [n.removeprefix(LOCATION_LINE) for n in lines if n.startswith(LOCATION_LINE)]
        if not found:
            qualified = f"{identifier(database)}.{identifier(row['tableName'])}"
            found = [spark.sql(f"DESCRIBE DETAIL {qualified}").first()["location"]]
        locations[row["tableName"]] = storage.location(found[0])  # as the readers name it
    return locations


LATEST_VIEW_PREFIX = "latest_"


def latest_view_sql(database: str, table: str) -> str:
    """``CREATE OR REPLACE VIEW database.latest_<table>``: the table's rows of the latest
    succeeded run in ``database.runs``, chosen when the view is read, so it follows every run."""
    runs = f"{identifier(database)}.{identifier('runs')}"
    view = f"{identifier(database)}.{identifier(LATEST_VIEW_PREFIX + table)}"
    comment = f"The rows of {table} of the latest succeeded run (TABLES.md)."
    return (
        f"CREATE OR REPLACE VIEW {view} COMMENT {sql_string(comment)} AS SELECT * FROM "
        f"{identifier(database)}.{identifier(table)} WHERE {identifier(RUN_ID)} = "
        f"({latest_succeeded_sql(runs)})"
    )


def create_latest_views(spark: SparkSession, database: str, tables: Iterable[str]) -> list[str]:
    """Create or replace `latest_view_sql`'s view of each of ``tables`` (catalog metadata
    only, no data read); returns the views' qualified names."""
    views = []
    for table in sorted(tables):
        spark.sql(latest_view_sql(database, table))
        views.append(f"{database}.{LATEST_VIEW_PREFIX}{table}")
    return views


def tables_root(database: str, locations: Mapping[str, str]) -> str:
    """The one folder holding every table as ``<root>/<table>`` (as `offsets run` writes them).

    Tables registered elsewhere by hand would be missed by path-based readers: refused."""
    if not locations:
        raise NoTablesInDatabase(f"no tables in database {database!r}: run `offsets run` first")
    roots = {posixpath.dirname(loc.rstrip("/")) for loc in locations.values()}
    misplaced = {
        name: loc
        for name, loc in locations.items()
        if posixpath.basename(loc.rstrip("/")) != name.lower()
    }
    if len(roots) != 1 or misplaced:
        raise ValueError(
            f"the tables of database {database!r} are not side by side in one folder as"
            f" `offsets run` registers them: {dict(sorted(locations.items()))}"
        )
    return roots.pop()


def resolve_tables_root(
    output: str | None,
    database: str | None,
    *,
    open_session: Callable[..., SparkSession],
    warehouse: str | None = None,
    verbose: bool = False,
) -> str:
    """The root folder the readers read: ``output`` as given, or the database's, from the
    catalog: only then is a session opened, ``open_session(warehouse=..., verbose=...,
    quick_start=True)`` (``warehouse``: the local catalog of ``offsets run --warehouse``; a
    local JVM that only asks the metastore compiles with C1 only)."""
    if (output is None) == (database is None):
        raise ValueError("give the tables as --output PATH or as --database NAME (one of them)")
    if output is not None:
        return output
    spark = open_session(warehouse=warehouse, verbose=verbose, quick_start=True)
    return tables_root(database, table_locations(spark, database))
