"""Where the tables of a catalog database live, and their registration: the one place that
resolves "database or path".

`offsets run --database NAME` writes every table as it does for a path (delta-rs), into one
root folder, ``<root>/<table>`` (``--output``, else the database's folder), then registers the
tables it created in the catalog: ``CREATE TABLE ... USING delta LOCATION`` (external tables;
Delta reads their schema, comments and partitioning from the table's log). The readers (`offsets
fetch`, `fence-check`, `lag`, the lag-audit notebook) read the tables of a root folder with
delta-rs and pyarrow, no Spark. For a database this module asks the catalog for every table's
location in one metastore query (``SHOW TABLE EXTENDED``, no Delta log is read) and returns
that root, so the path-based readers work unchanged. With a local catalog (``--warehouse``) the
database's own folder, ``<warehouse>/<database>.db`` (`database_folder`), holding the tables
answers without a JVM; any other catalog needs a Spark session, which the caller passes (none
is started here)::

    root = resolve_tables_root(None, "audit", spark=spark)

Beside the tables, a catalog run keeps one view per table, ``latest_<table>``: that table's
rows of the latest succeeded run, so that dashboards and SQL users need no run id. The views
select by `audit.run_selection.latest_succeeded_sql`, the readers' own rule, evaluated when read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from offsets_lib.audit.run_selection import latest_succeeded_sql
from offsets_lib.audit.tables import RUN_ID, TABLES
from offsets_lib.io import storage
from offsets_lib.io.metastore import (
    CatalogUnreachable,
    check_metastore,
)

log = logging.getLogger(__name__)

METASTORE_FOLDER = "metastore_db"  # job/session.py's catalog_conf: <warehouse>/metastore_db
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
VIEW_LINE = "Type: VIEW"  # the same answer's line for a view (no location, no Delta log)


def table_locations(spark: SparkSession, database: str) -> dict[str, str]:
    """Location of every table of ``database``, by table name, from the catalog.

    One ``SHOW TABLE EXTENDED`` asks the metastore alone. Why: ``DESCRIBE DETAIL`` per table
    (before) loads each table's Delta log in a Spark job; the 9 tables of a run took 526 s that
    way against 1.9 s on this shared 2-core machine (load ~24). A catalog whose answer lacks a
    location is asked per table with ``DESCRIBE DETAIL``. CatalogUnreachable when the catalog's
    client cannot start (its first question fails)."""
    return catalog_entries(spark, database).locations


@dataclass(frozen=True)
class CatalogEntries:
    """What one ``SHOW TABLE EXTENDED`` says of a database: every table's location and every
    view's `latest_view_sql` digest (None: a view without one), by name."""

    locations: dict[str, str]
    views: dict[str, str | None]


def catalog_entries(spark: SparkSession, database: str) -> CatalogEntries:
    """`table_locations` and `view_definitions` from the one metastore query: a run asks it
    once, then registers and creates views from its answer (each query took 0.8-2.7 s of a
    `run --database` on the `make run` sample, and a run asked three)."""
    try:
        exists = spark.catalog.databaseExists(database)
    except Exception as exc:  # pyspark's or py4j's wrapper of the Hive client's failure
        raise CatalogUnreachable(_unreachable_line(spark, exc)) from None
    if not exists:
        raise NoTablesInDatabase(f"no database {database!r} in the catalog")
    return _entries(spark, database)


def _entries(spark: SparkSession, database: str) -> CatalogEntries:
    """`catalog_entries` of a database that exists."""
    locations: dict[str, str] = {}
    views: dict[str, str | None] = {}
    for name, lines in _shown(spark, database).items():
        if VIEW_LINE in lines:  # the latest_<table> views
            found = [m.group(1) for line in lines if (m := _DEFINITION.search(line))]
            views[name] = found[0] if found else None
            continue
        found = [n.removeprefix(LOCATION_LINE) for n in lines if n.startswith(LOCATION_LINE)]
        if not found:
            qualified = f"{identifier(database)}.{identifier(name)}"
            found = [spark.sql(f"DESCRIBE DETAIL {qualified}").first()["location"]]
        locations[name] = storage.location(found[0])  # as the readers name it
    return CatalogEntries(locations, views)


def _shown(spark: SparkSession, database: str) -> dict[str, list[str]]:
    """The lines of ``SHOW TABLE EXTENDED``'s `information` by table or view name: one
    metastore query for every entry of ``database``."""
    shown = spark.sql(f"SHOW TABLE EXTENDED IN {identifier(database)} LIKE '*'")
    return {
        row["tableName"]: row["information"].splitlines()
        for row in shown.collect()  # a row per table or view: the catalog's answer, not data
        if not row["isTemporary"]
    }


def view_definitions(spark: SparkSession, database: str) -> dict[str, str | None]:
    """The `latest_view_sql` digest each view of ``database`` was created with, by view name
    (None: a view without one)."""
    return _entries(spark, database).views


