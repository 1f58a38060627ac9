"""The catalog's side of `offsets run --database`: the tables' folder, and the catalog asked
beside the audit.

The audit needs only the folder of the tables; the session's catalog (Spark's Hive client)
answers its first question ~7 s after the session starts (embedded Derby, the `make run`
sample, quiet machine; 18 s at load 8). When the folder is known without it (``--output``
given, or the local catalog of ``--warehouse`` read with Derby's own tools while the JVM
starts), a thread asks the catalog (the database created unless it exists, where its tables
are, its views) while the audit's Spark jobs run, and the run waits for that answer before
its first commit; a catalog that fails there cancels the audit's jobs. Otherwise (Delta's
Spark writer, whose every write goes through the catalog; a catalog only Spark can read) the
catalog is asked first, as the run's first step.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from pyspark.sql import SparkSession

from offsets_lib.audit.tables import TABLES
from offsets_lib.io import catalog, storage
from offsets_lib.job.options import RunOptions, UsageError

log = logging.getLogger(__name__)


@dataclass
class CatalogSide:
    """One run's catalog: `prepare` before the session starts, `start` once it runs, `ready`
    before the first commit."""

    database: str
    _local_root: Future[str | None] | None = None
    _answer: Future[tuple[str, catalog.CatalogEntries]] | None = None
    _root: str = ""
    _threads: list[ThreadPoolExecutor] = field(default_factory=list)

    @classmethod
    def prepare(cls, options: RunOptions) -> CatalogSide | None:
        """None without --database. With --warehouse alone and delta-rs, the local catalog's
        folder of the tables is looked up now, beside the JVM's start (a small JVM of its own,
        ~2 s; it must end before the session's Hive client opens the same Derby files)."""
        if options.database is None:
            return None
        side = cls(options.database)
        if options.delta_writer != "spark" and not options.output_given and options.warehouse:
            side._local_root = side._thread().submit(_local_root, options)
        return side

    def start(self, spark: SparkSession, options: RunOptions) -> RunOptions:
        """The run's options with the tables' folder as its output; the catalog is asked in a
        thread when that folder is known already, else now (CatalogUnreachable; UsageError for
        tables of another folder, or nowhere to create the database)."""
        catalog.check_metastore(spark)  # an unreachable metastore service: at once
        if options.delta_writer == "spark":
            known = None
        elif options.output_given:
            known = options.output
        else:
            known = self._local_root.result() if self._local_root is not None else None
        given = options.output if options.output_given else None
        if known is None:
            self._answer = Future()
            self._answer.set_result(_resolve(spark, self.database, given))
        else:
            self._answer = self._thread().submit(self._ask, spark, given)
        self._root = known if known is not None else self._answer.result()[0]
        return replace(options, output=self._root)

    def ready(self) -> catalog.CatalogEntries:
        """Wait for the catalog's answer: what it holds (for registration and views). Raises
        what the catalog raised; UsageError when it has the tables in another folder than the
        one the run wrote to."""
        assert self._answer is not None, "start() first"
        root, entries = self._answer.result()
        if storage.location(root) != storage.location(self._root):
            raise UsageError(
                f"database {self.database!r} has its tables in {root}, not in {self._root}"
                " where this run wrote them (the catalog changed during the run): run again"
            )
        for pool in self._threads:
            pool.shutdown(wait=False)
        return entries

    def failure(self) -> BaseException | None:
        """The catalog's failure, when its thread ended with one (a run whose audit it
        cancelled fails with this, not with the cancellation)."""
        answer = self._answer
        if answer is None or not answer.done():
            return None
        return answer.exception()

    def _ask(self, spark: SparkSession, output: str | None) -> tuple[str, catalog.CatalogEntries]:
        """`_resolve` in the thread; a failure stops the audit's jobs (the run fails with it)."""
        try:
            return _resolve(spark, self.database, output)
        except BaseException:
            spark.sparkContext.cancelAllJobs()
            raise

    def _thread(self) -> ThreadPoolExecutor:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="offsets-catalog")
        self._threads.append(pool)
        return pool


def _resolve(
    spark: SparkSession, database: str, output: str | None
) -> tuple[str, catalog.CatalogEntries]:
    """`catalog.run_root_and_entries` (its metastore checked already); ValueError as the
    user's mistake (UsageError)."""
    try:
        return catalog.run_root_and_entries(spark, database, output, checked=True)
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _local_root(options: RunOptions) -> str | None:
    """The folder of the tables of --database in the local catalog of --warehouse, read
    without Spark (`catalog.local_catalog_locations`): where its tables are, else the
    database's folder Spark gives it (``<warehouse>/<database>.db``). None when that catalog
    cannot be read (e.g. this process's session holds it): the session is asked then."""
    assert options.database is not None and options.warehouse is not None
    try:
        locations = catalog.local_catalog_locations(options.warehouse, options.database)
    except catalog.NoTablesInDatabase:
        locations = {}
    except catalog.CatalogUnreachable as exc:
        log.debug("local catalog not read before the session: %s", exc)
        return None
    registered = {name: uri for name, uri in locations.items() if name in TABLES}
    if registered:
        try:
            return catalog.tables_root(options.database, registered)
        except ValueError:
            return None  # the session's catalog says so, in its words
    warehouse = os.path.realpath(options.warehouse)
    return storage.table_uri(warehouse, f"{options.database.lower()}.db")
