"""Spark's own limit in the production configuration (a spark-submit application): read a topic
through Spark's Kafka connector, keep the latest record per key (the log cleaner's rule), write
one Delta table with Delta's Spark writer, registered in the catalog. It logs in as the job
does (SASL_SSL, SCRAM-SHA-512): the CA's PEM file, the user and the password come from the
environment (BENCH_KAFKA_CA, BENCH_KAFKA_USER, KAFKA_SASL_PASSWORD).

    spark-submit ... bench/production_baseline.py BOOTSTRAP TOPIC DATABASE LOCATION
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def _login() -> dict[str, str]:
    user, password = os.environ["BENCH_KAFKA_USER"], os.environ["KAFKA_SASL_PASSWORD"]
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f"username={json.dumps(user)} password={json.dumps(password)};"
    )
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": os.environ["BENCH_KAFKA_CA"],
    }


def main(bootstrap: str, topic: str, database: str, location: str) -> None:
    spark = SparkSession.builder.appName("offsets-bench-baseline").getOrCreate()
    raw = (
        spark.read.format("kafka")
        .options(**_login())
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    latest = raw.groupBy("partition", "key").agg(
        F.max_by(F.struct("value", "offset", "timestamp"), "offset").alias("r")
    )
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    (
        latest.where(F.col("r.value").isNotNull())
        .select("partition", "key", "r.*")
        .write.format("delta")
        .mode("overwrite")
        .option("path", location)
        .saveAsTable(f"`{database}`.`latest_records`")
    )
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