def _unreachable_line(spark: SparkSession, exc: Exception) -> str:
    """One line for a catalog whose client failed: the metastore it was given (URIs, never
    the connection's password) and the innermost cause Spark names."""
    key = "hive.metastore.uris"
    given = spark.conf.get(f"spark.hadoop.{key}", None) or spark.conf.get(f"spark.hive.{key}", None)
    where = given or "embedded (no hive.metastore.uris)"
    causes = [line for line in str(exc).splitlines() if line.strip()]
    cause = causes[0].rsplit(": ", 1)[-1] if causes else type(exc).__name__
    return f"the catalog cannot be reached (metastore {where}): {cause}"


def database_folder(warehouse: str | os.PathLike[str], database: str) -> str:
    """The folder Spark gives a database it creates in the local catalog of ``--warehouse``
    (``<warehouse>/<database>.db``): where a run with no ``--output`` writes its tables."""
    return storage.table_uri(os.path.realpath(warehouse), f"{database.lower()}.db")


LATEST_VIEW_PREFIX = "latest_"


# The table property a latest_<table> view carries: a digest of its definition, so that a run
# replaces only the views it would define otherwise. Replacing all 12 every run took 7 s of a
# 25 s `run --database` on the `make run` sample (a Derby metastore; 12 s to a path).
DEFINITION_PROPERTY = "offsets_audit.definition"
_DEFINITION = re.compile(r"(?:\[|, )" + re.escape(DEFINITION_PROPERTY) + r"=([0-9a-f]+)")


def latest_view_sql(database: str, table: str) -> tuple[str, str]:
    """``CREATE OR REPLACE VIEW database.latest_<table>``: the table's rows of the latest
    succeeded run in ``database.runs``, chosen when the view is read, so it follows every run;
    and its DEFINITION_PROPERTY, the digest of the rest of the statement."""
    runs = f"{identifier(database)}.{identifier('runs')}"
    view = f"{identifier(database)}.{identifier(LATEST_VIEW_PREFIX + table)}"
    comment = sql_string(f"The rows of {table} of the latest succeeded run (TABLES.md).")
    query = (
        f"SELECT * FROM {identifier(database)}.{identifier(table)} WHERE {identifier(RUN_ID)} = "
        f"({latest_succeeded_sql(runs)})"
    )
    digest = hashlib.sha256(f"{view} COMMENT {comment} AS {query}".encode()).hexdigest()[:16]
    properties = f"TBLPROPERTIES ({sql_string(DEFINITION_PROPERTY)} = {sql_string(digest)})"
    statement = f"CREATE OR REPLACE VIEW {view} COMMENT {comment} {properties} AS {query}"
    return statement, digest


def _stale_views(existing: Mapping[str, str | None]) -> list[str]:
    """Views of ours (they carry a digest) of a table that is not an audit table: earlier
    releases made ``latest__kept`` and ``latest__checkpoint``, always empty or wrong."""
    return [
        name
        for name, digest in sorted(existing.items())
        if digest is not None
        and name.startswith(LATEST_VIEW_PREFIX)
        and name.removeprefix(LATEST_VIEW_PREFIX) not in TABLES
    ]


def latest_view_digests(
    database: str, tables: Iterable[str], existing: Mapping[str, str | None]
) -> dict[str, str | None]:
    """`view_definitions` as the catalog shows it once `create_latest_views` ran with these
    arguments."""
    stale = set(_stale_views(existing))
    kept = {name: digest for name, digest in existing.items() if name not in stale}
    return kept | {
        (LATEST_VIEW_PREFIX + table).lower(): latest_view_sql(database, table)[1]
        for table in tables
    }


def create_latest_views(
    spark: SparkSession,
    database: str,
    tables: Iterable[str],
    existing: Mapping[str, str | None] | None = None,
) -> list[str]:
    """`latest_view_sql`'s view of each of ``tables``, created where the catalog lacks it or
    holds another definition (catalog metadata only, no data read); returns the views'
    qualified names. ``existing``: `view_definitions` as the caller read it already.

    A view of ours of a table that is not an audit table is dropped (`_stale_views`)."""
    if existing is None:
        existing = view_definitions(spark, database)
    for name in _stale_views(existing):
        spark.sql(f"DROP VIEW IF EXISTS {identifier(database)}.{identifier(name)}")
    views = []
    for table in sorted(tables):
        name = LATEST_VIEW_PREFIX + table
        statement, digest = latest_view_sql(database, table)
        if existing.get(name.lower()) != digest:
            spark.sql(statement)
        views.append(f"{database}.{name}")
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


class SessionNeeded(ValueError):
    """A database whose tables only a Spark session's catalog can place."""


