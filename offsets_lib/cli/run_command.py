"""`offsets run`: the audit job from the command line (and from jobs/offsets_job.py)."""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from offsets_lib.cli import run_summary
from offsets_lib.cli.app import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_REJECTS,
    EXIT_USAGE,
    fail,
)
from offsets_lib.io import catalog, storage
from offsets_lib.job.config import conf_option
from offsets_lib.job.options import (
    FLAGS,
    REMOVED_FLAGS,
    Flag,
    RunOptions,
    UsageError,
    removed_flag,
)
from offsets_lib.job.run import RejectRatioExceeded, RunReport
from offsets_lib.job.run_catalog import CatalogSide

if TYPE_CHECKING:
    import pyarrow as pa

    from offsets_lib.cli.progress import Progress


def _click_option(flag: Flag) -> Callable[[Callable], Callable]:
    """The click option of one `RunOptions` flag (a default is shown unless it is a switch)."""
    kind: dict[str, object] = {}
    if flag.choices:
        kind["type"] = click.Choice(list(flag.choices))
    elif flag.number:
        kind["type"] = float
    return click.option(
        flag.name,
        flag.param,
        help=flag.help,
        default=flag.default,
        multiple=flag.multiple,
        is_flag=flag.is_flag,
        show_default=flag.default is not None and not flag.is_flag,
        **kind,
    )


def _run_flags(command: Callable) -> Callable:
    """Every option of `RunOptions`, in its order (options.FLAGS), and the removed ones, hidden,
    which end the command with their one line (options.REMOVED_FLAGS)."""
    for flag in reversed(FLAGS):
        command = _click_option(flag)(command)
    for name in REMOVED_FLAGS:
        command = click.option(name, hidden=True, expose_value=False, callback=_refuse_removed)(
            command
        )
    return command


def _refuse_removed(ctx: click.Context, param: click.Parameter, value: object) -> None:
    if value is not None:
        fail(EXIT_USAGE, removed_flag(param.opts[0]))


@click.command("run")
@conf_option()
@_run_flags
def run_command(**kw: object) -> None:
    """Audit __consumer_offsets and write the Delta tables under --output (or --database)."""
    from offsets_lib.cli.progress import Progress
    from offsets_lib.io.lock import OutputLocked, output_lock
    from offsets_lib.io.sources import InputNotReadable
    from offsets_lib.io.sources.parquet import check_local_inputs

    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    try:
        options = run_options(kw, now_ms=now_ms)
        _check_output(options)
        storage.check_reachable(*options.inputs, options.output, options.end_offsets)
        if options.source == "parquet":  # before the JVM starts: a typo fails at once
            check_local_inputs(list(options.inputs))
        ends_file = _end_offsets_file(options.end_offsets)
    except UsageError as exc:
        fail(EXIT_USAGE, str(exc))
    except InputNotReadable as exc:
        fail(EXIT_INPUT, str(exc))
    progress = Progress()
    created = _folder_to_create(options)
    try:
        # The output's lock before the JVM starts: a second writer is told at once (exit 5).
        # With --database alone the output is the catalog's location, known once Spark runs.
        early_lock = output_lock(options.output, options.run_id) if options.output_given else None
        with early_lock or contextlib.nullcontext():
            report, lag_line = _run(options, progress, ends_file)
    except OutputLocked as exc:
        fail(EXIT_LOCKED, str(exc))
    except storage.StoreUnreachable as exc:  # the lease: a store that lets us read, not write
        fail(EXIT_INPUT, str(exc))
    except OSError as exc:  # the lock file: an output folder that cannot be created
        fail(EXIT_USAGE, f"--output {options.output}: cannot write there: {_os_error(exc)}")
    except KeyboardInterrupt:
        fail(
            EXIT_INTERRUPTED,
            f"interrupted: run {options.run_id} stopped; no table of it was published",
        )
    finally:
        progress.close()
        _remove_if_empty(created)
    run_summary.print_summary(report, options, lag_line)


