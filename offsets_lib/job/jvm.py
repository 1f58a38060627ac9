"""What the driver JVM of a session this package starts loads: our JVM packages, and the key
of the driver JVM's options (job/session.py builds sessions with them, job/local_tuning.py tunes
the local ones)."""

from __future__ import annotations

from importlib import metadata

SCALA_VERSION = "2.13"  # Spark 4 is built for Scala 2.13 only
JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def jvm_packages() -> list[str]:
    """Maven coordinates of the JVM packages a local session loads: Delta Lake's jars for the
    installed ``delta-spark`` (its artifact is named after Spark's major.minor, as
    ``delta.pip_utils.configure_spark_with_delta_pip`` names it) and the Kafka connector built
    for the installed ``pyspark``."""
    import pyspark

    spark_version = pyspark.__version__
    spark_minor = ".".join(spark_version.split(".")[:2])
    delta_version = metadata.version("delta_spark")
    return [
        f"io.delta:delta-spark_{spark_minor}_{SCALA_VERSION}:{delta_version}",
        f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{spark_version}",
    ]
