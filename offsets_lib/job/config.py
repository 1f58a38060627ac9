"""TOML profiles (`--conf FILE`): every option of `offsets run` plus Kafka client settings.

A profile is a flat TOML file whose top-level keys are the long options of `offsets run` with
underscores (``as_of`` for ``--as-of``), and an optional ``[kafka]`` table of Kafka client
settings (librdkafka names; dots or underscores: ``security.protocol`` = ``security_protocol``)::

    source = "kafka"
    bootstrap_servers = "broker-1:9093,broker-2:9093"
    output = "s3://bucket/offsets-audit"
    run_id = "hourly-%Y%m%dT%HZ"         # strftime fields, UTC time the profile is loaded

    [kafka]
    security_protocol = "SASL_SSL"
    sasl_mechanism = "SCRAM-SHA-512"
    sasl_username = "offsets-audit"
    sasl_password_env = "KAFKA_SASL_PASSWORD"   # the NAME of an environment variable

Secrets never appear in a profile: a ``[kafka]`` key ending in ``_env`` names an environment
variable, read when the profile is loaded (``sasl_password_env`` -> ``sasl.password``), and a
secret setting written as a literal value is refused. Resolved secrets are masked in every
``repr`` and never logged or printed. Relative paths are relative to the working directory,
as on the command line.

Click integration: :func:`conf_option` adds an eager ``--conf FILE`` option that fills
``ctx.default_map`` before the other options are parsed, so anything given on the command line
wins. ``--kafka-option`` settings are merged per key (the command line wins key by key), so
adding one client setting on the command line keeps the profile's others. Any error in the
profile (missing file, bad TOML, unknown key, wrong type, missing environment variable) ends
the command with one line on stderr and exit status 2.

:func:`tables_conf_option` gives a command that works on a run's tables (``offsets prune``) the
same ``--conf FILE``: it takes only where the tables are (``output``, else ``database``; and
``warehouse``), so a scheduler names the run's profile once, and it resolves no ``[kafka]``
secret, which such a command never needs.
"""

from __future__ import annotations

import functools
import os
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from offsets_lib.io.sources.kafka_names import REDACTED, is_secret_option
from offsets_lib.job.options import FLAGS, KAFKA_OPTIONS_PARAM, REMOVED_FLAGS, Flag, removed_flag

EXIT_USAGE = 2
KAFKA_TABLE = "kafka"
ENV_SUFFIX = "_env"

# Profile key -> (click parameter name of `offsets run`, accepted TOML types, description),
# from the options' one declaration (job/options.py).
PROFILE_FLAGS: dict[str, Flag] = {flag.profile_key: flag for flag in FLAGS if flag.in_profile}
RUN_KEYS: dict[str, tuple[str, tuple[type, ...], str]] = {
    key: (flag.param, flag.profile_accepts, flag.profile_expects)
    for key, flag in PROFILE_FLAGS.items()
}
# A removed option's profile key -> the option (options.REMOVED_FLAGS).
REMOVED_KEYS = {name.removeprefix("--").replace("-", "_"): name for name in REMOVED_FLAGS}
KAFKA_PARAM = KAFKA_OPTIONS_PARAM
# The options of `offsets run` that say where the tables are (what tables_conf_option takes).
TABLES_PARAMS = ("output", "database", "warehouse")


class ProfileError(ValueError):
    """The profile cannot be used; the message names the file, key or variable, never a secret."""


@dataclass(frozen=True)
class Profile:
    """A loaded profile: option values by click parameter name, and resolved Kafka settings."""

    path: str
    options: dict[str, Any] = field(default_factory=dict)
    kafka: dict[str, str] = field(default_factory=dict, repr=False)
    secret_keys: frozenset[str] = frozenset()

    def kafka_masked(self) -> dict[str, str]:
        """Kafka settings with every secret replaced by ``***`` (safe to print)."""
        return {k: REDACTED if k in self.secret_keys else v for k, v in self.kafka.items()}

    def kafka_option_list(self) -> list[str]:
        """The Kafka settings as ``--kafka-option`` values (``key=value``); contains secrets."""
        return [f"{k}={v}" for k, v in self.kafka.items()]

    def default_map(self, param_names: set[str] | None = None) -> dict[str, Any]:
        """Values for ``ctx.default_map``, restricted to ``param_names`` when given."""
        values = dict(self.options)
        if self.kafka:
            values[KAFKA_PARAM] = self.kafka_option_list()
        if param_names is not None:
            values = {k: v for k, v in values.items() if k in param_names}
        return values

    def tables_default_map(self) -> dict[str, Any]:
        """Where the run's tables are, for a command that reads or prunes them: ``output``
        when the profile gives one (the tables are there, registered in ``database`` or not: no
        catalog needed), else ``database``; and ``warehouse``."""
        found = {k: v for k, v in self.options.items() if k in TABLES_PARAMS}
        if "output" in found:
            found.pop("database", None)
        return found

    def __repr__(self) -> str:
        return (
            f"Profile(path={self.path!r}, options={self.options!r}, kafka={self.kafka_masked()!r})"
        )

    __str__ = __repr__


