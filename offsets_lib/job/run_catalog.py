"""The catalog's side of `offsets run --database`: the tables' folder, and the catalog asked
beside the audit.

The audit needs only the folder of the tables; the session's catalog (Spark's Hive client)
answers its first question ~7 s after the session starts (embedded Derby, the `make run`
sample, quiet machine; 18-20 s at load 8-13). So when the folder is known without the catalog
(``--output`` given; with ``--warehouse`` alone, the database's own folder
``<warehouse>/<database>.db`` when the catalog is not made yet or that folder holds the tables
already) a thread asks the catalog (the database created unless it exists, where its tables
are, its views) while the audit's Spark jobs run, and the run waits for that answer before its
first commit; a catalog that fails there cancels the audit's jobs, and the run commits no rows.
A catalog that lacks tables of the run gets them in that thread too: each table the folder lacks
is created empty (its schema, as the first commit would make it), then registered, then the
views made, so that the run's end has nothing left to register (a run that fails then leaves
them registered, empty or with its failed run's rows, which the views never show). Why: a
first run's 13 registrations and 11 views, after its commits, held its end (last Spark job to
the application's end) at 7.1-7.8 s, against 1.4-1.6 s beside the audit (the production line:
S3 on SeaweedFS, Hive on Derby; three submits each, alternating).
Otherwise (Delta's Spark writer, whose every write goes through the catalog; tables the catalog
may hold elsewhere) the catalog is asked first, as the run's first step.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from offsets_lib.audit.tables import TABLES, TableSpec
from offsets_lib.io import catalog, incremental, sink, storage
from offsets_lib.job.options import RunOptions, UsageError


@dataclass
class CatalogSide:
    """One run's catalog: `prepare` before the session starts, `start` once it runs, `ready`
    before the first commit."""

    database: str
    run_id: str
    tables: tuple[TableSpec, ...]  # the tables the run writes
    _answer: Future[tuple[str, catalog.CatalogEntries]] | None = None
    _root: str = ""
    _refused: UsageError | None = None
    _pool: ThreadPoolExecutor | None = None

    @classmethod
    def prepare(cls, options: RunOptions) -> CatalogSide | None:
        """None without --database."""
        if options.database is None:
            return None
        kafka = (incremental.KEPT_SPEC, incremental.CHECKPOINT_SPEC)
        specs = (*TABLES.values(), *(kafka if options.source == "kafka" else ()))
        return cls(options.database, options.run_id, specs)

    def start(self, spark: SparkSession, options: RunOptions) -> RunOptions:
        """The run's options with the tables' folder as its output; the catalog is asked in a
        thread when that folder is known already, else now (CatalogUnreachable; UsageError for
        tables of another folder, or nowhere to create the database)."""
        catalog.check_metastore(spark)  # an unreachable metastore service: at once
        given = options.output if options.output_given else None
        known = _known_root(spark, options)
        if known is None:
            self._answer = Future()
            self._answer.set_result(_resolve(spark, self.database, given))
            self._root = self._answer.result()[0]
        else:
            self._root = known
            self._answer = self._thread().submit(self._ask, spark, given)
        return replace(options, output=self._root)

    def ready(self) -> catalog.CatalogEntries:
        """Wait for the catalog's answer: what it holds (for registration and views). Raises
        what the catalog raised; UsageError when it has the tables in another folder than the
        one the run wrote to."""
        assert self._answer is not None, "start() first"
        root, entries = self._answer.result()
        if storage.location(root) != storage.location(self._root):
            self._refused = UsageError(
                f"database {self.database!r} has its tables in {root}, not in {self._root}"
                f" where this run wrote them: give --output {root}"
            )
            raise self._refused
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        return entries

    def failure(self) -> BaseException | None:
        """The catalog's failure, when its thread ended with one or `ready` refused the
        folder (a run whose audit it cancelled fails with this, not with the cancellation)."""
        answer = self._answer
        if self._refused is not None or answer is None or not answer.done():
            return self._refused
        return answer.exception()

    def _ask(self, spark: SparkSession, output: str | None) -> tuple[str, catalog.CatalogEntries]:
        """`_resolve` in the thread, then `_register` where the run writes; a failure stops the
        audit's jobs (the run fails with it)."""
        try:
            root, entries = _resolve(spark, self.database, output)
            if storage.location(root) == storage.location(self._root):
                entries = self._register(spark, root, entries)
            return root, entries
        except BaseException:
            spark.interruptAll()
            raise

    def _register(
        self, spark: SparkSession, root: str, entries: catalog.CatalogEntries
    ) -> catalog.CatalogEntries:
        """The run's tables the catalog lacks: created empty where ``root`` lacks them,
        registered, and the views made; returns what the catalog holds then, built from
        `entries` and what this added (a refused statement raises). Not asked again: SHOW
        TABLE EXTENDED of a first run's 13 tables and 11 views took 1.7 s of this thread
        beside the map (the production line, one submit's event log)."""
        missing = [spec for spec in self.tables if spec.name not in entries.locations]
        if not missing:
            return entries
        sink.create_missing_tables(missing, output=root, run_id=self.run_id)
        names = [spec.name for spec in missing]
        catalog.register_tables(
            spark, names, output=root, database=self.database, registered=entries.locations
        )
        audit_tables = [spec.name for spec in self.tables if spec.name in TABLES]
        catalog.create_latest_views(spark, self.database, audit_tables, entries.views)
        made = {name: storage.location(storage.table_uri(root, name)) for name in names}
        return catalog.CatalogEntries(
            entries.locations | made,
            catalog.latest_view_digests(self.database, audit_tables, entries.views),
        )

    def _thread(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="offsets-catalog")
        return self._pool


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


def _known_root(spark: SparkSession, options: RunOptions) -> str | None:
    """The folder of the run's tables when known without the catalog (delta-rs only: Delta's
    Spark writer asks the catalog at every write): --output; with --warehouse alone, when a
    look at the files tells it, the database's folder Spark gives it
    (``<warehouse>/<database>.db``) when the catalog is not made yet, or when that folder
    holds the tables (a `runs` table) already, if the session's catalog is that of
    --warehouse (a session that ran already keeps its own). None otherwise: the catalog is
    asked first. `CatalogSide.ready` checks it against the catalog's answer."""
    if options.delta_writer == "spark":
        return None
    if options.output_given:
        return options.output
    if not options.warehouse:
        return None
    assert options.database is not None
    if not _is_warehouse_catalog(spark, options):
        return None
    root = catalog.database_folder(options.warehouse, options.database)
    made = os.path.isdir(os.path.join(options.warehouse, catalog.METASTORE_FOLDER))
    if not made or storage.is_delta_table(storage.table_uri(root, "runs")):
        return root
    return None


def _is_warehouse_catalog(spark: SparkSession, options: RunOptions) -> bool:
    """Whether the session's catalog is the local catalog of --warehouse (a session that ran
    already keeps its own)."""
    if not options.warehouse:
        return False
    warehouse = os.path.realpath(options.warehouse)
    session_warehouse = storage.local_path(spark.conf.get("spark.sql.warehouse.dir", ""))
    return session_warehouse is not None and os.path.realpath(session_warehouse) == warehouse
