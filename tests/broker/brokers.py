"""One Apache Kafka broker in KRaft combined mode (broker + controller) on 127.0.0.1.

Started with ``java -cp '<jars>/*' kafka.Kafka server.properties`` after
``kafka.tools.StorageTool format``, on free ports, with its own log dir; `restart` keeps the
log dir so the coordinator loads its state back from ``__consumer_offsets``.

A 2.x broker (no KRaft) runs in ZooKeeper mode instead: a ZooKeeper server of the broker's own
ZooKeeper jar starts beside it on a free port and stays up across `stop`/`start` (the broker's
metadata lives there); `kill` ends both. Both run on Java 11 (`kafka_dist.java_home`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.broker import kafka_dist
from tests.broker.tls import BrokerTls, make_broker_tls
from tests.support.ports import free_ports, is_listening

STARTUP_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
SASL_ADMIN = ("admin", "admin-secret")  # the broker's own login on a SASL listener
SCRAM_MECHANISM = "SCRAM-SHA-512"
JVM_OPTIONS = ("-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

# Settings that make the coordinator's clocks short enough for a test: offsets expire after one
# minute, checked every 500 ms (the defaults: 7 days, every 10 minutes); one partition, one replica.
FAST_SETTINGS: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "500",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "log.flush.interval.messages": "1",
}


def _java(version: str) -> str:
    """Java 17 runs 3.9 and 4.x (JAVA_HOME wins when set); 2.x runs on the cache's Java 11."""
    era_home = kafka_dist.java_home(version)
    home = era_home or os.environ.get("KAFKA_JAVA_HOME") or os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


# log4j 1.2 (Kafka 2.x and its ZooKeeper) to the process's stdout, which goes to a file
_LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""

# log4j2 (Kafka 4): errors to stdout as without a configuration, and the request log's lines of
# the TxnOffsetCommit and OffsetFetch requests (version, request, response) to `requests.log`:
# which version a client sent and how it named the topics.
_LOG4J2 = """status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
appender.requests.type = File
appender.requests.name = REQUESTS
appender.requests.fileName = {requests}
appender.requests.layout.type = PatternLayout
appender.requests.layout.pattern = %m%n
appender.requests.filter.api.type = RegexFilter
appender.requests.filter.api.regex = .*"requestApiKeyName":"(TXN_OFFSET_COMMIT|OFFSET_FETCH)".*
appender.requests.filter.api.onMatch = ACCEPT
appender.requests.filter.api.onMismatch = DENY
rootLogger.level = ERROR
rootLogger.appenderRef.stdout.ref = STDOUT
logger.requests.name = kafka.request.logger
logger.requests.level = DEBUG
logger.requests.additivity = false
logger.requests.appenderRef.requests.ref = REQUESTS
"""


def _without_controller(listeners: Mapping[str, str]) -> dict[str, str]:
    """A KRaft listener setup without its CONTROLLER listener: what a ZooKeeper-mode broker
    takes (2.x rejects `controller.listener.names` entries it cannot bind)."""
    out = {}
    for key, value in listeners.items():
        if key == "controller.listener.names":
            continue
        if key in ("listeners", "listener.security.protocol.map"):
            value = ",".join(v for v in value.split(",") if not v.startswith("CONTROLLER"))
        out[key] = value
    return out


class ZooKeeper:
    """A standalone ZooKeeper server (``ZooKeeperServerMain``) on 127.0.0.1 for a 2.x broker."""

    def __init__(self, version: str, work_dir: Path, jars: Path):
        self.version = version
        self.work_dir = work_dir
        self.jars = jars
        self.port = free_ports(1)[0]
        self.proc: subprocess.Popen | None = None
        work_dir.mkdir(parents=True, exist_ok=True)
        self.config = work_dir / "zookeeper.properties"
        settings = {
            "dataDir": work_dir / "data",
            "clientPort": self.port,
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": 0,
            "tickTime": 500,
            "admin.enableServer": "false",  # 3.5: no Jetty admin server on port 8080
        }
        self.config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        command = [_java(self.version), "-Xmx128m", "-XX:+UseSerialGC"]
        command += [f"-Dlog4j.configuration=file:{self.work_dir.parent / 'log4j.properties'}"]
        command += ["-cp", f"{self.jars}/*", "org.apache.zookeeper.server.ZooKeeperServerMain"]
        command += [str(self.config)]
        with open(self.work_dir / "zookeeper.out", "ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not is_listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                tail = (self.work_dir / "zookeeper.out").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"ZooKeeper for Kafka {self.version} did not start:\n{tail}")
            time.sleep(0.1)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=STOP_TIMEOUT_S)


