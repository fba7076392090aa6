// ClientMatrix: the Java client (kafka-clients 2.8 to 4.x) through kadmit, for
// tests/integration/test_matrix_clients.py. Compiled against each version it tests.
//
//   ClientMatrix create  BOOTSTRAP TOPIC PARTITIONS   -> RESULT OK | RESULT ERROR code=N Class: message
//   ClientMatrix produce BOOTSTRAP TOPIC COUNT        -> PRODUCED COUNT
//   ClientMatrix consume BOOTSTRAP TOPIC GROUP COUNT [classic|consumer]  -> CONSUMED COUNT
//
// The rejection is printed as the client raises it: the exception class, the code that class
// stands for in this client version (Errors.forException), and its message.
import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientMatrix {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ClientMatrix create|produce|consume BOOTSTRAP TOPIC ARG...");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[1]);
        String topic = args[2];
        switch (args[0]) {
        case "create":
            props.put("request.timeout.ms", "30000");
            try (Admin admin = Admin.create(props)) {
                NewTopic t = new NewTopic(topic, Integer.parseInt(args[3]), (short) 1);
                admin.createTopics(Collections.singleton(t)).all().get();
                System.out.println("RESULT OK");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                System.out.println("RESULT ERROR code=" + Errors.forException(c).code() + " "
                                   + c.getClass().getSimpleName() + ": " + c.getMessage());
            }
            break;
        case "produce":
            props.put("key.serializer", StringSerializer.class.getName());
            props.put("value.serializer", StringSerializer.class.getName());
            props.put("acks", "all");
            int n = Integer.parseInt(args[3]);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(topic, "java-" + i)).get();
                }
            }
            System.out.println("PRODUCED " + n);
            break;
        case "consume":
            props.put("group.id", args[3]);
            props.put("key.deserializer", StringDeserializer.class.getName());
            props.put("value.deserializer", StringDeserializer.class.getName());
            props.put("auto.offset.reset", "earliest");
            props.put("enable.auto.commit", "false");
            if (args.length > 5) {
                props.put("group.protocol", args[5]);
            }
            int want = Integer.parseInt(args[4]);
            int got = 0;
            long deadline = System.currentTimeMillis() + 60000;
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
                c.subscribe(Collections.singleton(topic));
                while (got < want && System.currentTimeMillis() < deadline) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                    got += recs.count();
                }
                c.commitSync();
            }
            System.out.println("CONSUMED " + got);
            System.exit(got == want ? 0 : 1);
            break;
        default:
            System.err.println("unknown command " + args[0]);
            System.exit(2);
        }
    }
}
