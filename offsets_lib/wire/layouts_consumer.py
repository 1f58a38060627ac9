"""Record types 3-8 and 16: KIP-848 consumer groups, with their 3.6-3.7 early-access layouts.

Table data, one `R(...)` per record type; edit here to follow a new Kafka release.
"""

from offsets_lib.wire.layout_types import F, K, M, R

TABLE = (
    R(
        3,
        "ConsumerGroupMetadata",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="current",
        key=K("ConsumerGroupMetadataKey", "GroupId"),
        value=M(
            "ConsumerGroupMetadataValue",
            "0",
            "0+",
            fields=(
                F("Epoch", "int32", "0+"),
                F("MetadataHash", "int64", "0+", tag=0, tagged="0+", default=0, since="4.1.0"),
            ),
        ),
    ),
    R(
        4,
        "ConsumerGroupPartitionMetadata",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="deprecated: since 4.1.0 written only as tombstones",
        key=K("ConsumerGroupPartitionMetadataKey", "GroupId"),
        value=M(
            "ConsumerGroupPartitionMetadataValue",
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
        historical=(
            M(
                "ConsumerGroupPartitionMetadataValue",
                "0",
                "0+",
                label="3.6-3.7 early access",
                fields=(
                    F("Epoch", "int32", "0+"),
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
    ),
    R(
        5,
        "ConsumerGroupMemberMetadata",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="current",
        key=K("ConsumerGroupMemberMetadataKey", "GroupId", "MemberId"),
        value=M(
            "ConsumerGroupMemberMetadataValue",
            "0",
            "0+",
            fields=(
                F("InstanceId", "string", "0+", nullable="0+"),
                F("RackId", "string", "0+", nullable="0+"),
                F("ClientId", "string", "0+"),
                F("ClientHost", "string", "0+"),
                F("SubscribedTopicNames", "[]string", "0+"),
                F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
                F("RebalanceTimeoutMs", "int32", "0+", default=-1),
                F("ServerAssignor", "string", "0+", nullable="0+"),
                F(
                    "ClassicMemberMetadata",
                    "ClassicMemberMetadata",
                    "0+",
                    nullable="0+",
                    tag=0,
                    tagged="0+",
                    default=None,
                    fields=(
                        F("SessionTimeoutMs", "int32", "0+"),
                        F(
                            "SupportedProtocols",
                            "[]ClassicProtocol",
                            "0+",
                            fields=(
                                F("Name", "string", "0+"),
                                F("Metadata", "bytes", "0+"),
                            ),
                        ),
                    ),
                    since="3.8.0",
                ),
            ),
        ),
        historical=(
            M(
                "ConsumerGroupMemberMetadataValue",
                "0",
                "0+",
                label="3.6-3.7 early access",
                fields=(
                    F("InstanceId", "string", "0+", nullable="0+"),
                    F("RackId", "string", "0+", nullable="0+"),
                    F("ClientId", "string", "0+"),
                    F("ClientHost", "string", "0+"),
                    F("SubscribedTopicNames", "[]string", "0+"),
                    F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
                    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
                    F("ServerAssignor", "string", "0+", nullable="0+"),
                    F(
                        "Assignors",
                        "[]Assignor",
                        "0+",
                        fields=(
                            F("Name", "string", "0+"),
                            F("MinimumVersion", "int16", "0+"),
                            F("MaximumVersion", "int16", "0+"),
                            F("Reason", "int8", "0+"),
                            F("Version", "int16", "0+"),
                            F("Metadata", "bytes", "0+"),
                        ),
                    ),
                ),
            ),
        ),
    ),
    R(
        6,
        "ConsumerGroupTargetAssignmentMetadata",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="current",
        key=K("ConsumerGroupTargetAssignmentMetadataKey", "GroupId"),
        value=M(
            "ConsumerGroupTargetAssignmentMetadataValue",
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
        7,
        "ConsumerGroupTargetAssignmentMember",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="current",
        key=K("ConsumerGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
        value=M(
            "ConsumerGroupTargetAssignmentMemberValue",
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
        historical=(
            M(
                "ConsumerGroupTargetAssignmentMemberValue",
                "0",
                "0+",
                label="3.6-3.7 early access",
                fields=(
                    F("Error", "int8", "0+"),
                    F(
                        "TopicPartitions",
                        "[]TopicPartition",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("Partitions", "[]int32", "0+"),
                        ),
                    ),
                    F("MetadataVersion", "int16", "0+"),
                    F("MetadataBytes", "bytes", "0+"),
                ),
            ),
        ),
    ),
    R(
        8,
        "ConsumerGroupCurrentMemberAssignment",
        since="3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)",
        status="current",
        key=K("ConsumerGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
        value=M(
            "ConsumerGroupCurrentMemberAssignmentValue",
            "0",
            "0+",
            fields=(
                F("MemberEpoch", "int32", "0+"),
                F("PreviousMemberEpoch", "int32", "0+"),
                F(
                    "State",
                    "int8",
                    "0+",
                    since="3.8.0",
                    note="0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN",
                ),
                F(
                    "AssignedPartitions",
                    "[]TopicPartitions",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("Partitions", "[]int32", "0+"),
                        F(
                            "AssignmentEpochs",
                            "[]int32",
                            "0+",
                            nullable="0+",
                            tag=0,
                            tagged="0+",
                            default=None,
                            since="4.3.0",
                            note="KIP-1251; same length as Partitions",
                        ),
                    ),
                ),
                F(
                    "PartitionsPendingRevocation",
                    "[]TopicPartitions",
                    "0+",
                    fields=(
                        F("TopicId", "uuid", "0+"),
                        F("Partitions", "[]int32", "0+"),
                        F(
                            "AssignmentEpochs",
                            "[]int32",
                            "0+",
                            nullable="0+",
                            tag=0,
                            tagged="0+",
                            default=None,
                            since="4.3.0",
                            note="KIP-1251; same length as Partitions",
                        ),
                    ),
                ),
            ),
        ),
        historical=(
            M(
                "ConsumerGroupCurrentMemberAssignmentValue",
                "0",
                "0+",
                label="3.6-3.7 early access",
                fields=(
                    F("MemberEpoch", "int32", "0+"),
                    F("PreviousMemberEpoch", "int32", "0+"),
                    F("TargetMemberEpoch", "int32", "0+"),
                    F(
                        "AssignedPartitions",
                        "[]TopicPartitions",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("Partitions", "[]int32", "0+"),
                        ),
                    ),
                    F(
                        "PartitionsPendingRevocation",
                        "[]TopicPartitions",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("Partitions", "[]int32", "0+"),
                        ),
                    ),
                    F(
                        "PartitionsPendingAssignment",
                        "[]TopicPartitions",
                        "0+",
                        fields=(
                            F("TopicId", "uuid", "0+"),
                            F("Partitions", "[]int32", "0+"),
                        ),
                    ),
                    F("Error", "int8", "0+"),
                    F("MetadataVersion", "int16", "0+"),
                    F("MetadataBytes", "bytes", "0+"),
                ),
            ),
        ),
    ),
    R(
        16,
        "ConsumerGroupRegularExpression",
        since="4.0.0",
        status="current",
        key=K("ConsumerGroupRegularExpressionKey", "GroupId", "RegularExpression"),
        value=M(
            "ConsumerGroupRegularExpressionValue",
            "0",
            "0+",
            fields=(
                F("Topics", "[]string", "0+"),
                F("Version", "int64", "0+"),
                F("Timestamp", "int64", "0+"),
            ),
        ),
    ),
)
