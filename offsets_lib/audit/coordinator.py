"""Which group coordinator reads the log: the one choice that changes what a log means.

`--coordinator` names it; the replay, the transaction rules and the decision tables all take it
(semantics.md section 3 lists what differs between them).
"""

from __future__ import annotations

from enum import StrEnum


class Coordinator(StrEnum):
    """Which coordinator evaluates the log (semantics.md section 3)."""

    NEW = "new"
    CLASSIC_2_4 = "classic-2.4"
    # KIP-496's rules with Kafka 2.3's loader, which reads the state timestamp of a
    # GroupMetadataValue v2 only (2.4.0 to 2.6.0; KAFKA-10401 fixed it in 2.6.1 and 2.7.0)
    CLASSIC_2_4_0_TO_2_6_0 = "classic-2.4.0-2.6.0"
    CLASSIC_2_1 = "classic-2.1"
    PRE_2_1 = "pre-2.1"

    @property
    def is_scala(self) -> bool:
        return self is not Coordinator.NEW

    @property
    def reads_modern_records(self) -> bool:
        """Only the new coordinator loads record types >= 3; the Scala loader skips them."""
        return self is Coordinator.NEW
