"""The local catalog of ``--warehouse`` (the Hive metastore on embedded Derby that
job/session.py's catalog_conf opens) read with Derby's own tools in a small JVM, without a Spark
session and its Hive client: what a database holds, for the readers and for a run whose catalog
needs no change.

Why (the `make run` sample, 2 cores, load 14-27, one sitting): a Spark session's lookup took
14-17 s (JVM and session 7-9 s, Hive client 5-6 s, ``SHOW TABLE EXTENDED`` 1.4-2.8 s) and
Derby's ~2 s (0.6 s CPU); `lag`/`fence-check`/`fetch --database` went from 2.6-3.6x /
5.5-7.5x / 2.1-4.4x their ``--output`` times to 1.2-1.9x / 1.5-1.7x / 0.6-1.1x.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from offsets_lib.io import storage
from offsets_lib.io.metastore import CatalogUnreachable

METASTORE_FOLDER = "metastore_db"  # job/session.py's catalog_conf: <warehouse>/metastore_db

# Hive's metastore schema (hive-schema-2.3.0.derby.sql, the metastore of Spark's built-in Hive
# client): every table and view of every database with its storage and one table property. A
# data source table (Delta's) keeps its folder as the storage property ``path``, its SDS
# location being a placeholder (Spark's HiveExternalCatalog); a Hive table has only the SDS
# location. {property} is filled in (a quoted Derby string).
_QUERY = (
    "select d.NAME, d.DB_LOCATION_URI, t.TBL_NAME, t.TBL_TYPE, s.LOCATION, p.PARAM_VALUE,"
    " v.PARAM_VALUE from DBS d"
    " left join TBLS t on t.DB_ID = d.DB_ID left join SDS s on s.SD_ID = t.SD_ID"
    " left join SERDE_PARAMS p on p.SERDE_ID = s.SERDE_ID and p.PARAM_KEY = 'path'"
    " left join TABLE_PARAMS v on v.TBL_ID = t.TBL_ID and v.PARAM_KEY = {property}"
)


@dataclass(frozen=True)
class LocalDatabase:
    """What the local catalog holds of one database: its folder, every table's location and
    every view's value of the property asked for (None: a view without it), by name."""

    location: str
    tables: dict[str, str]
    views: dict[str, str | None]


def read_local_database(
    warehouse: str | os.PathLike[str], database: str, view_property: str
) -> LocalDatabase | None:
    """``database`` as the local catalog of ``warehouse`` holds it; None when there is no
    such database or no metastore yet. CatalogUnreachable when Derby cannot read it (e.g. a
    Spark session of another process holds it open)."""
    metastore = Path(warehouse).resolve() / METASTORE_FOLDER
    if not metastore.is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="offsets-catalog-") as scratch:
        answer = Path(scratch) / "tables.csv"
        query = _derby_string(_QUERY.format(property=_derby_string(view_property)))[1:-1]
        script = Path(scratch) / "lookup.sql"
        script.write_text(
            f"connect {_derby_string('jdbc:derby:' + str(metastore))};\n"
            f"call SYSCS_UTIL.SYSCS_EXPORT_QUERY('{query}', {_derby_string(str(answer))},"
            " null, null, 'UTF-8');\n"
        )
        done = subprocess.run(
            [*_derby_java(warehouse), "org.apache.derby.tools.ij", str(script)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        errors = [n for n in done.stdout.splitlines() if n.startswith("ERROR ")]
        if done.returncode != 0 or errors or not answer.exists():
            cause = (errors or done.stderr.strip().splitlines() or ["no answer"])[0]
            raise CatalogUnreachable(f"the catalog in {metastore} cannot be read: {cause}")
        with answer.open(newline="", encoding="utf-8") as rows:
            found = [row for row in csv.reader(rows) if row and row[0] == database.lower()]
    if not found:
        return None
    tables: dict[str, str] = {}
    views: dict[str, str | None] = {}
    for _, _, name, kind, location, path, value in found:
        if not name:  # a database without tables
            continue
        if kind == "VIRTUAL_VIEW":  # a view has no folder
            views[name] = value or None
        else:
            tables[name] = storage.location(path or location)
    return LocalDatabase(storage.location(found[0][1]), tables, views)


def _derby_string(value: str) -> str:
    """A string literal for Derby's SQL (a quote doubled; no backslash escapes)."""
    return "'" + value.replace("'", "''") + "'"


def _derby_java(warehouse: str | os.PathLike[str]) -> list[str]:
    """The command line of a JVM with Spark's Derby jars (the version that wrote the
    metastore), Derby's log in the warehouse as a Spark session leaves it."""
    import pyspark

    home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)
    jars = sorted(str(j) for j in (Path(home) / "jars").glob("derby*.jar"))
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
    return [
        java,
        "-XX:TieredStopAtLevel=1",  # a short-lived JVM: C1 only
        "-XX:+UseSerialGC",
        f"-Dderby.system.home={Path(warehouse).resolve()}",
        "-cp",
        os.pathsep.join(jars),
    ]
