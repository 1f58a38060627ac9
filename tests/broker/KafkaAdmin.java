// Kafka's own Java Admin client for what confluent-kafka 2.16 lacks, one JSON line per result:
//   describe BOOTSTRAP GROUP...            group/member epochs of KIP-848 groups and the exact
//                                          state (librdkafka says UNKNOWN for Assigning/Reconciling)
//   delete-offsets BOOTSTRAP GROUP/TOPIC:PARTITION...   OffsetDelete, Kafka's error name per partition
//   offsets BOOTSTRAP GROUP...             OffsetFetch (exact metadata: librdkafka reads it as a
//                                          C string). require_stable stays with librdkafka: the
//                                          Java client retries UNSTABLE_OFFSET_COMMIT until timeout
// Run with the single-file source launcher: java -cp '<kafka jars>/*' tests/broker/KafkaAdmin.java
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;

public class KafkaAdmin {
    static String str(Object value) {
        if (value == null) return "null";
        if (value instanceof Integer || value instanceof Boolean) return value.toString();
        StringBuilder s = new StringBuilder("\"");
        for (char c : value.toString().toCharArray()) {
            if (c == '"' || c == '\\') s.append('\\').append(c);
            else if (c < 0x20 || c == 0x7f) s.append(String.format("\\u%04x", (int) c));
            else s.append(c);
        }
        return s.append('"').toString();
    }

    static String opt(Optional<?> value) {
        return str(value.orElse(null));
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        List<String> items = new ArrayList<>(List.of(args).subList(2, args.length));
        try (Admin admin = Admin.create(props)) {
            if (args[0].equals("delete-offsets")) {
                deleteOffsets(admin, items);
            } else if (args[0].equals("offsets")) {
                offsets(admin, items, false);
            } else {
                describe(admin, items);
            }
        }
    }

    // OffsetFetch per group, without and with require_stable (KIP-447).
    static void offsets(Admin admin, List<String> groups, boolean requireStable) {
        for (String group : groups) {
            String head = "{\"group\": " + str(group) + ", \"require_stable\": " + requireStable;
            try {
                var options = new ListConsumerGroupOffsetsOptions().requireStable(requireStable);
                Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(group, options).partitionsToOffsetAndMetadata().get();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    OffsetAndMetadata o = e.getValue();
                    if (o == null) continue;
                    System.out.println(head + ", \"topic\": " + str(e.getKey().topic())
                        + ", \"partition\": " + e.getKey().partition() + ", \"offset\": " + o.offset()
                        + ", \"leader_epoch\": " + opt(o.leaderEpoch())
                        + ", \"metadata\": " + str(o.metadata()) + "}");
                }
            } catch (Exception e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                System.out.println(head + ", \"error\": " + str(Errors.forException(cause).name()) + "}");
            }
        }
    }

    static void deleteOffsets(Admin admin, List<String> items) throws Exception {
        Map<String, Set<TopicPartition>> requests = new LinkedHashMap<>();
        for (String item : items) {
            int slash = item.lastIndexOf('/'), colon = item.lastIndexOf(':');
            TopicPartition tp = new TopicPartition(
                item.substring(slash + 1, colon), Integer.parseInt(item.substring(colon + 1)));
            requests.computeIfAbsent(item.substring(0, slash), g -> new LinkedHashSet<>()).add(tp);
        }
        for (Map.Entry<String, Set<TopicPartition>> request : requests.entrySet()) {
            var result = admin.deleteConsumerGroupOffsets(request.getKey(), request.getValue());
            for (TopicPartition tp : request.getValue()) {
                String error = null;
                try {
                    result.partitionResult(tp).get();
                } catch (Exception e) {
                    error = Errors.forException(e.getCause() == null ? e : e.getCause()).name();
                }
                System.out.println("{\"group\": " + str(request.getKey()) + ", \"topic\": "
                    + str(tp.topic()) + ", \"partition\": " + tp.partition()
                    + ", \"error\": " + str(error) + "}");
            }
        }
    }

    static void describe(Admin admin, List<String> groups) throws Exception {
        Map<String, GroupType> types = new LinkedHashMap<>();
        for (GroupListing listing : admin.listGroups().all().get()) {
            listing.type().ifPresent(type -> types.put(listing.groupId(), type));
        }
        for (String group : groups) {
            StringBuilder out = new StringBuilder("{\"group\": " + str(group));
            GroupType type = types.getOrDefault(group, GroupType.CLASSIC);
            try {
                if (type == GroupType.STREAMS) {
                    StreamsGroupDescription d =
                        admin.describeStreamsGroups(List.of(group)).describedGroups().get(group).get();
                    head(out, type, d.groupState(), d.groupEpoch(), d.targetAssignmentEpoch());
                    String sep = "";
                    for (StreamsGroupMemberDescription m : d.members()) {
                        out.append(sep).append(member(m.memberId(), m.memberEpoch(), null));
                        sep = ", ";
                    }
                } else if (type == GroupType.SHARE) {
                    ShareGroupDescription d =
                        admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
                    head(out, type, d.groupState(), d.groupEpoch(), d.targetAssignmentEpoch());
                    String sep = "";
                    for (ShareMemberDescription m : d.members()) {
                        out.append(sep).append(member(m.consumerId(), m.memberEpoch(), null));
                        sep = ", ";
                    }
                } else {
                    ConsumerGroupDescription d =
                        admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
                    head(out, d.type(), d.groupState(), d.groupEpoch().orElse(null),
                        d.targetAssignmentEpoch().orElse(null));
                    String sep = "";
                    for (MemberDescription m : d.members()) {
                        out.append(sep).append(
                            member(m.consumerId(), m.memberEpoch().orElse(null), m.upgraded().orElse(null)));
                        sep = ", ";
                    }
                }
                out.append("]");
            } catch (Exception e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                out.append(", \"error\": ").append(str(Errors.forException(cause).name()));
            }
            System.out.println(out.append("}"));
        }
    }

    static void head(StringBuilder out, GroupType type, GroupState state, Integer epoch, Integer target) {
        out.append(", \"type\": ").append(str(type));
        out.append(", \"state\": ").append(str(state));
        out.append(", \"group_epoch\": ").append(str(epoch));
        out.append(", \"target_assignment_epoch\": ").append(str(target));
        out.append(", \"members\": [");
    }

    static String member(String id, Integer epoch, Boolean upgraded) {
        return "{\"member_id\": " + str(id) + ", \"member_epoch\": " + str(epoch)
            + ", \"upgraded\": " + str(upgraded) + "}";
    }
}
