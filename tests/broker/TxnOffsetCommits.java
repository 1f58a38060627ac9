// TxnOffsetCommits from Kafka's own transactional producer (sendOffsetsToTransaction), which
// sends TxnOffsetCommit v6 (KIP-1319) to a 4.4 broker; librdkafka does not. A consumer-protocol
// member of GROUP is assigned TOPIC's two partitions, then three producers (client ids
// CLIENT_PREFIX-current, -stale, -absent) commit offsets in a transaction:
//   current  the member's group metadata as its consumer gives it: partitions 0 and 1 at
//            offsets 12 and 13, the transaction committed
//   stale    the same member id with an epoch one below: partition 0 at offset 20
//   absent   GROUP-absent, which nobody created, with member epoch 1: partition 0 at offset 5
// One JSON line per case (the request's group, member, epoch, partition and the error the broker
// answered, Kafka's name or null), then READY; `keep` keeps the member until stdin closes.
//   BOOTSTRAP GROUP TOPIC CLIENT_PREFIX keep|once
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnOffsetCommits {
    // The producer reports a fenced commit as a CommitFailedException whose message carries the
    // error's own message: the error is the one whose message it contains (null = committed).
    static String errorName(Exception e) {
        String text = String.valueOf(e.getMessage());
        for (Errors error : Errors.values()) {
            if (error != Errors.NONE && error.exception() != null
                    && text.contains(error.exception().getMessage())) {
                return error.name();
            }
        }
        return "UNRECOGNISED: " + text;
    }

    static String commit(String bootstrap, String clientId, ConsumerGroupMetadata group,
                         Map<TopicPartition, OffsetAndMetadata> offsets) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, clientId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            producer.beginTransaction();
            try {
                producer.sendOffsetsToTransaction(offsets, group);
                producer.commitTransaction();
                return null;
            } catch (Exception e) {
                producer.abortTransaction();
                return errorName(e);
            }
        }
    }

    static void report(String name, ConsumerGroupMetadata group, TopicPartition tp, String error) {
        String member = group.memberId().replace("\"", "\\\"");
        System.out.println("{\"case\": \"" + name + "\", \"group\": \"" + group.groupId()
            + "\", \"member_id\": \"" + member + "\", \"member_epoch\": " + group.generationId()
            + ", \"topic\": \"" + tp.topic() + "\", \"partition\": " + tp.partition()
            + ", \"error\": " + (error == null ? "null" : "\"" + error + "\"") + "}");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], groupId = args[1], topic = args[2], prefix = args[3];
        boolean keep = args[4].equals("keep");
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, prefix + "-member");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.assignment().size() < 2) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no assignment");
                consumer.poll(Duration.ofMillis(100));
            }
            TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
            ConsumerGroupMetadata current = consumer.groupMetadata();
            Map<TopicPartition, OffsetAndMetadata> both = new LinkedHashMap<>();
            both.put(p0, new OffsetAndMetadata(12));
            both.put(p1, new OffsetAndMetadata(13));
            String error = commit(bootstrap, prefix + "-current", current, both);
            report("current", current, p0, error);
            report("current", current, p1, error);

            ConsumerGroupMetadata stale = new ConsumerGroupMetadata(
                groupId, current.generationId() - 1, current.memberId(), Optional.empty());
            error = commit(bootstrap, prefix + "-stale", stale, Map.of(p0, new OffsetAndMetadata(20)));
            report("stale", stale, p0, error);

            ConsumerGroupMetadata absent =
                new ConsumerGroupMetadata(groupId + "-absent", 1, "absent-member", Optional.empty());
            error = commit(bootstrap, prefix + "-absent", absent, Map.of(p0, new OffsetAndMetadata(5)));
            report("absent", absent, p0, error);

            System.out.println("READY");
            System.out.flush();
            if (keep) {
                Thread reader = new Thread(() -> {
                    try { while (System.in.read() != -1) { } } catch (Exception e) { }
                });
                reader.setDaemon(true);
                reader.start();
                while (reader.isAlive()) consumer.poll(Duration.ofMillis(200));
            }
        }
    }
}
