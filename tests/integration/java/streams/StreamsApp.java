// StreamsApp: a small Kafka Streams application for kadmit's back-door tests
// (tests/integration/test_back_doors.py).
//
//   java StreamsApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC GROUP_PROTOCOL SECONDS
//
// Counts the input's values by value: groupBy re-keys the stream (a repartition
// topic) and count keeps a store (a changelog topic), the two kinds of internal
// topic a streams group makes. GROUP_PROTOCOL is "streams" (KIP-1071: the broker
// creates those topics from the heartbeat's topology) or "classic" (the client
// creates them). Prints "STATE <state>" on each change and "ERROR <class>: <message>"
// for what stopped it, and runs until RUNNING, ERROR or SECONDS have passed. Exit 0
// whatever the outcome.
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

public class StreamsApp {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: StreamsApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC PROTOCOL SECONDS");
            System.exit(1);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[3]);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/" + args[1]);
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2]).groupBy((k, v) -> v).count();
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.RUNNING || now == KafkaStreams.State.ERROR)
                done.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            Throwable t = e;
            while (t.getCause() != null && t.getMessage() != null && !t.getMessage().contains("max."))
                t = t.getCause();
            System.out.println("ERROR " + t.getClass().getName() + ": " + t.getMessage());
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        done.await(Long.parseLong(args[4]), TimeUnit.SECONDS);
        streams.close(Duration.ofSeconds(10));
        System.out.println("CLOSED");
    }
}
