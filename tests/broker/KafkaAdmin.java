// Kafka's own Java Admin client for what confluent-kafka 2.16 lacks, one JSON line per result:
//   describe BOOTSTRAP GROUP...            group/member epochs of KIP-848 groups and the exact
//                                          state (librdkafka says UNKNOWN for Assigning/Reconciling)
//   delete-offsets BOOTSTRAP GROUP/TOPIC:PARTITION...   OffsetDelete, Kafka's error name per partition
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
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.KafkaFuture;

public class KafkaAdmin {
    static String str(Object value) {
        if (value == null) return "null";
        if (value instanceof Integer || value instanceof Boolean) return value.toString();
        String s = value.toString().replace("\\", "\\\\").replace("\"", "\\\"");
        return "\"" + s + "\"";
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
            } else {
                describe(admin, items);
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
        {
            Map<String, KafkaFuture<ConsumerGroupDescription>> described =
                admin.describeConsumerGroups(groups).describedGroups();
            for (String group : groups) {
                StringBuilder out = new StringBuilder("{\"group\": " + str(group));
                try {
                    ConsumerGroupDescription d = described.get(group).get();
                    out.append(", \"type\": ").append(str(d.type()));
                    out.append(", \"state\": ").append(str(d.groupState()));
                    out.append(", \"group_epoch\": ").append(opt(d.groupEpoch()));
                    out.append(", \"target_assignment_epoch\": ").append(opt(d.targetAssignmentEpoch()));
                    out.append(", \"members\": [");
                    String sep = "";
                    for (MemberDescription m : d.members()) {
                        out.append(sep).append("{\"member_id\": ").append(str(m.consumerId()));
                        out.append(", \"member_epoch\": ").append(opt(m.memberEpoch()));
                        out.append(", \"upgraded\": ").append(opt(m.upgraded())).append("}");
                        sep = ", ";
                    }
                    out.append("]");
                } catch (Exception e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    out.append(", \"error\": ").append(str(Errors.forException(cause).name()));
                }
                System.out.println(out.append("}"));
            }
        }
    }
}
