"""One set of Kafka client settings, two clients: librdkafka's names and the Java client's.

`--source kafka` talks to the cluster through two clients: the driver's offset look-ups use
confluent-kafka (librdkafka), the read itself Spark's connector (the Java client). Their names for
security settings differ, and each rejects or ignores the other's, so a user who gives one form
would authenticate one client and not the other. Users give either form (the Java one as their
platform's other jobs do, or librdkafka's); this module derives the other one:

=================================  =======================================================
Java client                         librdkafka
=================================  =======================================================
sasl.mechanism                      sasl.mechanisms
sasl.jaas.config (PLAIN, SCRAM)     sasl.username + sasl.password
ssl.truststore.location (PEM type)  ssl.ca.location
ssl.endpoint.identification         ssl.endpoint.identification.algorithm (none for "")
  .algorithm
=================================  =======================================================

Settings without a counterpart pass to both unchanged; librdkafka rejects names it does not know,
so `librdkafka_config` leaves out the Java client's own names (they still reach the connector).

Which settings are secrets is decided here too, once (`is_secret_option`): a profile may not
write them (job/config.py), and messages and logs show them as ``***`` (`redact`, `scrub`).
Pure functions: no client is created here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"

# Java client settings that librdkafka does not know (it fails on unknown names; its
# CONFIGURATION.md is the list) or that are translated: the connector gets them, the driver's
# look-ups get the librdkafka counterparts derived below, where there are any.
JAVA_ONLY = frozenset(
    {
        "sasl.jaas.config",
        "sasl.mechanism",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.trustmanager.algorithm",
        "ssl.keymanager.algorithm",
        "sasl.login.class",
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "key.deserializer",
        "value.deserializer",
        "max.poll.records",
        "default.api.timeout.ms",
        "fetch.max.wait.ms",  # librdkafka: fetch.wait.max.ms (the driver fetches nothing)
    }
)
# librdkafka settings that the Java client does not know: the driver's look-ups get them, the
# connector gets their Java counterparts instead.
LIBRDKAFKA_ONLY = frozenset(
    {"sasl.mechanisms", "sasl.username", "sasl.password", "ssl.ca.location"}
)

# Settings that name a file both clients read where they run (the connector's: on every
# executor, in its own working folder); librdkafka's special value "probe" names none.
FILE_SETTINGS = frozenset(
    {
        "ssl.ca.location",
        "ssl.truststore.location",
        "ssl.keystore.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.crl.location",
        "sasl.kerberos.keytab",
    }
)
NOT_A_FILE = frozenset({"probe"})

# The settings that hold a credential itself, as Kafka's clients mark them (the Java client's
# PASSWORD type, librdkafka's sensitive properties): every password, passphrase and secret, the
# JAAS and OAUTHBEARER configurations, a private key given inline. A setting that says where a
# secret is kept (ssl.keystore.location) or in what format (ssl.keystore.type) is none: shown,
# it tells which file a failure is about.
_SECRET_WORDS = ("password", "passphrase", "secret", "jaas")
_SECRET_SETTINGS = frozenset(
    {
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.assertion.private.key.pem",
        "ssl.key.pem",
        "ssl.keystore.key",
        "ssl_key",
    }
)
REDACTED = "***"  # what a secret's value is shown as


def is_secret_option(key: str) -> bool:
    """True for the settings whose values are never written in a profile nor shown (with or
    without the ``kafka.`` prefix)."""
    name = key.lower().removeprefix("kafka.")
    return name in _SECRET_SETTINGS or any(word in name for word in _SECRET_WORDS)


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` with every secret value replaced by `***`; safe to log or raise."""
    return {k: (REDACTED if is_secret_option(str(k)) else v) for k, v in options.items()}


def scrub(text: str, options: Mapping[str, Any]) -> str:
    """`text` with any secret value of `options` replaced by `***`, folded onto one line."""
    for key, value in options.items():
        if is_secret_option(str(key)) and value is not None and str(value):
            text = text.replace(str(value), REDACTED)
    return " ".join(str(text).split())


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """The Java client's `sasl.jaas.config` for a user name and password (PLAIN or SCRAM)."""
    module = PLAIN_LOGIN if mechanism.upper() == "PLAIN" else SCRAM_LOGIN
    return f"{module} required username={_jaas_quoted(username)} password={_jaas_quoted(password)};"


def jaas_credentials(jaas: str) -> tuple[str, str] | None:
    """(username, password) of a PLAIN or SCRAM `sasl.jaas.config`, None for other modules."""
    if PLAIN_LOGIN not in jaas and SCRAM_LOGIN not in jaas:
        return None
    options = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(jaas)}
    if "username" not in options or "password" not in options:
        return None
    return options["username"], options["password"]


def librdkafka_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings for confluent-kafka: librdkafka's names, the Java client's translated."""
    conf = {k: v for k, v in options.items() if k not in JAVA_ONLY}
    if "sasl.mechanism" in options:
        conf.setdefault("sasl.mechanisms", options["sasl.mechanism"])
    credentials = jaas_credentials(str(options.get("sasl.jaas.config", "")))
    if credentials is not None:
        conf.setdefault("sasl.username", credentials[0])
        conf.setdefault("sasl.password", credentials[1])
    is_pem_truststore = str(options.get("ssl.truststore.type", "")).upper() == "PEM"
    if is_pem_truststore and "ssl.truststore.location" in options:
        conf.setdefault("ssl.ca.location", options["ssl.truststore.location"])
    if str(options.get("ssl.endpoint.identification.algorithm", "x")) == "":
        conf["ssl.endpoint.identification.algorithm"] = "none"
    return conf


def java_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings for the Java client (Spark's connector): its names, librdkafka's translated."""
    conf = {k: v for k, v in options.items() if k not in LIBRDKAFKA_ONLY}
    mechanism = str(options.get("sasl.mechanism", options.get("sasl.mechanisms", "")))
    if "sasl.mechanisms" in options:
        conf.setdefault("sasl.mechanism", options["sasl.mechanisms"])
    if "sasl.username" in options and "sasl.password" in options:
        conf.setdefault(
            "sasl.jaas.config",
            jaas_config(mechanism or "PLAIN", options["sasl.username"], options["sasl.password"]),
        )
    if "ssl.ca.location" in options and "ssl.truststore.location" not in options:
        conf["ssl.truststore.type"] = "PEM"
        conf["ssl.truststore.location"] = options["ssl.ca.location"]
    if str(options.get("ssl.endpoint.identification.algorithm", "")).lower() == "none":
        conf["ssl.endpoint.identification.algorithm"] = ""
    return conf
