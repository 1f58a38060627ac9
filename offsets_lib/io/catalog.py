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
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from offsets_lib.audit.tables import TABLES, TableSpec
from offsets_lib.io import storage

__all__ = [
    "NoTablesInDatabase",
    "create_table_sql",
    "ensure_database",
    "identifier",
    "register_tables",
    "resolve_tables_root",
    "run_root",
    "sql_string",
    "table_identifier",
    "table_locations",
    "tables_root",
]

log = logging.getLogger(__name__)

REGISTER_JOBS = 4  # concurrent registrations: Delta reads each table's log in a job of its own


class NoTablesInDatabase(LookupError):
    """The catalog has no such database, or no table in it (exit 3 like a missing output)."""


def identifier(name: str) -> str:
    """A name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A string literal for Spark SQL."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


LOCATION_LINE = "Location: "  # of SHOW TABLE EXTENDED's `information`


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
        found = [n.removeprefix(LOCATION_LINE) for n in lines if n.startswith(LOCATION_LINE)]
        if not found:
            qualified = f"{identifier(database)}.{identifier(row['tableName'])}"
            found = [spark.sql(f"DESCRIBE DETAIL {qualified}").first()["location"]]
        locations[row["tableName"]] = storage.location(found[0])  # as the readers name it
    return locations


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


# ---- DDL and registration (Spark SQL) --------------------------------------------------------


def table_identifier(name: str, *, output: str | None, database: str | None) -> str:
    """How Spark SQL names the table: ``db.table`` in the catalog, else ``delta.`<uri>```."""
    if database is not None:
        return f"{identifier(database)}.{identifier(name)}"
    if output is None:
        raise ValueError("a table needs an --output path or a --database")
    return f"delta.{identifier(storage.table_uri(output, name))}"


def create_table_sql(spec: TableSpec, uri: str | None, *, database: str | None = None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the Spark Delta path, with every column comment.

    With ``database`` the table is registered in the catalog as ``database.<table>``: external
    at ``uri`` when given, else managed (in the database's folder)."""

    def column(f: T.StructField) -> str:
        not_null = "" if f.nullable else " NOT NULL"
        comment = sql_string(f.metadata["comment"])
        return f"{identifier(f.name)} {_ddl_type(f.dataType)}{not_null} COMMENT {comment}"

    columns = ",\n  ".join(column(f) for f in spec.schema.fields)
    partitions = ", ".join(identifier(c) for c in spec.partition_by)
    if database is not None:
        target = f"{identifier(database)}.{identifier(spec.name)}"
        location = f"\nLOCATION {sql_string(uri)}" if uri is not None else ""
    else:
        if uri is None:
            raise ValueError("a path table needs its location")
        target, location = f"delta.{identifier(uri)}", ""
    return (
        f"CREATE TABLE IF NOT EXISTS {target} (\n  {columns}\n) USING delta\n"
        f"PARTITIONED BY ({partitions})\nCOMMENT {sql_string(spec.comment)}{location}"
    )


def _ddl_type(dtype: T.DataType) -> str:
    """A column type in Spark SQL, with the comments of nested struct fields (which
    ``simpleString`` drops, and delta-rs keeps)."""
    if isinstance(dtype, T.ArrayType):
        return f"array<{_ddl_type(dtype.elementType)}>"
    if isinstance(dtype, T.StructType):
        fields = []
        for f in dtype.fields:
            not_null = "" if f.nullable else " NOT NULL"
            comment = f.metadata.get("comment")
            suffix = f" COMMENT {sql_string(comment)}" if comment else ""
            fields.append(f"{identifier(f.name)}: {_ddl_type(f.dataType)}{not_null}{suffix}")
        return f"struct<{', '.join(fields)}>"
    return dtype.simpleString()


def ensure_database(spark: SparkSession, database: str) -> str:
    """Create the catalog database unless it exists; returns its location (the root of its
    managed tables, and of the job's internal tables when no --output is given)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {identifier(database)}")
    return storage.location(spark.catalog.getDatabase(database).locationUri)


def run_root(spark: SparkSession, database: str, output: str | None) -> str:
    """Where a run writes the tables of catalog ``database`` (created unless it exists): where
    the catalog has them already, else ``output``, else the database's folder. Fails
    (ValueError) when ``output`` is given and the catalog has one of them elsewhere."""
    location = ensure_database(spark, database)
    registered = {
        name: uri for name, uri in table_locations(spark, database).items() if name in TABLES
    }
    root = output if output is not None else location
    if registered and output is None:
        root = tables_root(database, registered)
    elsewhere = {
        name: uri
        for name, uri in registered.items()
        if uri.rstrip("/") != storage.table_uri(root, name).rstrip("/")
    }
    if elsewhere:
        raise ValueError(
            f"database {database!r} has tables of another folder than {root}:"
            f" {dict(sorted(elsewhere.items()))}; give that folder as --output, or another"
            " --database"
        )
    return root


def register_tables(
    spark: SparkSession, names: Iterable[str], *, output: str, database: str
) -> list[str]:
    """Register the Delta tables ``names`` under ``output`` that the catalog lacks, as
    ``database.<name>``, external at their folder (``CREATE TABLE ... USING delta
    LOCATION``: Delta takes the schema, comments, description and partitioning from the
    table's log). Returns the names registered now; a table registered already costs nothing
    more than the one metastore query."""
    registered = table_locations(spark, database)
    missing = {
        name: storage.table_uri(output, name)
        for name in names
        if name not in registered and storage.is_delta_table(storage.table_uri(output, name))
    }

    def register(name: str) -> None:
        target = f"{identifier(database)}.{identifier(name)}"
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {target} USING delta LOCATION {sql_string(missing[name])}"
        )

    # Delta reads each table's log in Spark jobs of its own: concurrent, they fill the cores
    # (the metastore's calls are serialised by Spark itself)
    with ThreadPoolExecutor(max_workers=REGISTER_JOBS) as pool:
        list(pool.map(register, missing))
    if missing:
        log.info("registered in %s: %s", database, ", ".join(missing))
    return list(missing)
