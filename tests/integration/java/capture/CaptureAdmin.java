/*
 * CaptureAdmin: drives the Kafka Java AdminClient through every admission API kadmit decodes, so
 * that tests/tools/record_frames.py (sitting between this client and the broker) can record real
 * frames. Compiled and run by tests/tools/capture_frames.sh against several kafka-clients
 * versions; it uses only API that exists from kafka-clients 2.4 to 4.x.
 *
 *   java -cp 'jars/*:classes' CaptureAdmin BOOTSTRAP PREFIX BROKER_ID
 *
 * Requests sent (the broker answers each): ApiVersions (connection setup), Metadata (listTopics,
 * the client's own metadata refresh), CreateTopics (one plain topic with configs, one with
 * explicit assignments, one validateOnly), CreatePartitions (with and without assignments),
 * AlterPartitionReassignments (a move to the same replicas and a cancel; the cancel's error is
 * expected), DescribeConfigs (a broker and a topic), IncrementalAlterConfigs (SET and DELETE).
 * Errors the broker returns are printed, not fatal: the frames are what matters. Exit status 1
 * means the client could not talk to the broker at all.
 */
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

public final class CaptureAdmin {
    private static int failures = 0;

    private interface Step {
        KafkaFuture<?> run();
    }

    /* Runs one admin call; a broker error is printed and counted, not thrown. */
    private static void step(String what, Step s) throws InterruptedException {
        try {
            Object v = s.run().get(30, TimeUnit.SECONDS);
            System.out.println("ok   " + what + (v == null ? "" : ": " + shorten(v.toString())));
        } catch (ExecutionException e) {
            failures++;
            System.out.println("err  " + what + ": " + e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            failures++;
            System.out.println("err  " + what + ": timed out");
        }
    }

    /* DescribeTopicsResult.allTopicNames() (3.1+), else all() (before 4.0). */
    private static KafkaFuture<?> allTopics(DescribeTopicsResult r) {
        for (String name : new String[] {"allTopicNames", "all"}) {
            try {
                return (KafkaFuture<?>) r.getClass().getMethod(name).invoke(r);
            } catch (ReflectiveOperationException e) {
                // try the next name
            }
        }
        throw new IllegalStateException("DescribeTopicsResult has neither allTopicNames nor all");
    }

    private static String shorten(String s) {
        return s.length() > 160 ? s.substring(0, 160) + "..." : s;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CaptureAdmin BOOTSTRAP PREFIX BROKER_ID");
            System.exit(2);
        }
        String bootstrap = args[0];
        String prefix = args[1];
        String brokerId = args[2];
        int broker = Integer.parseInt(brokerId);
        String plain = prefix + "-plain";
        String assigned = prefix + "-assigned";
        String dry = prefix + "-validate-only";

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kadmit-capture-" + prefix);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        props.put("default.api.timeout.ms", "30000"); // a constant only from 2.5 on

        try (Admin admin = Admin.create(props)) {
            try {
                System.out.println("ok   listTopics: " + admin.listTopics().names().get(30, TimeUnit.SECONDS));
            } catch (Exception e) {
                System.out.println("err  listTopics: " + e);
                System.exit(1);
            }

            Map<String, String> configs = new HashMap<>();
            configs.put("retention.ms", "86400000");
            configs.put("cleanup.policy", "delete");
            Map<Integer, List<Integer>> assignment = new HashMap<>();
            assignment.put(0, Collections.singletonList(broker));
            assignment.put(1, Collections.singletonList(broker));
            List<NewTopic> topics = Arrays.asList(
                    new NewTopic(plain, 2, (short) 1).configs(configs),
                    new NewTopic(assigned, assignment));
            step("createTopics " + plain + ", " + assigned,
                    () -> admin.createTopics(topics).all());
            step("createTopics validateOnly " + dry,
                    () -> admin.createTopics(
                            Collections.singletonList(new NewTopic(dry, 3, (short) 1)),
                            new CreateTopicsOptions().validateOnly(true)).all());

            Map<String, NewPartitions> more = new HashMap<>();
            more.put(plain, NewPartitions.increaseTo(3));
            more.put(assigned, NewPartitions.increaseTo(4,
                    Arrays.asList(Collections.singletonList(broker), Collections.singletonList(broker))));
            step("createPartitions", () -> admin.createPartitions(more).all());

            step("listTopics", () -> admin.listTopics().names());
            step("describeTopics", () -> allTopics(admin.describeTopics(Arrays.asList(plain, assigned))));

            Map<TopicPartition, Optional<NewPartitionReassignment>> move = new HashMap<>();
            move.put(new TopicPartition(plain, 0),
                    Optional.of(new NewPartitionReassignment(Collections.singletonList(broker))));
            move.put(new TopicPartition(assigned, 1),
                    Optional.of(new NewPartitionReassignment(Collections.singletonList(broker))));
            step("alterPartitionReassignments", () -> admin.alterPartitionReassignments(move).all());
            Map<TopicPartition, Optional<NewPartitionReassignment>> cancel = new HashMap<>();
            cancel.put(new TopicPartition(plain, 1), Optional.empty());
            step("alterPartitionReassignments cancel (error expected: none in progress)",
                    () -> admin.alterPartitionReassignments(cancel).all());

            ConfigResource brokerRes = new ConfigResource(ConfigResource.Type.BROKER, brokerId);
            ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, plain);
            step("describeConfigs broker+topic",
                    () -> admin.describeConfigs(Arrays.asList(brokerRes, topicRes)).all());

            Map<ConfigResource, Collection<AlterConfigOp>> ops = new HashMap<>();
            ops.put(topicRes, Arrays.asList(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("segment.bytes", "10485760"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", ""), AlterConfigOp.OpType.DELETE)));
            ops.put(brokerRes, Collections.singletonList(
                    new AlterConfigOp(new ConfigEntry("log.cleaner.threads", "2"), AlterConfigOp.OpType.SET)));
            step("incrementalAlterConfigs topic+broker", () -> admin.incrementalAlterConfigs(ops).all());
        }
        System.out.println(failures + " call(s) answered with an error");
    }
}
