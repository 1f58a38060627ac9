"""One set of Kafka settings for two clients: librdkafka's names and the Java client's."""

from __future__ import annotations

import pytest

from offsets_lib.io.sources import kafka_names
from offsets_lib.io.sources.kafka import client_config, connector_config

BOOTSTRAP = {"bootstrap.servers": "127.0.0.1:9092"}


def test_librdkafka_sasl_names_become_the_java_clients_jaas_config() -> None:
    given = {
        **BOOTSTRAP,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'p"w\\d',
        "ssl.ca.location": "/etc/ca.pem",
    }
    assert connector_config(given) == {
        **BOOTSTRAP,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="alice" password="p\\"w\\\\d";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
    }
    assert client_config(given) == given  # librdkafka's own names stay


def test_java_sasl_names_become_librdkafka_credentials() -> None:
    given = {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": kafka_names.jaas_config("PLAIN", "bob", 'se"cret'),
        "kafka.ssl.endpoint.identification.algorithm": "",
        "kafka.max.poll.records": "500",
        "kafka.fetch.max.wait.ms": "50",
    }
    assert client_config(given) == {
        **BOOTSTRAP,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "bob",
        "sasl.password": 'se"cret',
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert connector_config(given) == {k.removeprefix("kafka."): v for k, v in given.items()}


def test_a_jaas_config_of_another_login_module_gives_no_credentials() -> None:
    oauth = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    assert kafka_names.jaas_credentials(oauth) is None
    given = {**BOOTSTRAP, "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauth}
    assert client_config(given) == {**BOOTSTRAP, "sasl.mechanisms": "OAUTHBEARER"}


def test_explicit_settings_of_the_other_client_win_over_derived_ones() -> None:
    given = {
        **BOOTSTRAP,
        "sasl.mechanism": "PLAIN",
        "sasl.mechanisms": "PLAIN",
        "sasl.jaas.config": kafka_names.jaas_config("PLAIN", "java-user", "a"),
        "sasl.username": "rd-user",
        "sasl.password": "b",
    }
    assert client_config(given)["sasl.username"] == "rd-user"
    assert "rd-user" not in connector_config(given)["sasl.jaas.config"]


SECRET_SETTINGS = [
    "sasl.password",
    "kafka.sasl.jaas.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.key",
    "ssl.keystore.password",
    "ssl.truststore.password",
]
SHOWN_SETTINGS = [
    "bootstrap.servers",
    "sasl.username",
    "ssl.keystore.location",  # where the secret is kept, not the secret
    "ssl.keystore.type",
    "ssl.ca.location",
    "sasl.oauthbearer.token.endpoint.url",
]


def test_one_rule_says_which_settings_are_secrets_for_profiles_and_messages() -> None:
    from offsets_lib.job.config import ProfileError, parse_profile

    assert [k for k in SECRET_SETTINGS + SHOWN_SETTINGS if kafka_names.is_secret_option(k)] == (
        SECRET_SETTINGS
    )
    shown = {k: "v" for k in SHOWN_SETTINGS}
    assert kafka_names.redact({**shown, "ssl.keystore.password": "pw"}) == {
        **shown,
        "ssl.keystore.password": "***",
    }
    for key in SECRET_SETTINGS:
        name = key.removeprefix("kafka.")
        with pytest.raises(ProfileError, match="name an environment variable"):
            parse_profile({"kafka": {name: "literal"}}, environ={})
    given = {k: "v" for k in SHOWN_SETTINGS if k != "bootstrap.servers"}
    assert parse_profile({"kafka": given}, environ={}).kafka == given
