"""Fetch the Maven packages the job's sessions use (hadoop-aws and its AWS SDK bundle) into
Ivy's cache, so tests and offline runs find them (`make setup` runs this).

    python -m offsets_lib.tools.jars
"""

from __future__ import annotations

from offsets_lib.job import session


def fetch() -> list[str]:
    """Start and stop a local session that resolves the S3A packages; returns them."""
    spark = session.get_or_create("fetch-jars", storage_uris=["s3a://any/"], show_progress=False)
    spark.stop()
    return session.s3a_packages()


if __name__ == "__main__":
    print("cached:", ", ".join(fetch()))
