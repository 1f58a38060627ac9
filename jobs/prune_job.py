"""spark-submit entry point of `offsets prune`: the hourly DAG's task after each run.

    spark-submit --py-files dist/offsets_lib.zip --files conf/prod-example.toml \
        jobs/prune_job.py --conf prod-example.toml --keep-for 7d --keep-runs 48

Submitted like the run (same release, profile and cluster settings), so it finds the tables
where the run wrote them: ``--conf`` takes the profile's output (else its database) and nothing
else; the object store's credentials are the driver's, as the run's are. See TABLES.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from offsets_lib.cli.app import run_as_job

    args = list(sys.argv[1:] if argv is None else argv)
    return run_as_job("prune", args, prog_name="prune_job.py")


if __name__ == "__main__":
    sys.exit(main())
