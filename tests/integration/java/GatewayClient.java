// GatewayClient: the Java clients through a kadmit gateway, for tests/integration/test_gateway*.py.
// Each command prints one result line the test parses:
//
//   GatewayClient create   BOOTSTRAP TOPIC PARTITIONS RF   -> RESULT OK | RESULT ERROR code=N Class: message
//   GatewayClient describe BOOTSTRAP                       -> NODE id host:port (one a broker), CONTROLLER id
//   GatewayClient produce  BOOTSTRAP TOPIC COUNT           -> PRODUCED COUNT
//   GatewayClient consume  BOOTSTRAP TOPIC GROUP COUNT classic|consumer -> CONSUMED COUNT
//   GatewayClient txn      BOOTSTRAP TOPIC TXID COUNT      -> COMMITTED COUNT (then aborts COUNT more)
//   GatewayClient readcommitted BOOTSTRAP TOPIC GROUP COUNT -> CONSUMED COUNT (read_committed)
//
// Extra client properties come from the environment: GW_CLIENT_PROPS, one k=v a line (TLS, SASL).
import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GatewayClient {
    static Properties base(String bootstrap) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", "30000");
        String extra = System.getenv("GW_CLIENT_PROPS");
        if (extra != null) {
            for (String kv : extra.split("\n")) {
                int eq = kv.indexOf('=');
                if (eq > 0)
                    props.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        return props;
    }

    static int consume(Properties props, String topic, int want) {
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("auto.offset.reset", "earliest");
        int got = 0;
        long deadline = System.currentTimeMillis() + 90000;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.subscribe(Collections.singleton(topic));
            while (got < want && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                got += rs.count();
            }
            c.commitSync();
        }
        return got;
    }

    public static void main(String[] args) throws Exception {
        String cmd = args[0];
        Properties props = base(args[1]);
        switch (cmd) {
        case "create":
            try (Admin admin = Admin.create(props)) {
                NewTopic t = new NewTopic(args[2], Integer.parseInt(args[3]), Short.parseShort(args[4]));
                admin.createTopics(Collections.singleton(t)).all().get();
                System.out.println("RESULT OK");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                System.out.println("RESULT ERROR code=" + Errors.forException(c).code() + " "
                                   + c.getClass().getSimpleName() + ": " + c.getMessage());
            }
            break;
        case "describe":
            try (Admin admin = Admin.create(props)) {
                DescribeClusterResult r = admin.describeCluster();
                for (Node n : r.nodes().get())
                    System.out.println("NODE " + n.id() + " " + n.host() + ":" + n.port());
                System.out.println("CONTROLLER " + r.controller().get().id());
            }
            break;
        case "produce": {
            props.put("key.serializer", StringSerializer.class.getName());
            props.put("value.serializer", StringSerializer.class.getName());
            props.put("acks", "all");
            int n = Integer.parseInt(args[3]);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
                for (int i = 0; i < n; i++)
                    p.send(new ProducerRecord<>(args[2], "k" + i, "java-" + i)).get();
            }
            System.out.println("PRODUCED " + n);
            break;
        }
        case "consume":
            props.put("group.id", args[3]);
            props.put("group.protocol", args[5]);
            System.out.println("CONSUMED " + consume(props, args[2], Integer.parseInt(args[4])));
            break;
        case "txn": {
            props.put("key.serializer", StringSerializer.class.getName());
            props.put("value.serializer", StringSerializer.class.getName());
            props.put("transactional.id", args[3]);
            int n = Integer.parseInt(args[4]);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
                p.initTransactions();
                p.beginTransaction();
                for (int i = 0; i < n; i++)
                    p.send(new ProducerRecord<>(args[2], "t" + i, "committed-" + i));
                p.commitTransaction();
                p.beginTransaction();
                for (int i = 0; i < n; i++)
                    p.send(new ProducerRecord<>(args[2], "a" + i, "aborted-" + i));
                p.abortTransaction();
            }
            System.out.println("COMMITTED " + n);
            break;
        }
        case "readcommitted":
            props.put("group.id", args[3]);
            props.put("isolation.level", "read_committed");
            System.out.println("CONSUMED " + consume(props, args[2], Integer.parseInt(args[4])));
            break;
        default:
            System.err.println("unknown command " + cmd);
            System.exit(2);
        }
    }
}