def _run(
    options: RunOptions, progress: Progress, ends_file: pa.Table | None
) -> tuple[RunReport, str | None]:
    """Start the session, read the source and run; known failures exit with their code."""
    from offsets_lib.cli.progress import spark_stages
    from offsets_lib.io.sources import (
        InputNotReadable,
        SourceConfigError,
        unwrap_input_not_readable,
    )
    from offsets_lib.job import run as run_module
    from offsets_lib.job import session

    try:
        if options.database is not None:  # a metastore service that refuses: before the JVM
            catalog.check_metastore_ports(session.metastore_uris_to_start(options.warehouse))
        # a Kafka run's range before the JVM starts: its size decides how the JVM compiles
        ends, held_back = _kafka_range(options)
        catalog_side = CatalogSide.prepare(options)  # a local catalog read while Spark starts
        progress.step("starting Spark")
        with _quiet_interrupts():
            spark = session.get_or_create(
                storage_uris=[*options.inputs, options.output],
                warehouse=options.warehouse,
                verbose=options.verbose,
                quick_start=_jvm_moves_few_records(options, ends),
            )
        session.start_python_workers(spark)
        progress.watch(spark_stages(spark))
        if catalog_side is not None:  # asked beside the audit where it can
            options = catalog_side.start(spark, options)
        given = _end_offsets_source(spark, options, ends_file)
        taken: list[pa.Table] = []
        with _source_reading(spark, ends):
            raw, increment = _read_source(spark, options, ends, held_back)
            report = run_module.execute(
                spark,
                raw,
                options,
                echo=progress.line,
                step=progress.step,
                increment=increment,
                end_offsets=_kept(given, taken),
                catalog_side=catalog_side,
            )
        lag_line = run_summary.lag_summary(options, report, taken[0] if taken else None)
    except (InputNotReadable, catalog.CatalogUnreachable) as exc:
        fail(EXIT_INPUT, str(exc))
    except UsageError as exc:
        fail(EXIT_USAGE, str(exc))
    except SourceConfigError as exc:
        fail(EXIT_USAGE, str(exc))
    except RejectRatioExceeded as exc:
        fail(EXIT_REJECTS, str(exc))
    except Exception as exc:  # a Spark action wrapping an executor's InputNotReadable
        inner = unwrap_input_not_readable(exc)
        if inner is None:
            raise
        fail(EXIT_INPUT, str(inner))
    return report, lag_line


def _check_output(options: RunOptions) -> None:
    """A local --output must be a folder, or a path where one can be created."""
    path = _local_output(options)
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"--output {options.output} is a file; give a folder for the tables")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--output {options.output}: {parent} is a file, not a folder")


def _folder_to_create(options: RunOptions) -> Path | None:
    """The local output folder this run creates (None if it exists or is not local)."""
    path = _local_output(options)
    return None if path is None or path.exists() else path


def _local_output(options: RunOptions) -> Path | None:
    """The given --output's folder on this machine (None: not given, or not local)."""
    local = storage.local_path(options.output) if options.output_given else None
    return None if local is None else Path(local)


def _remove_if_empty(folder: Path | None) -> None:
    """Remove the output folder a run created when it holds no file: a run that never started
    (bad input, Ctrl-C while starting) leaves nothing behind. A run that published a `runs`
    row keeps it."""
    if folder is None or not folder.is_dir():
        return
    if any(p.is_file() or p.is_symlink() for p in folder.rglob("*")):
        return
    shutil.rmtree(folder, ignore_errors=True)


def _os_error(exc: OSError) -> str:
    return exc.strerror or str(exc) if not exc.filename else f"{exc.strerror}: {exc.filename}"


@contextlib.contextmanager
def _quiet_interrupts() -> Iterator[None]:
    """From here on, Ctrl-C raises KeyboardInterrupt in the main thread and nothing prints a
    traceback; the session started inside keeps this handler.

    PySpark's own SIGINT handler, which a new SparkContext installs, cancels the jobs through
    the JVM while the main thread waits on that JVM: py4j then logs ~45 lines of tracebacks.
    The JVM and the Python workers get the terminal's SIGINT too and stop their work
    themselves; the run publishes its failed `runs` row with delta-rs, which needs no JVM."""

    def interrupted(_signum: int, _frame: object) -> None:
        logging.disable(logging.CRITICAL)  # py4j's logging of the broken call
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    install = signal.signal
    install(signal.SIGINT, interrupted)

    def keep_ours(signum: int, handler: object) -> object:
        if signum == signal.SIGINT:  # the SparkContext's handler, while the session starts
            return signal.getsignal(signum)
        return install(signum, handler)

    signal.signal = keep_ours
    try:
        yield
    finally:
        signal.signal = install


