"""Every layout the codec knows, as data (records.md sections 5-7 and 9).

`RECORD_TYPES` maps the int16 record type of a key to its `RecordType`; the embedded consumer
protocol payloads and the transaction control records are separate `Message`s. The codec is
driven only by this table: a new Kafka version is a table edit, never a parser change. One line
per field, in Kafka's own words (`F`/`M`/`R`/`K` of `layout_types`); formatting is off so that
each field stays on its line.
"""

from __future__ import annotations

from offsets_lib.wire.layout_types import (
    FIXED_WIDTH,
    NO_DEFAULT,
    ZERO_UUID,
    F,
    Field,
    K,
    M,
    Message,
    R,
    RecordType,
    in_range,
    parse_range,
)

__all__ = [
    "ASSIGNMENT",
    "CONTROL_KEY",
    "CONTROL_TYPES",
    "CONTROL_VALUE",
    "FIXED_WIDTH",
    "NO_DEFAULT",
    "RECORD_TYPES",
    "SUBSCRIPTION",
    "ZERO_UUID",
    "Field",
    "Message",
    "RecordType",
    "current_value",
    "in_range",
    "parse_range",
]

# fmt: off
# Structs that several records share (Kafka's definitions repeat them).
_TOPIC_PARTITIONS = (F("TopicId", "uuid", "0+"), F("Partitions", "[]int32", "0+"))
"""TopicId + Partitions (struct TopicPartition(s))"""
_TOPIC_PARTITIONS_WITH_EPOCHS = (
    F("TopicId", "uuid", "0+"),
    F("Partitions", "[]int32", "0+"),
    F("AssignmentEpochs", "[]int32", "0+", nullable="0+", tag=0, tagged="0+", default=None,
      since="4.3.0", note="KIP-1251; same length as Partitions"),
)
"""the consumer group's current assignment (struct TopicPartitions)"""
_MEMBER_METADATA = (
    F("InstanceId", "string", "0+", nullable="0+"),
    F("RackId", "string", "0+", nullable="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", "[]string", "0+"),
    F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("ServerAssignor", "string", "0+", nullable="0+"),
)
"""The fields a KIP-848 member's metadata has had since 3.6 (type 5, both layouts)."""
_TOPIC_METADATA = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("NumPartitions", "int32", "0+"),
    F("PartitionMetadata", "[]PartitionMetadata", "0+", fields=(
        F("Partition", "int32", "0+"),
        F("Racks", "[]string", "0+"))),
)
"""struct TopicMetadata of the partition metadata records"""
_TOPIC_PARTITIONS_INFO = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)
"""struct TopicPartitionsInfo"""
_TOPIC_INFO = (F("TopicId", "uuid", "0+"), F("TopicName", "string", "0+"))
"""struct TopicInfo"""
_TASKS = (F("SubtopologyId", "string", "0+"), F("Partitions", "[]int32", "0+"))
"""struct TaskIds of the target assignment"""
_TASKS_WITH_EPOCHS = (
    F("SubtopologyId", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
    F("AssignmentEpochs", "[]int32", "0+", nullable="0+", tag=0, tagged="0+", default=None,
      since="4.2.0"),
)
"""struct TaskIds of the current assignment"""
_TARGET_ASSIGNMENT_METADATA = (
    F("AssignmentEpoch", "int32", "0+"),
    F("AssignmentTimestamp", "int64", "0+", tag=0, tagged="0+", default=0, since="4.3.0"),
)
"""the target assignment's metadata value of every modern group type (6, 12, 20)"""
_KEY_VALUE = (F("Key", "string", "0+"), F("Value", "string", "0+"))
"""struct KeyValue / LastAssignmentConfig"""
_STREAMS_TOPIC_INFO = (
    F("Name", "string", "0+"),
    F("Partitions", "int32", "0+"),
    F("ReplicationFactor", "int16", "0+"),
    F("TopicConfigs", "[]TopicConfig", "0+", fields=(
        F("key", "string", "0+"),
        F("value", "string", "0+"))),
)
"""struct TopicInfo of a subtopology"""
_KIP_848 = "3.7.0 (KIP-848 early access; schema present since 3.5.0, GA in 4.0.0)"
_KIP_932 = "4.0.0 (KIP-932 early access)"
_KIP_1071 = "4.1.0 (KIP-1071 early access; records marked stable during 4.2.0 development)"

# fmt: off
RECORD_TYPES: dict[int, RecordType] = {rt.type: rt for rt in (
    # 0-2: offset commits and classic group metadata (records.md section 5)
    R(0, "LegacyOffsetCommit", since="0.8.2.0",
      status="legacy: only 0.8.2.x wrote type-0 keys; 0.9+ write type 1", value_from=1,
      key=M("LegacyOffsetCommitKey", "0", "none", fields=(
          F("group", "string", "0"),
          F("topic", "string", "0"),
          F("partition", "int32", "0"))),
      value=M("LegacyOffsetCommitValue", "0", "none", fields=(
          F("offset", "int64", "0", since="0.8.2.0"),
          F("metadata", "string", "0", since="0.8.2.0"),
          F("commitTimestamp", "int64", "0", since="0.8.2.0", note="named 'timestamp' in 0.8.2")))),
    R(1, "OffsetCommit", since="0.9.0.0", status="current",
      key=M("OffsetCommitKey", "0", "none", fields=(
          F("group", "string", "0"),
          F("topic", "string", "0"),
          F("partition", "int32", "0"))),
      value=M("OffsetCommitValue", "0-4", "4+", fields=(
          F("offset", "int64", "0+", since="0.8.2.0"),
          F("leaderEpoch", "int32", "3+", default=-1, since="2.1.0", note="-1 = unknown"),
          F("metadata", "string", "0+", since="0.8.2.0"),
          F("commitTimestamp", "int64", "0+", since="0.8.2.0", note="named 'timestamp' in v0"),
          F("expireTimestamp", "int64", "1", default=-1, since="0.9.0.0",
            note="only in v1; -1 = none"),
          F("topicId", "uuid", "4+", tag=0, tagged="4+", default=ZERO_UUID, since="4.1.0",
            note="all-zero = unknown; written only when the coordinator knows the topic id")))),
    R(2, "GroupMetadata", since="0.9.0.0", status="current",
      key=K("GroupMetadataKey", "group"),
      value=M("GroupMetadataValue", "0-4", "4+", fields=(
          F("protocolType", "string", "0+", since="0.9.0.0",
            note="empty string when the group has no protocol type yet"),
          F("generation", "int32", "0+", since="0.9.0.0"),
          F("protocol", "string", "0+", nullable="0+", since="0.9.0.0",
            note="0.9.0-0.10.0 declared it non-nullable; same bytes"),
          F("leader", "string", "0+", nullable="0+", since="0.9.0.0",
            note="0.9.0-0.10.0 declared it non-nullable; same bytes"),
          F("currentStateTimestamp", "int64", "2+", default=-1, since="2.1.0", note="-1 = unknown"),
          F("members", "[]MemberMetadata", "0+", since="0.9.0.0",
            note="empty array for an empty group", fields=(
              F("memberId", "string", "0+", since="0.9.0.0"),
              F("groupInstanceId", "string", "3+", nullable="3+", default=None, since="2.3.0"),
              F("clientId", "string", "0+", since="0.9.0.0"),
              F("clientHost", "string", "0+", since="0.9.0.0"),
              F("rebalanceTimeout", "int32", "1+", default=-1, since="0.10.1.0",
                note="absent (v0) or -1: Kafka uses sessionTimeout"),
              F("sessionTimeout", "int32", "0+", since="0.9.0.0"),
              F("subscription", "bytes", "0+", since="0.9.0.0",
                note="ConsumerProtocolSubscription when protocolType == 'consumer'"),
              F("assignment", "bytes", "0+", since="0.9.0.0",
                note="ConsumerProtocolAssignment when 'consumer'; may be empty")))))),
    # 3-8 and 16: KIP-848 consumer groups, with their 3.6-3.7 early-access layouts
    R(3, "ConsumerGroupMetadata", since=_KIP_848, status="current",
      key=K("ConsumerGroupMetadataKey", "GroupId"),
      value=M("ConsumerGroupMetadataValue", "0", "0+", fields=(
          F("Epoch", "int32", "0+"),
          F("MetadataHash", "int64", "0+", tag=0, tagged="0+", default=0, since="4.1.0")))),
    R(4, "ConsumerGroupPartitionMetadata", since=_KIP_848,
      status="deprecated: since 4.1.0 written only as tombstones",
      key=K("ConsumerGroupPartitionMetadataKey", "GroupId"),
      value=M("ConsumerGroupPartitionMetadataValue", "0", "0+",
        fields=(F("Topics", "[]TopicMetadata", "0+", fields=_TOPIC_METADATA),)),
      historical=(
        M("ConsumerGroupPartitionMetadataValue", "0", "0+", label="3.6-3.7 early access", fields=(
            F("Epoch", "int32", "0+"),
            F("Topics", "[]TopicMetadata", "0+", fields=_TOPIC_METADATA))),)),
    R(5, "ConsumerGroupMemberMetadata", since=_KIP_848, status="current",
      key=K("ConsumerGroupMemberMetadataKey", "GroupId", "MemberId"),
      value=M("ConsumerGroupMemberMetadataValue", "0", "0+", fields=(
          *_MEMBER_METADATA,
          F("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+", tag=0,
            tagged="0+", default=None, since="3.8.0", fields=(
              F("SessionTimeoutMs", "int32", "0+"),
              F("SupportedProtocols", "[]ClassicProtocol", "0+", fields=(
                  F("Name", "string", "0+"),
                  F("Metadata", "bytes", "0+"))))))),
      historical=(
        M("ConsumerGroupMemberMetadataValue", "0", "0+", label="3.6-3.7 early access", fields=(
            *_MEMBER_METADATA,
            F("Assignors", "[]Assignor", "0+", fields=(
                F("Name", "string", "0+"),
                F("MinimumVersion", "int16", "0+"),
                F("MaximumVersion", "int16", "0+"),
                F("Reason", "int8", "0+"),
                F("Version", "int16", "0+"),
                F("Metadata", "bytes", "0+"))))),)),
    R(6, "ConsumerGroupTargetAssignmentMetadata", since=_KIP_848, status="current",
      key=K("ConsumerGroupTargetAssignmentMetadataKey", "GroupId"),
      value=M("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
        fields=_TARGET_ASSIGNMENT_METADATA)),
    R(7, "ConsumerGroupTargetAssignmentMember", since=_KIP_848, status="current",
      key=K("ConsumerGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
      value=M("ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
        fields=(F("TopicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITIONS),)),
      historical=(
        M("ConsumerGroupTargetAssignmentMemberValue", "0", "0+", label="3.6-3.7 early access",
          fields=(
            F("Error", "int8", "0+"),
            F("TopicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITIONS),
            F("MetadataVersion", "int16", "0+"),
            F("MetadataBytes", "bytes", "0+"))),)),
    R(8, "ConsumerGroupCurrentMemberAssignment", since=_KIP_848, status="current",
      key=K("ConsumerGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
      value=M("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", fields=(
          F("MemberEpoch", "int32", "0+"),
          F("PreviousMemberEpoch", "int32", "0+"),
          F("State", "int8", "0+", since="3.8.0",
            note="0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN"),
          F("AssignedPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS_WITH_EPOCHS),
          F("PartitionsPendingRevocation", "[]TopicPartitions", "0+",
            fields=_TOPIC_PARTITIONS_WITH_EPOCHS))),
      historical=(
        M("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", label="3.6-3.7 early access",
          fields=(
            F("MemberEpoch", "int32", "0+"),
            F("PreviousMemberEpoch", "int32", "0+"),
            F("TargetMemberEpoch", "int32", "0+"),
            F("AssignedPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS),
            F("PartitionsPendingRevocation", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS),
            F("PartitionsPendingAssignment", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS),
            F("Error", "int8", "0+"),
            F("MetadataVersion", "int16", "0+"),
            F("MetadataBytes", "bytes", "0+"))),)),
    # 16: the consumer groups' resolved regular expressions (KIP-848)
    R(16, "ConsumerGroupRegularExpression", since="4.0.0", status="current",
      key=K("ConsumerGroupRegularExpressionKey", "GroupId", "RegularExpression"),
      value=M("ConsumerGroupRegularExpressionValue", "0", "0+", fields=(
          F("Topics", "[]string", "0+"),
          F("Version", "int64", "0+"),
          F("Timestamp", "int64", "0+")))),
    # 9-15: KIP-932 share groups, with their 4.0 early-access layouts (type 9: 4.0 only)
    R(9, "ShareGroupPartitionMetadata",
      since="4.0.0 (KIP-932 early access; schema present in 3.9.0)",
      status="removed before 4.1.0; current brokers treat type 9 as unknown and skip it",
      key=K("ShareGroupPartitionMetadataKey", "GroupId"),
      value=M("ShareGroupPartitionMetadataValue", "0", "0+",
        fields=(F("Topics", "[]TopicMetadata", "0+", fields=_TOPIC_METADATA),))),
    R(10, "ShareGroupMemberMetadata", since=_KIP_932, status="current",
      key=K("ShareGroupMemberMetadataKey", "GroupId", "MemberId"),
      value=M("ShareGroupMemberMetadataValue", "0", "0+", fields=(
          F("RackId", "string", "0+", nullable="0+"),
          F("ClientId", "string", "0+"),
          F("ClientHost", "string", "0+"),
          F("SubscribedTopicNames", "[]string", "0+")))),
    R(11, "ShareGroupMetadata", since=_KIP_932, status="current",
      key=K("ShareGroupMetadataKey", "GroupId"),
      value=M("ShareGroupMetadataValue", "0", "0+", fields=(
          F("Epoch", "int32", "0+"),
          F("MetadataHash", "int64", "0+", since="4.1.0",
            note="NOT tagged: 4.0 records lack it (see historicalLayouts)"))),
      historical=(
        M("ShareGroupMetadataValue", "0", "0+", label="4.0 early access",
          fields=(F("Epoch", "int32", "0+"),)),)),
    R(12, "ShareGroupTargetAssignmentMetadata", since=_KIP_932, status="current",
      key=K("ShareGroupTargetAssignmentMetadataKey", "GroupId"),
      value=M("ShareGroupTargetAssignmentMetadataValue", "0", "0+",
        fields=_TARGET_ASSIGNMENT_METADATA)),
    R(13, "ShareGroupTargetAssignmentMember", since=_KIP_932, status="current",
      key=K("ShareGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
      value=M("ShareGroupTargetAssignmentMemberValue", "0", "0+",
        fields=(F("TopicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITIONS),))),
    R(14, "ShareGroupCurrentMemberAssignment", since=_KIP_932, status="current",
      key=K("ShareGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
      value=M("ShareGroupCurrentMemberAssignmentValue", "0", "0+", fields=(
          F("MemberEpoch", "int32", "0+"),
          F("PreviousMemberEpoch", "int32", "0+"),
          F("State", "int8", "0+",
            note="0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN"),
          F("AssignedPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS)))),
    R(15, "ShareGroupStatePartitionMetadata", since=_KIP_932, status="current",
      key=K("ShareGroupStatePartitionMetadataKey", "GroupId"),
      value=M("ShareGroupStatePartitionMetadataValue", "0", "0+", fields=(
          F("InitializingTopics", "[]TopicPartitionsInfo", "0+", since="4.1.0",
            note="NOT tagged: 4.0 records lack it (see historicalLayouts)",
            fields=_TOPIC_PARTITIONS_INFO),
          F("InitializedTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
          F("DeletingTopics", "[]TopicInfo", "0+", fields=_TOPIC_INFO))),
      historical=(
        M("ShareGroupStatePartitionMetadataValue", "0", "0+", label="4.0 early access", fields=(
            F("InitializedTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
            F("DeletingTopics", "[]TopicInfo", "0+", fields=_TOPIC_INFO))),)),
    # 17-23: KIP-1071 streams groups (type 18 existed on trunk only)
    R(17, "StreamsGroupMetadata", since=_KIP_1071, status="current",
      key=K("StreamsGroupMetadataKey", "GroupId"),
      value=M("StreamsGroupMetadataValue", "0", "0+", fields=(
          F("Epoch", "int32", "0+"),
          F("MetadataHash", "int64", "0+"),
          F("ValidatedTopologyEpoch", "int32", "0+", tag=0, tagged="0+", default=-1, since="4.2.0"),
          F("LastAssignmentConfigs", "[]LastAssignmentConfig", "0+", nullable="0+", tag=1,
            tagged="0+", default=None, since="4.2.0", fields=_KEY_VALUE),
          F("StoredDescriptionTopologyEpoch", "int32", "0+", tag=2, tagged="0+", default=-1,
            since="4.4.0"),
          F("FailedDescriptionTopologyEpoch", "int32", "0+", tag=3, tagged="0+", default=-1,
            since="4.4.0")))),
    R(18, "StreamsGroupPartitionMetadata",
      since="never released (existed on trunk Dec 2024 - Jun 2025)",
      status="removed; current brokers treat type 18 as unknown and skip it",
      key=K("StreamsGroupPartitionMetadataKey", "GroupId"),
      value=M("StreamsGroupPartitionMetadataValue", "0", "0+", fields=(
          F("Topics", "[]TopicMetadata", "0+", fields=(
              F("TopicId", "uuid", "0+"),
              F("TopicName", "string", "0+"),
              F("NumPartitions", "int32", "0+"))),))),
    R(19, "StreamsGroupMemberMetadata", since=_KIP_1071, status="current",
      key=K("StreamsGroupMemberMetadataKey", "GroupId", "MemberId"),
      value=M("StreamsGroupMemberMetadataValue", "0", "0+", fields=(
          F("InstanceId", "string", "0+", nullable="0+"),
          F("RackId", "string", "0+", nullable="0+"),
          F("ClientId", "string", "0+"),
          F("ClientHost", "string", "0+"),
          F("RebalanceTimeoutMs", "int32", "0+", default=-1),
          F("TopologyEpoch", "int32", "0+"),
          F("ProcessId", "string", "0+"),
          F("UserEndpoint", "Endpoint", "0+", nullable="0+", default=None, fields=(
              F("Host", "string", "0+"),
              F("Port", "uint16", "0+"))),
          F("ClientTags", "[]KeyValue", "0+", fields=_KEY_VALUE)))),
    R(20, "StreamsGroupTargetAssignmentMetadata", since=_KIP_1071, status="current",
      key=K("StreamsGroupTargetAssignmentMetadataKey", "GroupId"),
      value=M("StreamsGroupTargetAssignmentMetadataValue", "0", "0+",
        fields=_TARGET_ASSIGNMENT_METADATA)),
    R(21, "StreamsGroupTargetAssignmentMember", since=_KIP_1071, status="current",
      key=K("StreamsGroupTargetAssignmentMemberKey", "GroupId", "MemberId"),
      value=M("StreamsGroupTargetAssignmentMemberValue", "0", "0+", fields=(
          F("ActiveTasks", "[]TaskIds", "0+", fields=_TASKS),
          F("StandbyTasks", "[]TaskIds", "0+", fields=_TASKS),
          F("WarmupTasks", "[]TaskIds", "0+", fields=_TASKS)))),
    R(22, "StreamsGroupCurrentMemberAssignment", since=_KIP_1071, status="current",
      key=K("StreamsGroupCurrentMemberAssignmentKey", "GroupId", "MemberId"),
      value=M("StreamsGroupCurrentMemberAssignmentValue", "0", "0+", fields=(
          F("MemberEpoch", "int32", "0+"),
          F("PreviousMemberEpoch", "int32", "0+"),
          F("State", "int8", "0+",
            note="1 STABLE, 2 UNREVOKED_TASKS, 3 UNRELEASED_TASKS, 127 UNKNOWN"),
          F("ActiveTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
          F("StandbyTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
          F("WarmupTasks", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
          F("ActiveTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
          F("StandbyTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS),
          F("WarmupTasksPendingRevocation", "[]TaskIds", "0+", fields=_TASKS_WITH_EPOCHS)))),
    R(23, "StreamsGroupTopology", since=_KIP_1071, status="current",
      key=K("StreamsGroupTopologyKey", "GroupId"),
      value=M("StreamsGroupTopologyValue", "0", "0+", fields=(
          F("Epoch", "int32", "0+"),
          F("Subtopologies", "[]Subtopology", "0+", fields=(
              F("SubtopologyId", "string", "0+"),
              F("SourceTopics", "[]string", "0+"),
              F("SourceTopicRegex", "[]string", "0+"),
              F("StateChangelogTopics", "[]TopicInfo", "0+", fields=_STREAMS_TOPIC_INFO),
              F("RepartitionSinkTopics", "[]string", "0+"),
              F("RepartitionSourceTopics", "[]TopicInfo", "0+", fields=_STREAMS_TOPIC_INFO),
              F("CopartitionGroups", "[]CopartitionGroup", "0+", fields=(
                  F("SourceTopics", "[]int16", "0+"),
                  F("SourceTopicRegex", "[]int16", "0+"),
                  F("RepartitionSourceTopics", "[]int16", "0+")))))))),
)}
"""Record type (int16 at the start of every key) -> layouts; types 0..23."""

# Embedded in GroupMetadataValue.members[].subscription / .assignment when protocolType is
# "consumer" (records.md section 6). Never flexible; newer versions parse as version 3.
SUBSCRIPTION = M("ConsumerProtocolSubscription", "0-3", "none", clamp_newer=True, fields=(
    F("Topics", "[]string", "0+", since="0.9.0.0"),
    F("UserData", "bytes", "0+", nullable="0+", default=None, since="0.9.0.0"),
    F("OwnedPartitions", "[]TopicPartition", "1+", since="2.4.0", note="KIP-429", fields=(
        F("Topic", "string", "1+"),
        F("Partitions", "[]int32", "1+"))),
    F("GenerationId", "int32", "2+", default=-1, since="3.4.0", note="KIP-792; -1 = none"),
    F("RackId", "string", "3+", nullable="3+", default=None, since="3.4.0", note="KIP-881")))

ASSIGNMENT = M("ConsumerProtocolAssignment", "0-3", "none", clamp_newer=True, fields=(
    F("AssignedPartitions", "[]TopicPartition", "0+", since="0.9.0.0", fields=(
        F("Topic", "string", "0+"),
        F("Partitions", "[]int32", "0+"))),
    F("UserData", "bytes", "0+", nullable="0+", default=None, since="0.9.0.0",
      note="versions 1-3 add nothing; they mirror the subscription version")))

# Transaction markers (records.md section 9): only in raw log segments, never in a consumer
# dump. Key = int16 version + int16 type; value of ABORT/COMMIT = int16 version + int32 epoch.
# Kafka parses higher versions as version 0.
CONTROL_KEY = M("ControlRecordKey", "0", "none", clamp_newer=True,
  fields=(F("type", "int16", "0+", note="0 ABORT, 1 COMMIT; 2-6 KRaft types"),))

CONTROL_VALUE = M("EndTxnMarker", "0", "none", clamp_newer=True,
  fields=(F("coordinatorEpoch", "int32", "0+"),))
# fmt: on

assert sorted(RECORD_TYPES) == list(range(24)), "record type table must cover 0..23"


def current_value(rt: RecordType) -> Message:
    """The value layout a record type's values are decoded with first (`value_from` for type 0,
    whose keys carry OffsetCommitValue of any version)."""
    return RECORD_TYPES[rt.value_from].value if rt.value_from is not None else rt.value


CONTROL_TYPES: dict[int, str] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
"""Control record type id -> name; only ABORT and COMMIT occur in `__consumer_offsets`."""
