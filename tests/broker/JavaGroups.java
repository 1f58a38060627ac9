// Kafka Streams (group.protocol=streams) and share-group members for tests/broker: groups that
// only Kafka's own Java clients can create. Prints READY once the member is working, then runs
// until its stdin closes (or, with `once`, stops at once and leaves the group).
//   streams BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR keep|once
//   share   BOOTSTRAP GROUP TOPIC keep|once
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public class JavaGroups {
    static void waitForStdinClose() throws Exception {
        while (System.in.read() != -1) { }
    }

    public static void main(String[] args) throws Exception {
        boolean keep = args[args.length - 1].equals("keep");
        if (args[0].equals("streams")) {
            Properties props = new Properties();
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
            props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
            props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
            props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
            StreamsBuilder builder = new StreamsBuilder();
            builder.stream(args[3]).to(args[4]);
            KafkaStreams streams = new KafkaStreams(builder.build(), props);
            streams.start();
            long deadline = System.currentTimeMillis() + 60_000;
            while (streams.state() != KafkaStreams.State.RUNNING) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not RUNNING");
                Thread.sleep(100);
            }
            Thread.sleep(2000); // a few commit intervals: the input offsets are committed
            System.out.println("READY");
            System.out.flush();
            if (keep) waitForStdinClose();
            streams.close(Duration.ofSeconds(20));
        } else {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
            try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
                consumer.subscribe(List.of(args[3]));
                // share.auto.offset.reset is `latest`: records produced before need not arrive;
                // a few seconds of polling is enough for the member to join and get partitions
                long deadline = System.currentTimeMillis() + 3_000;
                int received = 0;
                while (received == 0 && System.currentTimeMillis() < deadline) {
                    received = consumer.poll(Duration.ofMillis(200)).count();
                }
                consumer.commitSync();
                System.out.println("READY");
                System.out.flush();
                if (keep) {
                    AtomicBoolean closed = new AtomicBoolean();
                    Thread reader = new Thread(() -> {
                        try { waitForStdinClose(); } catch (Exception e) { }
                        closed.set(true);
                    });
                    reader.setDaemon(true);
                    reader.start();
                    while (!closed.get()) consumer.poll(Duration.ofMillis(200));
                }
            }
        }
    }
}
