"""`session.get_or_create` with a session running already: it is returned as it is."""

from __future__ import annotations

import pytest

from offsets_lib.job import session


@pytest.mark.spark
def test_a_running_session_keeps_its_settings(spark) -> None:
    """Library calls (`offsets lag`, the notebook's queries) get a user's live session without
    retuning it: pyspark's getOrCreate would set every builder setting on it (here the local
    tuning's 8 shuffle partitions over the fixture's 2)."""
    got = session.get_or_create(
        quick_start=True, extra_conf={"spark.sql.session.timeZone": "Asia/Kolkata"}
    )
    assert got.sparkContext is spark.sparkContext
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
