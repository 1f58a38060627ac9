"""Record types 17-23: KIP-1071 streams groups (type 18 existed on trunk only).

Table data, one `R(...)` per record type; edit here to follow a new Kafka release.
"""

from offsets_lib.wire.layout_types import F, K, M, R

_TASKS = (
    F("SubtopologyId", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)
"""Struct TaskIds of the target assignment (StreamsGroupTargetAssignmentMemberValue)."""

_TASKS_WITH_EPOCHS = (
    *_TASKS,
    F(
        "AssignmentEpochs",
        "[]int32",
        "0+",
        nullable="0+",
        tag=0,
        tagged="0+",
        default=None,
        since="4.2.0",
    ),
)
"""Struct TaskIds of the current assignment (StreamsGroupCurrentMemberAssignmentValue)."""

TABLE = (
    R(
        17,
        "StreamsGroupMetadata",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupMetadataKey", "GroupId"),
        value=M(
            "StreamsGroupMetadataValue",
            "0",
            "0+",
            fields=(
                F("Epoch", "int32", "0+"),
                F("MetadataHash", "int64", "0+"),
                F(
                    "ValidatedTopologyEpoch",
                    "int32",
                    "0+",
                    tag=0,
                    tagged="0+",
                    default=-1,
                    since="4.2.0",
                ),
                F(
                    "LastAssignmentConfigs",
                    "[]LastAssignmentConfig",
                    "0+",
                    nullable="0+",
                    tag=1,
                    tagged="0+",
                    default=None,
                    fields=(
                        F("Key", "string", "0+"),
                        F("Value", "string", "0+"),
                    ),
                    since="4.2.0",
                ),
                F(
                    "StoredDescriptionTopologyEpoch",
                    "int32",
                    "0+",
                    tag=2,
                    tagged="0+",
                    default=-1,
                    since="4.4.0",
                ),
                F(
                    "FailedDescriptionTopologyEpoch",
                    "int32",
                    "0+",
                    tag=3,
                    tagged="0+",
                    default=-1,
                    since="4.4.0",
                ),
            ),
        ),
    ),
    R(
        18,
        "StreamsGroupPartitionMetadata",
        since="never released (existed on trunk Dec 2024 - Jun 2025)",
        status="removed; current brokers treat type 18 as unknown and skip it",
        key=K("StreamsGroupPartitionMetadataKey", "GroupId"),
        value=M(
            "StreamsGroupPartitionMetadataValue",
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
                    ),
                ),
            ),
        ),
    ),
    R(
        19,
        "StreamsGroupMemberMetadata",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupMemberMetadataKey", "GroupId", "MemberId"),
        value=M(
            "StreamsGroupMemberMetadataValue",
            "0",
            "0+",
            fields=(
                F("InstanceId", "string", "0+", nullable="0+"),
                F("RackId", "string", "0+", nullable="0+"),
                F("ClientId", "string", "0+"),
                F("ClientHost", "string", "0+"),
                F("RebalanceTimeoutMs", "int32", "0+", default=-1),
                F("TopologyEpoch", "int32", "0+"),
                F("ProcessId", "string", "0+"),
                F(
                    "UserEndpoint",
                    "Endpoint",
                    "0+",
                    nullable="0+",
                    default=None,
                    fields=(
                        F("Host", "string", "0+"),
                        F("Port", "uint16", "0+"),
                    ),
                ),
                F(
                    "ClientTags",
                    "[]KeyValue",
                    "0+",
                    fields=(
                        F("Key", "string", "0+"),
                        F("Value", "string", "0+"),
                    ),
                ),
            ),
        ),
    ),
    R(
        20,
        "StreamsGroupTargetAssignmentMetadata",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupTargetAssignmentMetadataKey", "GroupId"),
        value=M(
            "StreamsGroupTargetAssignmentMetadataValue",
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
        21,
        "StreamsGroupTargetAssignmentMember",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
        value=M(
            "StreamsGroupTargetAssignmentMemberValue",
            "0",
            "0+",
            fields=(
                F("ActiveTasks", "[]TaskIds", "0+", fields=_TASKS),
                F("StandbyTasks", "[]TaskIds", "0+", fields=_TASKS),
                F("WarmupTasks", "[]TaskIds", "0+", fields=_TASKS),
            ),
        ),
    ),
    R(
        22,
        "StreamsGroupCurrentMemberAssignment",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
        value=M(
            "StreamsGroupCurrentMemberAssignmentValue",
            "0",
            "0+",
            fields=(
                F("MemberEpoch", "int32", "0+"),
                F("PreviousMemberEpoch", "int32", "0+"),
                F(
                    "State",
                    "int8",
                    "0+",
                    note="1 STABLE, 2 UNREVOKED_TASKS, 3 UNRELEASED_TASKS, 127 UNKNOWN",
                ),
                F("ActiveTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
                F("StandbyTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
                F("WarmupTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
                F("ActiveTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
                F("StandbyTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
                F("WarmupTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
            ),
        ),
    ),
    R(
        23,
        "StreamsGroupTopology",
        since="4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)",
        status="current",
        key=K("StreamsGroupTopologyKey", "GroupId"),
        value=M(
            "StreamsGroupTopologyValue",
            "0",
            "0+",
            fields=(
                F("Epoch", "int32", "0+"),
                F(
                    "Subtopologies",
                    "[]Subtopology",
                    "0+",
                    fields=(
                        F("SubtopologyId", "string", "0+"),
                        F("SourceTopics", "[]string", "0+"),
                        F("SourceTopicRegex", "[]string", "0+"),
                        F(
                            "StateChangelogTopics",
                            "[]TopicInfo",
                            "0+",
                            fields=(
                                F("Name", "string", "0+"),
                                F("Partitions", "int32", "0+"),
                                F("ReplicationFactor", "int16", "0+"),
                                F(
                                    "TopicConfigs",
                                    "[]TopicConfig",
                                    "0+",
                                    fields=(
                                        F("key", "string", "0+"),
                                        F("value", "string", "0+"),
                                    ),
                                ),
                            ),
                        ),
                        F("RepartitionSinkTopics", "[]string", "0+"),
                        F(
                            "RepartitionSourceTopics",
                            "[]TopicInfo",
                            "0+",
                            fields=(
                                F("Name", "string", "0+"),
                                F("Partitions", "int32", "0+"),
                                F("ReplicationFactor", "int16", "0+"),
                                F(
                                    "TopicConfigs",
                                    "[]TopicConfig",
                                    "0+",
                                    fields=(
                                        F("key", "string", "0+"),
                                        F("value", "string", "0+"),
                                    ),
                                ),
                            ),
                        ),
                        F(
                            "CopartitionGroups",
                            "[]CopartitionGroup",
                            "0+",
                            fields=(
                                F("SourceTopics", "[]int16", "0+"),
                                F("SourceTopicRegex", "[]int16", "0+"),
                                F("RepartitionSourceTopics", "[]int16", "0+"),
                            ),
                        ),
                    ),
                ),
            ),
        ),
    ),
)
