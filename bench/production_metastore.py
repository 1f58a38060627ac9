"""The production bench's metastore made before anything is timed (a spark-submit application):
the Hive metastore's schema is created by the first client that finds none."""

from __future__ import annotations

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("offsets-bench-metastore").getOrCreate()
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_metastore")
    spark.stop()
