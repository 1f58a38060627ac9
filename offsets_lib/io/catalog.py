"""Where the tables of a catalog database live: the one place readers resolve "database or path".

The readers (`offsets fetch`, `fence-check`, `lag`, the lag-audit notebook) read the Delta tables
of a root folder, ``<root>/<table>``, with delta-rs and pyarrow, no Spark. `offsets run
--database NAME` registers every table in the catalog, managed in the database's folder or
external at ``--output``; either way all of a run's tables sit side by side under one root. For
a database this module asks the catalog for each table's location (``SHOW TABLE EXTENDED``) and
returns that root, so the path-based readers work unchanged. Only the catalog needs Spark: the
caller passes the function that opens one (``session.get_or_create`` of job/session.py, which io
may not import)::

    root = resolve_tables_root(None, "audit", warehouse=w, open_session=session.get_or_create)
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping

from pyspark.sql import SparkSession

__all__ = [
    "NoTablesInDatabase",
    "local_path",
    "resolve_tables_root",
    "table_locations",
    "tables_root",
]


class NoTablesInDatabase(LookupError):
    """The catalog has no such database, or no table in it (exit 3 like a missing output)."""


def local_path(location: str) -> str:
    """A catalog location as the readers name it: ``file:`` URIs become plain local paths."""
    if location.startswith("file:"):
        return "/" + location.removeprefix("file:").lstrip("/")
    return location


def _identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_locations(spark: SparkSession, database: str) -> dict[str, str]:
    """Location of every table of ``database``, by table name, from the catalog.

    One metastore query that opens no table: DESCRIBE DETAIL read each table's Delta log, so
    a session without the file system of the tables (a local reader of tables on s3://,
    without S3A) failed before the readers, which reach them through pyarrow."""
    if not spark.catalog.databaseExists(database):
        raise NoTablesInDatabase(f"no database {database!r} in the catalog")
    shown = spark.sql(f"SHOW TABLE EXTENDED IN {_identifier(database)} LIKE '*'")
    locations = {}
    for row in shown.collect():
        if row["isTemporary"]:
            continue
        lines = row["information"].splitlines()
        location = next(line for line in lines if line.startswith(_LOCATION))
        locations[row["tableName"]] = local_path(location.removeprefix(_LOCATION))
    return locations


_LOCATION = "Location: "  # SHOW TABLE EXTENDED's line of the table's location


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
    catalog: only then is a session opened, ``open_session(warehouse=..., verbose=...)``
    (``warehouse``: the local catalog of ``offsets run --warehouse``)."""
    if (output is None) == (database is None):
        raise ValueError("give the tables as --output PATH or as --database NAME (one of them)")
    if output is not None:
        return output
    spark = open_session(warehouse=warehouse, verbose=verbose)
    return tables_root(database, table_locations(spark, database))
