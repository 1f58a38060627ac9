"""Record types 0-2: offset commits and classic group metadata (records.md section 5).

Table data, one `R(...)` per record type; edit here to follow a new Kafka release.
"""

from offsets_lib.wire.layout_types import ZERO_UUID, F, K, M, R

TABLE = (
    R(
        0,
        "LegacyOffsetCommit",
        since="0.8.2.0",
        value_from=1,
        status="legacy: only 0.8.2.x wrote type-0 keys; 0.9+ write type 1",
        key=M(
            "LegacyOffsetCommitKey",
            "0",
            "none",
            fields=(
                F("group", "string", "0"),
                F("topic", "string", "0"),
                F("partition", "int32", "0"),
            ),
        ),
        value=M(
            "LegacyOffsetCommitValue",
            "0",
            "none",
            fields=(
                F("offset", "int64", "0", since="0.8.2.0"),
                F("metadata", "string", "0", since="0.8.2.0"),
                F(
                    "commitTimestamp",
                    "int64",
                    "0",
                    since="0.8.2.0",
                    note="named 'timestamp' in 0.8.2",
                ),
            ),
        ),
    ),
    R(
        1,
        "OffsetCommit",
        since="0.9.0.0",
        status="current",
        key=M(
            "OffsetCommitKey",
            "0",
            "none",
            fields=(
                F("group", "string", "0"),
                F("topic", "string", "0"),
                F("partition", "int32", "0"),
            ),
        ),
        value=M(
            "OffsetCommitValue",
            "0-4",
            "4+",
            fields=(
                F("offset", "int64", "0+", since="0.8.2.0"),
                F("leaderEpoch", "int32", "3+", default=-1, since="2.1.0", note="-1 = unknown"),
                F("metadata", "string", "0+", since="0.8.2.0"),
                F(
                    "commitTimestamp",
                    "int64",
                    "0+",
                    since="0.8.2.0",
                    note="named 'timestamp' in v0",
                ),
                F(
                    "expireTimestamp",
                    "int64",
                    "1",
                    default=-1,
                    since="0.9.0.0",
                    note="only in v1; -1 = none",
                ),
                F(
                    "topicId",
                    "uuid",
                    "4+",
                    tag=0,
                    tagged="4+",
                    default=ZERO_UUID,
                    since="4.1.0",
                    note="all-zero = unknown; written only when the coordinator knows the topic id",
                ),
            ),
        ),
    ),
    R(
        2,
        "GroupMetadata",
        since="0.9.0.0",
        status="current",
        key=K("GroupMetadataKey", "group"),
        value=M(
            "GroupMetadataValue",
            "0-4",
            "4+",
            fields=(
                F(
                    "protocolType",
                    "string",
                    "0+",
                    since="0.9.0.0",
                    note="empty string when the group has no protocol type yet",
                ),
                F("generation", "int32", "0+", since="0.9.0.0"),
                F(
                    "protocol",
                    "string",
                    "0+",
                    nullable="0+",
                    since="0.9.0.0",
                    note="0.9.0-0.10.0 declared it non-nullable; same bytes",
                ),
                F(
                    "leader",
                    "string",
                    "0+",
                    nullable="0+",
                    since="0.9.0.0",
                    note="0.9.0-0.10.0 declared it non-nullable; same bytes",
                ),
                F(
                    "currentStateTimestamp",
                    "int64",
                    "2+",
                    default=-1,
                    since="2.1.0",
                    note="-1 = unknown",
                ),
                F(
                    "members",
                    "[]MemberMetadata",
                    "0+",
                    fields=(
                        F("memberId", "string", "0+", since="0.9.0.0"),
                        F(
                            "groupInstanceId",
                            "string",
                            "3+",
                            nullable="3+",
                            default=None,
                            since="2.3.0",
                        ),
                        F("clientId", "string", "0+", since="0.9.0.0"),
                        F("clientHost", "string", "0+", since="0.9.0.0"),
                        F(
                            "rebalanceTimeout",
                            "int32",
                            "1+",
                            default=-1,
                            since="0.10.1.0",
                            note="absent (v0) or -1: Kafka uses sessionTimeout",
                        ),
                        F("sessionTimeout", "int32", "0+", since="0.9.0.0"),
                        F(
                            "subscription",
                            "bytes",
                            "0+",
                            since="0.9.0.0",
                            note="ConsumerProtocolSubscription when protocolType == 'consumer'",
                        ),
                        F(
                            "assignment",
                            "bytes",
                            "0+",
                            since="0.9.0.0",
                            note="ConsumerProtocolAssignment when 'consumer'; may be empty",
                        ),
                    ),
                    since="0.9.0.0",
                    note="empty array for an empty group",
                ),
            ),
        ),
    ),
)
