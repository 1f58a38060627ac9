"""spark-submit entry point of the audit; same options as `offsets run`, same code path.

    spark-submit --py-files dist/offsets_lib.zip \
        --packages "$(python -m offsets_lib.tools.jars --packages)" \
        --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
        --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
        jobs/offsets_job.py --conf prod-example.toml --as-of 2026-11-21T10:00:00Z

The line the hourly DAG submits: docs/deploy.md.

A Python job that has a session already (a Databricks job, an Airflow PythonOperator, a Dagster
asset) calls the same run without the command line: ``offsets_lib.run(spark, **options)``.

Under spark-submit the cluster's configuration wins (job/session.py applies no local layer):
packages, the Delta extension and the catalog (Hive metastore, Glue, Unity Catalog) come from
the submit; `--database audit` registers the tables there (external at --output).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from offsets_lib.cli.app import run_as_job

    args = list(sys.argv[1:] if argv is None else argv)
    return run_as_job("run", args, prog_name="offsets_job.py")


if __name__ == "__main__":
    sys.exit(main())
