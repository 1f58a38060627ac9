"""spark-submit entry point of `offsets report`: the hourly DAG's task after each run writes the
run's page next to its tables (`_reports/<run id>.html` and `_reports/latest.html`).

    spark-submit --py-files dist/offsets_lib.zip --files conf/prod-example.toml \\
        jobs/report_job.py --conf prod-example.toml --run-id RUN --next-to-tables

Submitted like the run, so it finds the tables where the run wrote them and writes with the
driver's object-store credentials. No Spark work: the tables are read with delta-rs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from offsets_lib.cli.app import run_as_job

    args = list(sys.argv[1:] if argv is None else argv)
    return run_as_job("report", args, prog_name="report_job.py")


if __name__ == "__main__":
    sys.exit(main())