def resolve_tables_root(
    output: str | None,
    database: str | None,
    *,
    spark: SparkSession | None = None,
    warehouse: str | None = None,
) -> str:
    """The root folder the readers read: ``output`` as given, or the database's. With a local
    catalog (``warehouse``) and no session given, the database's own folder when it holds the
    tables (`database_folder`, as `offsets run --database` without ``--output`` writes them: no
    JVM), and no database when the catalog is not made yet. Otherwise the catalog of ``spark``
    (whose metastore service must answer `check_metastore` first). No session is ever started
    here: a catalog that needs one, without ``spark``, is `SessionNeeded`.

    Why not the local catalog's Derby tables read by hand: the folder answers the readers' same
    question as fast (`fetch`/`lag` by database within the time by path) without a JVM, for
    the tables a run writes there; tables registered elsewhere are the catalog's to tell."""
    if (output is None) == (database is None):
        raise ValueError("give the tables as --output PATH or as --database NAME (one of them)")
    if output is not None:
        return output
    if spark is None and warehouse is not None:
        folder = database_folder(warehouse, database)
        if storage.is_delta_table(storage.table_uri(folder, "runs")):
            return folder
        metastore = Path(warehouse).resolve() / METASTORE_FOLDER
        if not metastore.is_dir():
            raise NoTablesInDatabase(f"no database {database!r} in the catalog (no {metastore})")
        if not (metastore / "service.properties").is_file():  # every Derby database has one
            # Hive's client would print thousands of lines of DataNucleus' stack traces
            raise CatalogUnreachable(
                f"the catalog in {metastore} cannot be read: not a Derby database"
            )
    if spark is None:
        raise SessionNeeded(
            f"database {database!r}: its catalog is a Spark session's; pass the session"
            " (or --warehouse, the folder of a local catalog)"
        )
    check_metastore(spark)
    return tables_root(database, table_locations(spark, database))


# ---- the database and registration (Spark SQL) ----------------------------------------------


DATABASE_FOLDER = "_database"  # under --output: the folder of a database a run creates there


def ensure_database(spark: SparkSession, database: str, output: str | None = None) -> str:
    """Create the catalog database unless it exists; returns its location (the root of its
    managed tables, and of the job's internal tables when no --output is given).

    Created where the session's warehouse folder says, unless that folder is Spark's default,
    ``spark-warehouse`` in the working directory (no ``spark.sql.warehouse.dir`` nor
    ``hive.metastore.warehouse.dir`` given, as with many a remote metastore's client): then
    at ``<output>/_database`` (its tables are external at ``<output>/<table>``; a DROP
    DATABASE removes only that folder), and without --output the run is refused (ValueError)
    rather than leave the user's tables in the working directory."""
    if not spark.catalog.databaseExists(database):
        location = ""
        if _is_default_warehouse(spark.conf.get("spark.sql.warehouse.dir")):
            if output is None:
                raise ValueError(
                    f"the catalog has no database {database!r} and no warehouse folder to"
                    " create it in (spark.sql.warehouse.dir); give --output PATH for its"
                    " tables, or --warehouse"
                )
            location = f" LOCATION {sql_string(storage.table_uri(output, DATABASE_FOLDER))}"
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {identifier(database)}{location}")
    return storage.location(spark.catalog.getDatabase(database).locationUri)


def _is_default_warehouse(warehouse: str) -> bool:
    """Whether the session's warehouse folder is Spark's default, ``spark-warehouse`` in the
    working directory."""
    folder = storage.local_path(warehouse)
    default = Path.cwd() / "spark-warehouse"
    return folder is not None and os.path.realpath(folder) == os.path.realpath(default)


def run_root_and_entries(
    spark: SparkSession, database: str, output: str | None, *, checked: bool = False
) -> tuple[str, CatalogEntries]:
    """Where a run writes the tables of catalog ``database`` (created unless it exists): where
    the catalog has them already, else ``output``, else the database's folder; with what the
    catalog holds (`catalog_entries`). Fails (ValueError) when ``output`` is given and the
    catalog has one of them elsewhere; CatalogUnreachable (`check_metastore`, unless the
    caller ``checked`` it) before the catalog is asked."""
    if not checked:
        check_metastore(spark)
    location = ensure_database(spark, database, output)
    entries = catalog_entries(spark, database)
    return run_root_of(database, output, location, entries), entries


def run_root_of(database: str, output: str | None, location: str, entries: CatalogEntries) -> str:
    """`run_root_and_entries`' root, from the database's folder (``location``) and what the
    catalog holds; ValueError when ``output`` is given and the catalog has a table elsewhere."""
    registered = {name: uri for name, uri in entries.locations.items() if name in TABLES}
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
    spark: SparkSession,
    names: Iterable[str],
    *,
    output: str,
    database: str,
    registered: Mapping[str, str] | None = None,
) -> list[str]:
    """Register the Delta tables ``names`` under ``output`` that the catalog lacks, as
    ``database.<name>``, external at their folder (``CREATE TABLE ... USING delta
    LOCATION``: Delta takes the schema, comments, description and partitioning from the
    table's log). Returns the names registered now; a table registered already costs nothing
    more than the one metastore query (none when the caller gives ``registered``,
    `table_locations` as it read it already)."""
    if registered is None:
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
