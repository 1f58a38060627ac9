// OffsetFetch by topic id: Kafka's own consumer of the consumer protocol (KIP-848) asks for its
// committed offsets naming each topic by the id in its metadata (OffsetFetch v10+), which
// librdkafka and the Java Admin client never do (they name topics). One JSON line per partition:
// the committed offset, or null when the broker has none for that topic id.
//   BOOTSTRAP GROUP CLIENT_ID TOPIC:PARTITION...
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class TopicIdFetch {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Set<TopicPartition> partitions = new LinkedHashSet<>();
        for (int i = 3; i < args.length; i++) {
            int colon = args[i].lastIndexOf(':');
            partitions.add(new TopicPartition(args[i].substring(0, colon),
                Integer.parseInt(args[i].substring(colon + 1))));
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(partitions);
            Map<TopicPartition, OffsetAndMetadata> committed =
                consumer.committed(partitions, Duration.ofSeconds(30));
            for (TopicPartition tp : partitions) {
                OffsetAndMetadata o = committed.get(tp);
                System.out.println("{\"topic\": \"" + tp.topic() + "\", \"partition\": " + tp.partition()
                    + ", \"offset\": " + (o == null ? "null" : Long.toString(o.offset())) + "}");
            }
        }
    }
}
