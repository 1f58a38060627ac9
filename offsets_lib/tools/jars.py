"""The Maven packages of the job's JVM: fetched into Ivy's cache for local sessions and tests
(`make setup` runs this), and named for spark-submit on a plain cluster (jobs/airflow_dag.py).

    python -m offsets_lib.tools.jars              # fetch hadoop-aws and its AWS SDK bundle
    python -m offsets_lib.tools.jars --packages   # print spark-submit's --packages value
"""

from __future__ import annotations

import sys

from offsets_lib.job import session


def submit_packages() -> list[str]:
    """What spark-submit must add on a plain Spark cluster for the installed pyspark: Delta
    Lake and Spark's Kafka connector (`session.jvm_packages`), and Hadoop's S3A for s3:// and
    s3a:// tables (`session.s3a_packages`)."""
    return [*session.jvm_packages(), *session.s3a_packages()]


def fetch() -> list[str]:
    """Start and stop a local session that resolves the S3A packages; returns them (the other
    packages are resolved by `python -m offsets_lib.job.session --warm`)."""
    spark = session.get_or_create("fetch-jars", storage_uris=["s3a://any/"], show_progress=False)
    spark.stop()
    return session.s3a_packages()


def main(argv: list[str]) -> int:
    if argv == ["--packages"]:
        print(",".join(submit_packages()))
        return 0
    if argv:
        print("usage: python -m offsets_lib.tools.jars [--packages]", file=sys.stderr)
        return 2
    print("cached:", ", ".join(fetch()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
