"""Whether a Hive metastore service answers, checked before a command waits on it: a port
probe before a JVM starts (`check_metastore_ports`) and one question from a short-lived Hive
client of its own (`check_metastore`). `io.catalog` asks both and re-exports them."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from offsets_lib.io import spark_settings


class CatalogUnreachable(OSError):
    """The catalog did not answer: its metastore is down, elsewhere, or held by another process
    (exit 3 like an unreachable broker)."""


# What the metastore check's own Hive client is given where the user set nothing (in
# spark-defaults or the session as spark.hadoop.*, in core-site.xml or hive-site.xml): Hive's
# defaults (3 rounds over the URIs 1 s apart, a 600 s socket timeout, and set_ugi's call before
# the first question) left a metastore that never answers hanging for 10 minutes and more, and
# a closed port took 16-43 s. The session's own client keeps the user's and Hive's settings.
METASTORE_CHECK_CONF: dict[str, str] = {
    "hive.metastore.connect.retries": "1",  # one round over the URIs, as Hive tries them in turn
    "hive.metastore.client.connect.retry.delay": "0s",  # no wait after the round
    "hive.metastore.client.socket.timeout": "5s",  # to connect, and for the answer
    "hive.metastore.execute.setugi": "false",  # one call to wait for, not two
}
SOCKET_TIMEOUT = "hive.metastore.client.socket.timeout"


def check_metastore(spark: SparkSession) -> None:
    """CatalogUnreachable unless the Hive metastore service of the session's catalog
    (``hive.metastore.uris``) answers one question (the database names) to a client of its
    own, built by Hive from the session's Hadoop settings and hive-site.xml with
    `METASTORE_CHECK_CONF` where the user set none; closed once answered. Nothing to check
    for another catalog (Spark's in-memory one, an embedded Derby metastore, no URIs).

    Why a client of its own: the session's client is made once, with the settings it keeps for
    the whole run (a run's DDL may rightly wait longer than this check); Spark asks no question
    before it, and its failures come retried and wrapped ("Unable to instantiate
    SessionHiveMetaStoreClient")."""
    if spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        return
    if spark_settings.is_connect(spark):  # no JVM here: the server's catalog answers itself
        return
    from py4j.protocol import Py4JJavaError

    jvm = spark._jvm
    hive_conf = jvm.org.apache.hadoop.hive.conf.HiveConf
    user = jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
    site = hive_conf.getHiveSiteLocation()
    if site is not None:
        user.addResource(site)
    uris = user.get("hive.metastore.uris")
    if not uris or not uris.strip():
        return
    conf = hive_conf(user, hive_conf().getClass())
    for key, value in METASTORE_CHECK_CONF.items():
        if user.get(key) is None:
            conf.set(key, value)
    try:
        client = jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
        try:
            client.getAllDatabases()
        finally:
            client.close()
    except Py4JJavaError as exc:
        cause = metastore_failure(str(exc.java_exception.getMessage()), conf.get(SOCKET_TIMEOUT))
        raise CatalogUnreachable(
            f"the catalog cannot be reached (metastore {shown_uris(uris)}): {cause}"
        ) from None


METASTORE_PORT = 9083  # Hive's, for a URI that names none
CONNECT_TIMEOUT_S = 2.0  # a slower connection is left to check_metastore


def check_metastore_ports(uris: str | None) -> None:
    """Before a JVM starts: CatalogUnreachable when no URI of a Hive metastore service
    (``hive.metastore.uris`` as `session.metastore_uris_to_start` finds it) takes a
    connection: each refused, or its host unknown or unreachable. A connection that neither
    opens nor fails within CONNECT_TIMEOUT_S, or one that opens, is left to `check_metastore`
    (its wait is the user's setting). Why: a JVM and its session took 7-25 s to start on the
    shared 2-core machine, where a refused connection takes milliseconds."""
    if not uris:
        return
    failure = "no URI"
    for uri in (u.strip() for u in uris.split(",") if u.strip()):
        parts = urlsplit(uri)
        try:
            address = (parts.hostname or "", parts.port or METASTORE_PORT)
        except ValueError:  # no port number: Hive's client says what it makes of it
            return
        try:
            with socket.create_connection(address, timeout=CONNECT_TIMEOUT_S):
                return
        except TimeoutError:
            return
        except socket.gaierror as exc:
            failure = f"unknown host {parts.hostname} ({exc.strerror})"
        except OSError as exc:
            failure = exc.strerror or type(exc).__name__
    raise CatalogUnreachable(
        f"the catalog cannot be reached (metastore {shown_uris(uris)}): {failure}"
    )


def metastore_failure(message: str, socket_timeout: str) -> str:
    """What failed, from the message of Hive's client (its first line names the innermost
    failure last: ``... TTransportException: java.net.ConnectException: Connection refused``)."""
    first = message.strip().splitlines()[0] if message.strip() else "no answer"
    if "SocketTimeoutException" in first:
        return f"no answer within {socket_timeout} ({SOCKET_TIMEOUT})"
    return first.rsplit(": ", 1)[-1]


def shown_uris(uris: str) -> str:
    """The metastore URIs as a line may show them: a user and password in one are left out."""
    shown = []
    for uri in (u.strip() for u in uris.split(",")):
        scheme, sep, rest = uri.rpartition("://")
        host = rest.rsplit("@", 1)[-1]
        shown.append(f"{scheme}{sep}{host}")
    return ", ".join(u for u in shown if u)
