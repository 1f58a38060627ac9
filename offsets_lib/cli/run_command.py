"""`offsets run`: the audit job from the command line (and from jobs/offsets_job.py)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
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
from offsets_lib.io import catalog, spark_settings
from offsets_lib.job.config import conf_option
from offsets_lib.job.options import (
    FLAGS,
    REMOVED_FLAGS,
    Flag,
    RunOptions,
    UsageError,
    removed_flag,
)
from offsets_lib.job.run_report import RejectRatioExceeded

if TYPE_CHECKING:
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
    from offsets_lib.cli.progress import Progress, spark_stages
    from offsets_lib.io.lock import OutputLocked
    from offsets_lib.io.sources import InputNotReadable, SourceConfigError
    from offsets_lib.job import session
    from offsets_lib.job.entry import Plan

    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    progress: Progress | None = None
    try:
        options = run_options(kw, now_ms=now_ms)
        plan = Plan(options)  # its checks before the JVM starts: a typo fails at once
        progress = Progress()
        # The output's lock and a Kafka run's range before the JVM starts: a second writer is
        # told at once (exit 5), and the range's size decides how the JVM compiles.
        with plan:
            progress.step("starting Spark")
            with _quiet_interrupts():
                spark = session.get_or_create(
                    storage_uris=[*options.inputs, options.output],
                    warehouse=options.warehouse,
                    verbose=options.verbose,
                    quick_start=plan.quick_start,
                )
            if not spark_settings.is_connect(spark):  # a Connect server's driver is not here
                session.start_python_workers(spark)
                progress.watch(spark_stages(spark))
            report = plan.run(spark, echo=progress.line, step=progress.step)
            lag_line = run_summary.lag_summary(plan.options, report)
    except OutputLocked as exc:
        fail(EXIT_LOCKED, str(exc))
    except (InputNotReadable, catalog.CatalogUnreachable) as exc:
        fail(EXIT_INPUT, str(exc))
    except (UsageError, SourceConfigError) as exc:
        fail(EXIT_USAGE, str(exc))
    except RejectRatioExceeded as exc:
        fail(EXIT_REJECTS, str(exc))
    except OSError as exc:  # the lock file: an output folder that cannot be created
        fail(EXIT_USAGE, f"--output {options.output}: cannot write there: {_os_error(exc)}")
    except KeyboardInterrupt:
        fail(
            EXIT_INTERRUPTED,
            f"interrupted: run {options.run_id} stopped; no table of it was published",
        )
    finally:
        if progress is not None:
            progress.close()
    run_summary.print_summary(report, options, lag_line)


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
