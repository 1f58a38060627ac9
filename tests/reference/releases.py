"""Which Kafka releases refuse what the job notes in `load_failures` (the tests' reading of the
release notes, checked against real brokers in tests/broker); the job itself names the releases
in its details (`partition_claims.LOWER_EPOCH_REFUSERS`, `READER_LIMIT_REFUSERS`)."""

from __future__ import annotations

Release = tuple[int, int, int]


def refuses_lower_epoch_claims(release: Release) -> bool:
    """LOG-7: the releases whose loader fails on any claim of a held partition (before
    KAFKA-19862's fix: up to 4.0.1 and 4.1.0-4.1.1)."""
    return release <= (4, 0, 1) or (4, 1, 0) <= release <= (4, 1, 1)


def refuses_reader_limits(release: Release) -> bool:
    """DEC-LIMIT: the releases whose generated readers refuse a count over the limits
    (`wire.codec.exceeds_reader_limits`): 4.2.2+, 4.3.2+ and 4.4.0 on."""
    return (4, 2, 2) <= release < (4, 3, 0) or release >= (4, 3, 2)
