"""What a read_committed Kafka run cannot see yet: records after an open transaction."""

from __future__ import annotations

from offsets_lib.cli.run_summary import held_back_line
from offsets_lib.io.sources.kafka_admin import held_back


def test_held_back_counts_records_after_each_partitions_stable_end() -> None:
    ends = {0: 10, 1: 5, 2: 7}
    highs = {0: 10, 1: 9, 2: 6}  # 2: the watermark asked first, a transaction ended since
    assert held_back(ends, highs) == {1: 4}


def test_held_back_line_names_partitions_and_counts() -> None:
    assert held_back_line({7: 3, 12: 1}) == (
        "not read yet: 4 records after open transactions on offsets partitions 7 (3), 12 (1);"
        " their groups' pending transactional offsets and any later commits are not in this"
        " run (the next run reads them once the transactions end)"
    )