def _kafka_name(key: str) -> str:
    return key.replace("_", ".")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"sasl": {"password_env": "X"}}`` -> ``{"sasl.password_env": "X"}``."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _scalar_text(where: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ProfileError(f"{where}: expected a string, number or boolean, got {type(value).__name__}")


def _kafka_settings(
    table: Any, *, source: str, environ: Mapping[str, str]
) -> tuple[dict[str, str], frozenset[str]]:
    if not isinstance(table, dict):
        raise ProfileError(f"{source}: [{KAFKA_TABLE}] must be a table of client settings")
    settings: dict[str, str] = {}
    secrets: set[str] = set()
    for raw_key, value in _flatten(table).items():
        where = f"{source}: {KAFKA_TABLE}.{raw_key}"
        if raw_key.endswith(ENV_SUFFIX):
            name = _kafka_name(raw_key.removesuffix(ENV_SUFFIX).removesuffix("."))
            if not isinstance(value, str) or not value:
                raise ProfileError(f"{where}: expected the name of an environment variable")
            resolved = environ.get(value)
            if not resolved:
                raise ProfileError(
                    f"{where}: environment variable {value} is not set (or empty); "
                    f"it must hold the value of {name}"
                )
            settings[name] = resolved
            secrets.add(name)
            continue
        name = _kafka_name(raw_key)
        if is_secret_option(name):  # a profile may only name an environment variable
            raise ProfileError(
                f"{where}: secrets may not be written in a profile; name an environment "
                f'variable instead: {raw_key.replace(".", "_")}{ENV_SUFFIX} = "VARIABLE"'
            )
        if name == "bootstrap.servers":
            raise ProfileError(f"{where}: use the top-level key bootstrap_servers")
        settings[name] = _scalar_text(where, value)
    return settings, frozenset(secrets)


def _option_value(key: str, value: Any, *, source: str, now: time.struct_time) -> Any:
    flag = PROFILE_FLAGS[key]
    types, where = flag.profile_accepts, f"{source}: {key}"
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise ProfileError(f"{where}: expected {flag.profile_expects}, got {type(value).__name__}")
    if flag.multiple:
        items = [value] if isinstance(value, str) else value
        if not items or not all(isinstance(item, str) and item for item in items):
            raise ProfileError(f"{where}: expected {flag.profile_expects}")
        return list(items)
    if key == "run_id":
        return time.strftime(value, now)
    if isinstance(value, int) and not isinstance(value, bool) and not flag.number:
        return str(value)  # as_of = 1700000000000: the option's text
    return value


def parse_profile(
    data: Mapping[str, Any],
    *,
    source: str = "<profile>",
    environ: Mapping[str, str] | None = None,
    now: time.struct_time | None = None,
    resolve_kafka: bool = True,
) -> Profile:
    """Validate an already-parsed TOML document and resolve its secrets from ``environ``
    (``resolve_kafka=False``: the ``[kafka]`` table is left out, no secret is read)."""
    environ = os.environ if environ is None else environ
    now = time.gmtime() if now is None else now
    known = sorted([*RUN_KEYS, KAFKA_TABLE])
    options: dict[str, Any] = {}
    kafka: dict[str, str] = {}
    secrets: frozenset[str] = frozenset()
    for key, value in data.items():
        if key == KAFKA_TABLE:
            if not resolve_kafka:
                continue
            kafka, secrets = _kafka_settings(value, source=source, environ=environ)
        elif key in RUN_KEYS:
            options[RUN_KEYS[key][0]] = _option_value(key, value, source=source, now=now)
        elif key in REMOVED_KEYS:
            raise ProfileError(f"{source}: {key}: {removed_flag(REMOVED_KEYS[key])}")
        else:
            hint = " (use underscores, not dashes)" if key.replace("-", "_") in RUN_KEYS else ""
            raise ProfileError(
                f"{source}: unknown key {key!r}{hint}; known keys: {', '.join(known)}"
            )
    return Profile(path=source, options=options, kafka=kafka, secret_keys=secrets)


CONF_DIR_ENV = "OFFSETS_CONF_DIR"