def run_options(kw: dict, *, now_ms: int) -> RunOptions:
    """The run's options from the command line's values (RunOptions checks them): the seam
    where tests stop a real `offsets run` before Spark."""
    return RunOptions.from_flags(kw, now_ms=now_ms)


def _kafka_range(options: RunOptions) -> tuple[dict[int, int] | None, dict[int, int]]:
    """A Kafka run's end offsets per partition (None for a dump), and the records open
    transactions hold back after them (`kafka.resolve_read_range`)."""
    if options.source != "kafka":
        return None, {}
    from offsets_lib.io.sources import kafka

    return kafka.resolve_read_range(options.kafka_options, options.topic)


def _jvm_moves_few_records(options: RunOptions, ends: dict[int, int] | None) -> bool:
    """`local_tuning.is_quick_start` for a Kafka run: the records its connector reads since the
    stored checkpoint, when delta-rs keeps every other record out of the JVM (the file shuffle
    does on every run). Dumps keep Spark's default (measured gain within the noise); so
    does --database alone (the output, and so the checkpoint, is known once Spark runs)."""
    from offsets_lib.io import incremental
    from offsets_lib.job import local_tuning

    if ends is None or not options.output_given or options.delta_writer != "delta-rs":
        return False
    previous = None if options.full else incremental.read_checkpoint(options.output, options.topic)
    start = previous.next_offsets if previous is not None else None
    return local_tuning.is_quick_start(incremental.records_between(start, ends))


def _source_reading(spark, ends: dict[int, int] | None) -> contextlib.AbstractContextManager:
    """The session settings a Kafka run's reads need while the run lasts (none for a dump)."""
    if ends is None:
        return contextlib.nullcontext()
    from offsets_lib.io.sources import kafka

    return kafka.connector_reads_internal_topics(spark)


def _read_source(
    spark,
    options: RunOptions,
    ends: dict[int, int] | None,
    held_back: dict[int, int],
):
    """(raw records, increment): kafka reads from the stored checkpoint unless --full."""
    if ends is None:  # a dump is a snapshot: always a full run
        from offsets_lib.io.sources.parquet import read_parquet_dump

        return read_parquet_dump(spark, list(options.inputs)), None
    from offsets_lib.io import incremental
    from offsets_lib.io.sources import kafka

    increment = incremental.begin(
        options.output, options.topic, ends, full=options.full, held_back=held_back
    )
    raw = kafka.read_kafka(
        spark,
        kafka_options=options.kafka_options,
        topic=options.topic,
        start_offsets=increment.start_offsets,
        end_offsets=ends,
    )
    return raw, increment


def _end_offsets_file(path: str | None) -> pa.Table | None:
    """The --end-offsets file read before the JVM starts, when pyarrow reaches it (a file
    that is not one fails at once); None when there is none or Spark must read it."""
    from offsets_lib.io import log_end_offsets

    if not path or not log_end_offsets.pyarrow_reaches(path):
        return None
    return log_end_offsets.from_file(path)


def _end_offsets_source(
    spark, options: RunOptions, ends_file: pa.Table | None
) -> Callable[[], pa.Table] | None:
    """How the run gets log-end offsets for the lag table: a file, the cluster, or none."""
    from offsets_lib.io import log_end_offsets

    path = options.end_offsets
    if ends_file is not None:
        return lambda: ends_file
    if path:
        return lambda: log_end_offsets.from_file(path, spark)
    if options.source == "kafka":
        # every topic's: the run takes them before its audit tasks, which write the lag rows
        # and are the first to know which topics the groups consumed
        return lambda: log_end_offsets.from_cluster(options.kafka_options)
    return None


def _kept(
    source: Callable[[], pa.Table] | None, taken: list[pa.Table]
) -> Callable[[], pa.Table] | None:
    """`source`, keeping what it gave in `taken` (for the summary's lag line)."""
    if source is None:
        return None

    def take() -> pa.Table:
        table = source()
        taken.append(table)
        return table

    return take