class KafkaBroker:
    """A broker of `version` under `work_dir` (log dir, config, stdout log)."""

    def __init__(
        self,
        version: str,
        work_dir: Path,
        settings: Mapping[str, str] | None = None,
        sasl_users: Mapping[str, str] | None = None,
        scram_users: Mapping[str, str] | None = None,
    ):
        """`sasl_users` (user -> password): clients must log in with SASL PLAIN (the broker
        itself as `admin`, see `client_conf`). `scram_users` instead: one SASL_SSL listener,
        SCRAM-SHA-512 logins (stored at format time) over TLS with a self-signed CA made here
        (`tls.ca_pem` is what clients trust)."""
        self.version = version
        self.sasl_users = dict(sasl_users or {})
        self.scram_users = dict(scram_users or {})
        if self.sasl_users and self.scram_users:
            raise ValueError("a test broker has one listener: PLAIN or SCRAM users, not both")
        self.tls: BrokerTls | None = make_broker_tls(work_dir / "tls") if self.scram_users else None
        self.work_dir = work_dir
        self.log_dir = work_dir / "data"
        self.jars = kafka_dist.resolve(version)
        self.port, self.controller_port = free_ports(2)
        self.settings = {**FAST_SETTINGS, **(settings or {})}
        self.proc: subprocess.Popen | None = None
        self.zookeeper: ZooKeeper | None = None
        if kafka_dist.uses_zookeeper(version):
            self.zookeeper = ZooKeeper(version, work_dir / "zookeeper", self.jars)
        self._write_config()
        if self.zookeeper is None:
            self._format()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def client_conf(self) -> dict[str, Any]:
        """librdkafka settings of an administrator client of this broker."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "log_level": 0}
        if self.tls is not None:
            conf |= {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": SCRAM_MECHANISM,
                "sasl.username": SASL_ADMIN[0],
                "sasl.password": SASL_ADMIN[1],
                "ssl.ca.location": str(self.tls.ca_pem),
            }
        if self.sasl_users:
            conf |= {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": SASL_ADMIN[0],
                "sasl.password": SASL_ADMIN[1],
            }
        return conf

    def _listener_settings(self) -> dict[str, str]:
        if self.tls is not None:
            return self._scram_ssl_listener_settings(self.tls)
        protocol = "SASL_PLAINTEXT" if self.sasl_users else "PLAINTEXT"
        listeners = {
            "listeners": f"{protocol}://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"{protocol}://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": protocol,
            "listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:PLAINTEXT",
        }
        if self.sasl_users:
            users = {SASL_ADMIN[0]: SASL_ADMIN[1], **self.sasl_users}
            known = " ".join(f'user_{u}="{p}"' for u, p in users.items())
            listeners |= {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                    "org.apache.kafka.common.security.plain.PlainLoginModule required"
                    f' username="{SASL_ADMIN[0]}" password="{SASL_ADMIN[1]}" {known};'
                ),
            }
        return listeners

    def _scram_ssl_listener_settings(self, tls: BrokerTls) -> dict[str, str]:
        """One SASL_SSL listener (SCRAM-SHA-512), also the broker's own; controller in the clear."""
        return {
            "listeners": f"SASL_SSL://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "SASL_SSL",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required"
                f' username="{SASL_ADMIN[0]}" password="{SASL_ADMIN[1]}";'
            ),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.keystore),
            "ssl.keystore.password": tls.keystore_password,
            "ssl.key.password": tls.keystore_password,
            # the broker checks its settings by a handshake with itself: it trusts the CA too
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_pem),
            "ssl.client.auth": "none",
        }

    def _scram_credentials(self) -> list[str]:
        """StorageTool's `--add-scram` arguments: the broker's login and every user's."""
        users = {SASL_ADMIN[0]: SASL_ADMIN[1], **self.scram_users}
        return [
            item
            for user, password in users.items()
            for item in ("--add-scram", f"{SCRAM_MECHANISM}=[name={user},password={password}]")
        ]

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def _classpath(self) -> str:
        return f"{self.jars}/*"

    def _write_config(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            **self._listener_settings(),
            "log.dirs": str(self.log_dir),
            **self.settings,
        }
        if self.zookeeper is not None:
            lines = self._zookeeper_mode(lines)
        self.config = self.work_dir / "server.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))

    def _format(self) -> None:
        cluster_id = "-"
        while cluster_id.startswith("-"):  # StorageTool would read "-..." as an option (1 in 64)
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        command = [_java(self.version), *JVM_OPTIONS, "-cp", self._classpath()]
        command += ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.config)]
        if self.scram_users:
            command += self._scram_credentials()
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def _zookeeper_mode(self, lines: Mapping[str, str]) -> dict[str, str]:
        """The KRaft configuration turned into a 2.x one: broker.id and zookeeper.connect
        instead of the KRaft roles, no controller listener; a log4j 1.2 configuration."""
        kraft = ("process.roles", "node.id", "controller.quorum.voters")
        assert self.zookeeper is not None
        out = {"broker.id": "1", "zookeeper.connect": self.zookeeper.connect}
        out |= _without_controller({k: v for k, v in lines.items() if k not in kraft})
        (self.work_dir / "log4j.properties").write_text(_LOG4J1)
        return out

    @property
    def request_log(self) -> Path:
        """Kafka 4: the request log's TxnOffsetCommit and OffsetFetch lines (JSON after
        "Completed request:")."""
        return self.work_dir / "requests.log"

    def _jvm_options(self) -> list[str]:
        if self.zookeeper is None and self.major >= 4:
            config = self.work_dir / "log4j2.properties"
            config.write_text(_LOG4J2.format(requests=self.request_log))
            return [*JVM_OPTIONS, f"-Dlog4j2.configurationFile={config}"]
        if self.zookeeper is None:
            return list(JVM_OPTIONS)
        return [*JVM_OPTIONS, f"-Dlog4j.configuration=file:{self.work_dir / 'log4j.properties'}"]

    def start(self) -> None:
        if self.zookeeper is not None:
            self.zookeeper.start()
        command = [_java(self.version), *self._jvm_options(), "-cp", self._classpath()]
        command += ["kafka.Kafka", str(self.config)]
        with open(self.work_dir / "broker.out", "ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not is_listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                if self.zookeeper is not None:
                    self.zookeeper.kill()
                tail = (self.work_dir / "broker.out").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"Kafka {self.version} did not start:\n{tail}")
            time.sleep(0.1)
        self._wait_ready(deadline)

    def _wait_ready(self, deadline: float) -> None:
        """Metadata answers, and after a restart (its log dir has the offsets topic) every
        __consumer_offsets partition has a leader and the coordinator answers for them
        (`_probe_coordinator`); ListGroups answers without an error (while it loads, a 2.x
        coordinator answers COORDINATOR_LOAD_IN_PROGRESS with the groups loaded so far)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self.client_conf)
        has_offsets_topic = any(self.log_dir.glob("__consumer_offsets-*"))  # a restart
        while True:
            try:
                offsets_topic = admin.list_topics(timeout=2.0).topics.get("__consumer_offsets")
                if has_offsets_topic and (
                    offsets_topic is None
                    or offsets_topic.error is not None
                    or any(p.leader < 0 for p in offsets_topic.partitions.values())
                ):
                    raise RuntimeError("__consumer_offsets has a partition without a leader")
                if has_offsets_topic:
                    self._probe_coordinator(admin)
                listing = admin.list_consumer_groups(request_timeout=2.0).result()
                if listing.errors:  # KafkaError objects, which are not exceptions
                    raise KafkaException(listing.errors[0])
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    @staticmethod
    def _probe_coordinator(admin) -> None:
        """DescribeGroups of a group nobody uses answers (Dead, or GROUP_ID_NOT_FOUND) once
        the coordinator owns and has loaded the offsets partition: a ZooKeeper-mode broker
        learns its partitions' leader (itself, from ZooKeeper) before it becomes leader, and
        meanwhile answers ListGroups with no groups and no error."""
        from confluent_kafka import KafkaError, KafkaException

        probe = "readiness-probe"
        try:
            admin.describe_consumer_groups([probe], request_timeout=2.0)[probe].result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                raise

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def restart(self) -> None:
        """Stop and start on the same log dir: the coordinator replays __consumer_offsets."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """End the broker at once (and its ZooKeeper server, which `stop` leaves up)."""
        with contextlib.suppress(Exception):
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        if self.zookeeper is not None:
            self.zookeeper.kill()
