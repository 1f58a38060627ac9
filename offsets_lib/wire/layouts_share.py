"""Record types 9-15: KIP-932 share groups, with their 4.0 early-access layouts (type 9: 4.0 only).

Table data, one `R(...)` per record type; edit here to follow a new Kafka release.
"""

from offsets_lib.wire.layout_types import F, K, M, R

TABLE = (
    R(
        9,
        "ShareGroupPartitionMetadata",
        since="4.0.0 (KIP-932 early access; schema present in 3.9.0)",
        status="removed before 4.1.0; current brokers treat type 9 as unknown and skip it",
        key=K("ShareGroupPartitionMetadataKey", "GroupId"),
        value=M(
            "ShareGroupPartitionMetadataValue",
            "0",
            "0+",
            fields=(
                F(
                    "Topics",
                    "[]TopicMetadata",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("TopicName", "string", "0+"),
                        F("NumPartitions", "int32", "0+"),
                        F(
                            "PartitionMetadata",
                            "[]PartitionMetadata",
                            "0+",
                            fields=(
                                F("Partition", "int32", "0+"),
                                F("Racks", "[]string", "0+"),
                            ),
                        ),
                    ),
                ),
            ),
        ),
    ),
    R(
        10,
        "ShareGroupMemberMetadata",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupMemberMetadataKey", "GroupId", "MemberId"),
        value=M(
            "ShareGroupMemberMetadataValue",
            "0",
            "0+",
            fields=(
                F("RackId", "string", "0+", nullable="0+"),
                F("ClientId", "string", "0+"),
                F("ClientHost", "string", "0+"),
                F("SubscribedTopicNames", "[]string", "0+"),
            ),
        ),
    ),
    R(
        11,
        "ShareGroupMetadata",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupMetadataKey", "GroupId"),
        value=M(
            "ShareGroupMetadataValue",
            "0",
            "0+",
            fields=(
                F("Epoch", "int32", "0+"),
                F(
                    "MetadataHash",
                    "int64",
                    "0+",
                    since="4.1.0",
                    note="NOT tagged: 4.0 records lack it (see historicalLayouts)",
                ),
            ),
        ),
        historical=(
            M(
                "ShareGroupMetadataValue",
                "0",
                "0+",
                label="4.0 early access",
                fields=(F("Epoch", "int32", "0+"),),
            ),
        ),
    ),
    R(
        12,
        "ShareGroupTargetAssignmentMetadata",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupTargetAssignmentMetadataKey", "GroupId"),
        value=M(
            "ShareGroupTargetAssignmentMetadataValue",
            "0",
            "0+",
            fields=(
                F("AssignmentEpoch", "int32", "0+"),
                F(
                    "AssignmentTimestamp",
                    "int64",
                    "0+",
                    tag=0,
                    tagged="0+",
                    default=0,
                    since="4.3.0",
                ),
            ),
        ),
    ),
    R(
        13,
        "ShareGroupTargetAssignmentMember",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
        value=M(
            "ShareGroupTargetAssignmentMemberValue",
            "0",
            "0+",
            fields=(
                F(
                    "TopicPartitions",
                    "[]TopicPartition",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("Partitions", "[]int32", "0+"),
                    ),
                ),
            ),
        ),
    ),
    R(
        14,
        "ShareGroupCurrentMemberAssignment",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
        value=M(
            "ShareGroupCurrentMemberAssignmentValue",
            "0",
            "0+",
            fields=(
                F("MemberEpoch", "int32", "0+"),
                F("PreviousMemberEpoch", "int32", "0+"),
                F(
                    "State",
                    "int8",
                    "0+",
                    note="0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN",
                ),
                F(
                    "AssignedPartitions",
                    "[]TopicPartitions",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("Partitions", "[]int32", "0+"),
                    ),
                ),
            ),
        ),
    ),
    R(
        15,
        "ShareGroupStatePartitionMetadata",
        since="4.0.0 (KIP-932 early access)",
        status="current",
        key=K("ShareGroupStatePartitionMetadataKey", "GroupId"),
        value=M(
            "ShareGroupStatePartitionMetadataValue",
            "0",
            "0+",
            fields=(
                F(
                    "InitializingTopics",
                    "[]TopicPartitionsInfo",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("TopicName", "string", "0+"),
                        F("Partitions", "[]int32", "0+"),
                    ),
                    since="4.1.0",
                    note="NOT tagged: 4.0 records lack it (see historicalLayouts)",
                ),
                F(
                    "InitializedTopics",
                    "[]TopicPartitionsInfo",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("TopicName", "string", "0+"),
                        F("Partitions", "[]int32", "0+"),
                    ),
                ),
                F(
                    "DeletingTopics",
                    "[]TopicInfo",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("TopicName", "string", "0+"),
                    ),
                ),
            ),
        ),
        historical=(
            M(
                "ShareGroupStatePartitionMetadataValue",
                "0",
                "0+",
                label="4.0 early access",
                fields=(
                    F(
                        "InitializedTopics",
                        "[]TopicPartitionsInfo",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("TopicName", "string", "0+"),
                            F("Partitions", "[]int32", "0+"),
                        ),
                    ),
                    F(
                        "DeletingTopics",
                        "[]TopicInfo",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("TopicName", "string", "0+"),
                        ),
                    ),
                ),
            ),
        ),
    ),
)
