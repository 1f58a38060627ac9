"""The options of one run, each declared once: a typed field of `RunOptions` that checks itself.

A field's `Flag`s (its metadata) say how the option is given: the long option of `offsets run`
(cli/run_command.py builds its click options from `FLAGS`) and the TOML profile key, which is that
option's name with underscores (job/config.py builds its keys from `FLAGS`). Values are checked
in `RunOptions` itself, so a library caller (bench/harness.py, a notebook, a test) meets the same
one-line messages as the command line (`UsageError`, exit status 2 there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal, get_args

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import DAY_MS
from offsets_lib.io import sink
from offsets_lib.io.sink import DeltaWriter  # io owns the writers (io may not import job)

Source = Literal["parquet", "kafka"]
LATEST = "latest"  # --as-of latest: the newest record timestamp of the input
AsOf = int | Literal["latest"]  # epoch ms, or LATEST
SPLIT_COMMITS = {"auto": True, "never": False}  # --split-commits -> RunOptions.split_commits
DEFAULT_RETENTION = "7d"  # Kafka's default offsets.retention.minutes
KAFKA_OPTIONS_PARAM = "kafka_options"  # --kafka-option; a profile's [kafka] table fills it

# Options `offsets run` no longer has, with the one line (exit status 2) that a command line or
# a profile naming one gets.
REMOVED_FLAGS = {
    "--shuffle": "every run takes the file shuffle (Spark's shuffle was slower in every"
    " measurement, locally and on a cluster: docs/design.md, 'Which shuffle: measured')",
}

_RETENTION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": DAY_MS}
_AS_OF_EXPECTED = "expected now, latest, ISO-8601 or epoch milliseconds"


class UsageError(ValueError):
    """Bad option value (exit status 2)."""


def parse_retention(text: str, option: str = "--retention") -> int:
    """`7d`, `168h`, `10080m`, `604800s`, `604800000ms` -> milliseconds (any time span option)."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h|d)\s*", text or "")
    if not match:
        raise UsageError(
            f"{option} {text!r}: expected a number with a unit, e.g. 7d, 168h, 10080m, 604800000ms"
        )
    value = int(match.group(1)) * _RETENTION_UNITS[match.group(2)]
    if value <= 0:
        raise UsageError(f"{option} {text!r}: must be positive")
    return value


def parse_as_of(text: str | None, *, now_ms: int) -> AsOf:
    """`now`, `latest`, ISO-8601 (naive = UTC) or epoch ms -> epoch ms, or LATEST."""
    if text is None or text == LATEST:
        return LATEST
    if text == "now":
        return now_ms
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"--as-of {text!r}: {_AS_OF_EXPECTED}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_kafka_options(items: Iterable[str]) -> dict[str, str]:
    """`--kafka-option k=v` values -> Kafka client settings; a later key wins (so a profile's
    settings followed by the command line's give the command line's), `kafka.` is dropped."""
    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--kafka-option {key!r}: expected key=value")
        settings[key.removeprefix("kafka.")] = value
    return settings


def kafka_client_settings(bootstrap_servers: str | None, items: Iterable[str]) -> dict[str, str]:
    """The Kafka client settings of `--bootstrap-servers` and `--kafka-option`s (the first wins
    over a `bootstrap.servers` among the second)."""
    settings = parse_kafka_options(items)
    if bootstrap_servers:
        settings["bootstrap.servers"] = bootstrap_servers
    return settings


class _FieldDefault:
    """`Flag.default` for a flag whose command-line default is its field's default."""

    def __repr__(self) -> str:
        return "FIELD_DEFAULT"


FIELD_DEFAULT: Any = _FieldDefault()


