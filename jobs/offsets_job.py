"""spark-submit entry point of the audit; same options as `offsets run`, same code path.

    spark-submit --py-files dist/offsets_lib.zip jobs/offsets_job.py \
        --source kafka --bootstrap-servers broker:9092 --output s3://bucket/offsets-audit \
        --as-of 2026-11-21T10:00:00Z --run-id scheduled__2026-11-21T10:00:00+00:00
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from offsets_lib.cli import main as cli

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=["run", *args], prog_name="offsets_job.py", standalone_mode=True)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