def find_profile(name: str | os.PathLike[str]) -> Path:
    """The profile file: ``name`` as given, else under ``$OFFSETS_CONF_DIR``, else ``conf/``.

    A scheduler passes a bare name (``--conf prod-example.toml``): in cluster mode
    ``spark-submit --files`` puts the file in the driver's working directory; in client mode
    ``OFFSETS_CONF_DIR`` (or the working directory's ``conf/``) says where the profiles are.
    """
    path = Path(name)
    candidates = [path]
    if not path.is_absolute():
        if os.environ.get(CONF_DIR_ENV):
            candidates.append(Path(os.environ[CONF_DIR_ENV]) / path)
        candidates.append(Path("conf") / path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise ProfileError(f"profile {str(name)!r} not found (looked at {looked})")


def load_profile(
    name: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    now: time.struct_time | None = None,
    resolve_kafka: bool = True,
) -> Profile:
    """Read, parse and validate a TOML profile; raise :class:`ProfileError` with one line."""
    path = find_profile(name)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"profile {str(path)!r} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"profile {str(path)!r} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"profile {str(path)!r} is not valid TOML: {exc}") from None
    return parse_profile(
        data, source=str(path), environ=environ, now=now, resolve_kafka=resolve_kafka
    )


# ---- click ------------------------------------------------------------------------------------

_META_KEY = "offsets_lib.job.config.profile"


def _apply_profile(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None or ctx.resilient_parsing:
        return value
    try:
        profile = load_profile(value)
    except ProfileError as exc:
        click.echo(f"offsets: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    names = {p.name for p in ctx.command.params if p.name}
    unused = sorted(set(profile.default_map()) - names)
    if unused:
        click.echo(
            f"offsets: {profile.path}: {', '.join(unused)} not used by this command", err=True
        )
    _set_defaults(ctx, profile, profile.default_map(names))
    return value


def _apply_tables_profile(
    ctx: click.Context, _param: click.Parameter, value: str | None
) -> str | None:
    if value is None or ctx.resilient_parsing:
        return value
    names = {p.name for p in ctx.command.params if p.name}
    try:  # the [kafka] secrets (from environment variables) only for a command that asks Kafka
        profile = load_profile(value, resolve_kafka=KAFKA_PARAM in names)
    except ProfileError as exc:
        click.echo(f"offsets: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    cluster = {
        k: v
        for k, v in profile.default_map(names).items()
        if k in ("bootstrap_servers", KAFKA_PARAM)
    }
    _set_defaults(ctx, profile, {**profile.tables_default_map(), **cluster})
    return value


def _set_defaults(ctx: click.Context, profile: Profile, defaults: dict[str, Any]) -> None:
    """The profile's values become the command's defaults (each checked by its option's type:
    a wrong one ends the command with exit 2); the command line still wins."""
    for param in ctx.command.params:
        if param.name in defaults and param.name != KAFKA_PARAM:
            try:
                param.type_cast_value(ctx, defaults[param.name])
            except click.BadParameter as exc:
                key = next((k for k, v in RUN_KEYS.items() if v[0] == param.name), param.name)
                click.echo(f"offsets: {profile.path}: {key}: {exc.message}", err=True)
                ctx.exit(EXIT_USAGE)
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[_META_KEY] = profile


def _merge_kafka_options(profile: Profile, command_line: tuple[str, ...]) -> tuple[str, ...]:
    """Profile settings first, then the command line's: `options.parse_kafka_options` keeps a
    repeated key's last value, so the command line wins key by key."""
    return (*profile.kafka_option_list(), *command_line)


def conf_option(*param_decls: str, **attrs: Any) -> Callable[[Callable], Callable]:
    """Decorator adding ``--conf FILE`` to a click command; the command line wins.

    Put it directly under ``@group.command(...)`` (above the other options) so it can see the
    command's ``--kafka-option`` parameter and merge the profile's Kafka settings into it.
    """
    decls = param_decls or ("--conf", "conf")
    attrs.setdefault("metavar", "FILE")
    attrs.setdefault(
        "help",
        "TOML profile (conf/*.toml) with defaults for every option; the command line wins.",
    )

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            profile: Profile | None = ctx.meta.get(_META_KEY)
            if (
                profile is not None
                and profile.kafka
                and KAFKA_PARAM in kwargs
                and ctx.get_parameter_source(KAFKA_PARAM) == ParameterSource.COMMANDLINE
            ):
                kwargs[KAFKA_PARAM] = _merge_kafka_options(profile, tuple(kwargs[KAFKA_PARAM]))
            return func(*args, **kwargs)

        attrs.setdefault("callback", _apply_profile)
        return click.option(*decls, is_eager=True, expose_value=False, **attrs)(wrapper)

    return decorator


def tables_conf_option() -> Callable[[Callable], Callable]:
    """Decorator adding ``--conf FILE`` to a command that works on a run's tables (prune, and
    the readers: fetch, fence-check, lag): the run's own profile gives where the tables are
    (`Profile.tables_default_map`) and, to a command that asks the cluster, its
    bootstrap_servers and [kafka] settings (merged key by key with --kafka-option, as for run);
    its other keys are the run's business and are ignored. The command line wins."""
    return conf_option(
        callback=_apply_tables_profile,
        help="The TOML profile `offsets run` ran with: where its tables are (output, else"
        " database; warehouse), and the cluster for a command that asks it (bootstrap_servers,"
        " [kafka]; secrets from environment variables). The command line wins.",
    )
