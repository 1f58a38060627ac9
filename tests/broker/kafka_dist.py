"""Apache Kafka broker jars from Maven Central, cached outside git (``make broker-jars``).

Each version's broker artifact (``org.apache.kafka:kafka_2.13``) and its runtime dependencies
are copied by Maven (``dependency:copy-dependencies`` on a generated pom) into
``$KAFKA_JARS_CACHE`` (default ``~/.cache/kafka-offsets-audit``)/``kafka-<version>/``; a
``.complete`` stamp makes a warm cache a no-op. Run as a script to warm the cache:
``python tests/broker/kafka_dist.py [VERSION ...]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The newest 4.x (KRaft only, the new group coordinator) and the last 3.x (classic coordinator by
# default). Older releases (2.x, ZooKeeper) are not run: see tests/broker/conftest.py.
VERSIONS: tuple[str, ...] = ("4.4.0", "3.9.1")
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


def cache_root() -> Path:
    """Where resolved jars live (outside the repository)."""
    default = Path.home() / ".cache" / "kafka-offsets-audit"
    return Path(os.environ.get("KAFKA_JARS_CACHE", default))


def jar_dir(version: str, artifact: str = "kafka_2.13") -> Path:
    """The folder holding every jar of `version`'s broker (the `-cp 'dir/*'` of `kafka.Kafka`)."""
    prefix = "kafka" if artifact == "kafka_2.13" else artifact
    return cache_root() / f"{prefix}-{version}"


def resolve_streams() -> Path:
    """kafka-streams and its kafka-clients, for the Streams and share-group members."""
    return resolve(STREAMS_VERSION, "kafka-streams")


def resolve(version: str, artifact: str = "kafka_2.13") -> Path:
    """Copy `artifact`'s jars at `version` into the cache (no-op when already complete)."""
    target = jar_dir(version, artifact)
    if (target / STAMP).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(
            "Maven (mvn) is needed to fetch the Kafka broker jars for tests/broker: "
            "install it (Debian: apt-get install -y maven) and rerun `make setup`."
        )
    extra = _LOG4J2_BINDING if int(version.split(".")[0]) >= 4 else ""
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
    for version in argv or VERSIONS:
        print(f"kafka {version}: {resolve(version)}")
    if not argv:
        print(f"kafka-streams {STREAMS_VERSION}: {resolve_streams()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