@dataclass(frozen=True)
class Flag:
    """One long option of `offsets run`; its profile key is its name with underscores."""

    name: str  # "--as-of"
    param: str = ""  # click's parameter name (the key of `from_flags`' values); "" = from name
    help: str | None = None
    default: Any = None  # as the command line gives it; FIELD_DEFAULT: the field's
    choices: tuple[str, ...] = ()
    multiple: bool = False
    is_flag: bool = False
    number: bool = False  # a float
    expected: str = ""  # a profile's wrong value "expected ..." this ("" = the choices)
    profile_types: tuple[type, ...] = ()  # TOML types a profile may give (() = from the kind)
    in_profile: bool = True  # False: the profile gives it otherwise ([kafka])

    def __post_init__(self) -> None:
        if not self.param:
            object.__setattr__(self, "param", self.profile_key)

    @property
    def profile_key(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def profile_expects(self) -> str:
        return self.expected or " | ".join(self.choices)

    @property
    def profile_accepts(self) -> tuple[type, ...]:
        if self.profile_types:
            return self.profile_types
        if self.is_flag:
            return (bool,)
        if self.number:
            return (int, float)
        return (str, list) if self.multiple else (str,)


def _flags(*declared: Flag) -> dict[str, tuple[Flag, ...]]:
    return {"flags": declared}


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Everything one run needs, checked when built (`UsageError` with the command line's
    message); `from_flags` builds it from the command line's or a profile's text."""

    source: Source = field(
        default="parquet",
        metadata=_flags(Flag("--source", choices=get_args(Source), default=FIELD_DEFAULT)),
    )
    inputs: tuple[str, ...] = field(
        default=(),
        metadata=_flags(
            Flag(
                "--input",
                "inputs",
                help="Parquet dump: file, folder or glob (repeatable).",
                multiple=True,
                expected="Parquet dump path(s): a string or a list of strings",
            )
        ),
    )
    # Kafka client settings (bootstrap.servers included); may hold secrets, so not in repr
    kafka_options: dict[str, str] = field(
        default_factory=dict,
        repr=False,
        metadata=_flags(
            Flag(
                "--bootstrap-servers",
                help="Kafka: HOST:PORT[,HOST:PORT].",
                expected="HOST:PORT[,HOST:PORT]",
            ),
            Flag(
                "--kafka-option",
                KAFKA_OPTIONS_PARAM,
                help="Kafka client setting k=v (repeatable).",
                multiple=True,
                in_profile=False,
            ),
        ),
    )
    topic: str = field(
        default="__consumer_offsets",
        metadata=_flags(Flag("--topic", default=FIELD_DEFAULT, expected="offsets topic name")),
    )
    output: str = field(
        default="",
        metadata=_flags(
            Flag(
                "--output",
                help="Root folder (or URI) of the Delta tables.",
                expected="root folder (or URI) of the Delta tables",
            )
        ),
    )
    # False: --database without --output; `output` is then where the catalog has the tables,
    # else the database's folder (the job's internal tables and staging go there too)
    output_given: bool = True
    database: str | None = field(
        default=None,
        metadata=_flags(
            Flag(
                "--database",
                help="Register every table in the catalog as DATABASE.<table> (created if"
                " missing), external at their folder: --output, else the database's.",
                expected="catalog database the tables are registered in",
            )
        ),
    )
    warehouse: str | None = field(
        default=None,
        metadata=_flags(
            Flag(
                "--warehouse",
                help="Local sessions: folder of a persistent catalog (Hive metastore on Derby)"
                " for --database; spark-submit uses the cluster's catalog.",
                expected="local sessions: folder of a persistent catalog",
            )
        ),
    )
    retention_ms: int = field(
        default=parse_retention(DEFAULT_RETENTION),
        metadata=_flags(
            Flag(
                "--retention",
                help="offsets.retention.minutes of the cluster.",
                default=DEFAULT_RETENTION,
                expected="offsets.retention.minutes of the cluster, e.g. 7d",
            )
        ),
    )
    as_of: AsOf = field(
        default=LATEST,
        metadata=_flags(
            Flag(
                "--as-of",
                help="now | latest | ISO-8601 | epoch ms (default: now for kafka, latest for"
                " parquet).",
                expected="now | latest | ISO-8601 | epoch ms",
                profile_types=(str, int),
            )
        ),
    )
    coordinator: Coordinator = field(
        default=Coordinator.NEW,
        metadata=_flags(
            Flag(
                "--coordinator",
                choices=tuple(c.value for c in Coordinator),
                default=FIELD_DEFAULT,
            )
        ),
    )
    run_id: str = field(
        metadata=_flags(
            Flag(
                "--run-id",
                help="Run identifier; a rerun with the same id replaces that run's rows.",
                expected="run identifier; strftime fields use the UTC load time",
            )
        ),
    )
    max_reject_ratio: float = field(
        default=0.01,
        metadata=_flags(
            Flag(
                "--max-reject-ratio",
                default=FIELD_DEFAULT,
                number=True,
                expected="number between 0 and 1",
            )
        ),
    )
    delta_writer: DeltaWriter = field(
        default=sink.DEFAULT_WRITER,
        metadata=_flags(
            Flag(
                "--delta-writer",
                help="Who commits the Delta tables: delta-rs (default) = the audit tasks' files"
                " committed by delta-rs (with --database, then registered in the catalog),"
                " spark = Delta's Spark writer.",
                choices=get_args(DeltaWriter),
            )
        ),
    )
    # a dominant group's superseded offset commits dropped in the map (piece_files.LARGE_IN_BATCH)
    split_commits: bool = field(
        default=SPLIT_COMMITS["auto"],
        metadata=_flags(
            Flag(
                "--split-commits",
                help="Reduce a dominant group's offset commits per offset key in the map, so"
                " that no audit task holds all of them. auto: the commit values a later value"
                " of the same key replaces, in the tasks one group's records make large;"
                " never: no reduction.",
                choices=tuple(SPLIT_COMMITS),
                default="auto",
            )
        ),
    )
    full: bool = field(
        default=False,
        metadata=_flags(
            Flag(
                "--full",
                help="Kafka: re-read the whole topic instead of continuing from the stored"
                " checkpoint.",
                is_flag=True,
                default=FIELD_DEFAULT,
                expected="true: kafka re-reads the whole topic (no checkpoint)",
            )
        ),
    )
    end_offsets: str | None = field(
        default=None,
        metadata=_flags(
            Flag(
                "--end-offsets",
                help="CSV/Parquet of log-end offsets (topic, partition, log_end_offset) for the"
                " lag table; --source kafka fetches the consumed topics' log-end offsets itself.",
                expected="CSV/Parquet of log-end offsets for the lag table",
            )
        ),
    )
    verbose: bool = field(
        default=False,
        metadata=_flags(
            Flag(
                "--verbose",
                help="Show Spark's and the JVM's warnings too.",
                is_flag=True,
                default=FIELD_DEFAULT,
                expected="true: show Spark's and the JVM's warnings",
            )
        ),
    )

    def __post_init__(self) -> None:
        """The command line's checks, in its order; the first failing one is the message."""
        _one_of("--source", self.source, get_args(Source))
        if self.source == "parquet" and not self.inputs:
            raise UsageError("--source parquet needs --input PATH")
        if self.source == "kafka" and not self.kafka_options.get("bootstrap.servers"):
            raise UsageError("--source kafka needs --bootstrap-servers HOST:PORT")
        if isinstance(self.inputs, str) or not all(isinstance(p, str) and p for p in self.inputs):
            raise UsageError(f"--input {self.inputs!r}: expected paths")
        ratio = self.max_reject_ratio
        if not (_is_int(ratio) or isinstance(ratio, float)) or not 0 <= ratio <= 1:
            raise UsageError("--max-reject-ratio must be between 0 and 1")
        if not self.output and self.database is None:
            raise UsageError("--output PATH (or --database NAME) is required")
        _writer(self.delta_writer)
        if not self.run_id:
            raise UsageError("--run-id must not be empty")
        if not _is_int(self.retention_ms) or self.retention_ms <= 0:
            raise UsageError(f"--retention {f'{self.retention_ms}ms'!r}: must be positive")
        if self.as_of != LATEST and not _is_int(self.as_of):
            raise UsageError(f"--as-of {self.as_of!r}: {_AS_OF_EXPECTED}")
        _one_of("--coordinator", self.coordinator, tuple(c.value for c in Coordinator))
        set_ = object.__setattr__  # frozen: the checked values in their one type
        set_(self, "coordinator", Coordinator(self.coordinator))
        set_(self, "inputs", tuple(self.inputs))
        set_(self, "kafka_options", dict(self.kafka_options))  # not the caller's to change
        if not self.output:
            set_(self, "output_given", False)

    @classmethod
    def from_flags(cls, values: Mapping[str, Any], *, now_ms: int) -> RunOptions:
        """The options from `offsets run`'s values by click parameter name (a missing one takes
        its flag's default). `now_ms` is the clock: `--as-of now` and the default run id."""
        given = {flag.param: values.get(flag.param, flag.default) for flag in FLAGS}
        source = given["source"]
        as_of = given["as_of"] or ("now" if source == "kafka" else LATEST)
        run_id = given["run_id"] or datetime.fromtimestamp(now_ms / 1000, UTC).strftime(
            "run-%Y%m%dT%H%M%SZ"
        )
        _one_of("--split-commits", given["split_commits"], tuple(SPLIT_COMMITS))
        return cls(
            source=source,
            inputs=tuple(given["inputs"] or ()),
            kafka_options=kafka_client_settings(
                given["bootstrap_servers"], given[KAFKA_OPTIONS_PARAM] or ()
            ),
            topic=given["topic"],
            output=given["output"] or "",
            database=given["database"] or None,
            warehouse=given["warehouse"] or None,
            retention_ms=parse_retention(given["retention"]),
            as_of=parse_as_of(as_of, now_ms=now_ms),
            coordinator=given["coordinator"],
            run_id=run_id,
            max_reject_ratio=given["max_reject_ratio"],
            delta_writer=_writer(given["delta_writer"]),
            split_commits=SPLIT_COMMITS[given["split_commits"]],
            full=bool(given["full"]),
            end_offsets=given["end_offsets"] or None,
            verbose=bool(given["verbose"]),
        )


def removed_flag(name: str) -> str:
    """The line for a removed option (`REMOVED_FLAGS`)."""
    return f"{name} was removed: {REMOVED_FLAGS[name]}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _one_of(flag: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise UsageError(f"{flag} {value!r}: expected one of {', '.join(choices)}")


def _writer(requested: str | None) -> DeltaWriter:
    """`sink.choose_writer`'s answer (the one place that knows the writers)."""
    try:
        return sink.choose_writer(requested)  # type: ignore[return-value]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _declared() -> tuple[Flag, ...]:
    """Every flag, in field order; FIELD_DEFAULT resolved to the field's default as text."""
    flags: list[Flag] = []
    for declared in fields(RunOptions):
        for flag in declared.metadata.get("flags", ()):
            if flag.default is FIELD_DEFAULT:
                default = declared.default
                flag = replace(
                    flag, default=default.value if isinstance(default, Enum) else default
                )
            flags.append(flag)
    return tuple(flags)


# The options of `offsets run`, in the order its --help lists them.
FLAGS: tuple[Flag, ...] = _declared()
