"""Which broker versions the oracle runs, and what each one's era has (semantics.md section 3).

One broker per group-coordinator regime of ``--coordinator``, and the last 3.x for the Scala
coordinator in KRaft mode. Features are gated by the release that brought them to the broker:
static members (KIP-345) 2.3 (DescribeGroups shows their group.instance.id from 2.4),
OffsetDelete (KIP-496) 2.4, OffsetFetch's require_stable (KIP-447) 2.5, group types in
ListGroups (KIP-848) 3.8.
"""

from __future__ import annotations

from tests.broker.kafka_dist import VERSIONS

__all__ = [
    "VERSIONS",
    "coordinator_for",
    "describes_instance_ids",
    "has_require_stable",
    "lists_group_types",
    "version_tuple",
]

Version = tuple[int, int]
INSTANCE_IDS: Version = (2, 4)
REQUIRE_STABLE: Version = (2, 5)
GROUP_TYPES: Version = (3, 8)


def version_tuple(version: str) -> Version:
    """ "2.8.2" -> (2, 8): the release line, which decides the coordinator's rules."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def coordinator_for(version: str) -> str:
    """The `--coordinator` regime of a broker: the new coordinator is the only one in 4.x; the
    Scala coordinator's rules changed in 2.1 (KIP-211) and 2.4 (KIP-496), its loader in 2.6.1
    (KAFKA-10401: the state timestamp of a GroupMetadataValue v3 read)."""
    line = version_tuple(version)
    if line >= (4, 0):
        return "new"
    release = tuple(int(x) for x in version.split(".")[:3])
    if release >= (2, 6, 1):
        return "classic-2.4"
    if line >= (2, 4):
        return "classic-2.4.0-2.6.0"
    if line >= (2, 1):
        return "classic-2.1"
    return "pre-2.1"


def has_require_stable(version: str) -> bool:
    """Before 2.5 OffsetFetch has no require_stable: the broker answers the committed offsets
    whatever transactions are open, so there is no 'unstable' to compare."""
    return version_tuple(version) >= REQUIRE_STABLE


def lists_group_types(version: str) -> bool:
    """ListGroups names each group's type from v5 (3.8); an older broker's groups are all
    classic, and librdkafka lists their type as unknown."""
    return version_tuple(version) >= GROUP_TYPES


def describes_instance_ids(version: str) -> bool:
    """DescribeGroups names a static member's group.instance.id from v4 (2.4); a 2.3 broker
    answers v3 at most, whose members have none (librdkafka shows None)."""
    return version_tuple(version) >= INSTANCE_IDS
