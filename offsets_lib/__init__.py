"""Kafka __consumer_offsets audit: codec, compaction, group state and broker decisions.

``offsets_lib.run(spark, **options)`` is `offsets run` inside the caller's session
(job/entry.py; ``offsets_lib.audit`` is the audit's package). Importing the package imports
no Spark: the executors import it too."""

from __future__ import annotations

from typing import Any

__all__ = ["run"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from offsets_lib.job.entry import run

        return run
    raise AttributeError(f"module 'offsets_lib' has no attribute {name!r}")
