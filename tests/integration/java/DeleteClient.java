// DeleteClient: the Java AdminClient's deletes, for kadmit's protected-topics
// tests (tests/integration/test_guardrails_protect.py) and frame captures
// (tests/tools/capture_delete_frames.sh).
//
//   java DeleteClient PROPS names TOPIC...     deleteTopics by name
//   java DeleteClient PROPS ids TOPIC...       looks each topic's id up, then deleteTopics by id
//
// Prints one line per topic: "RESULT topic OK" or "RESULT topic ERROR ExceptionClass: message".
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.Uuid;

public class DeleteClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: DeleteClient PROPS names|ids TOPIC...");
            System.exit(1);
        }
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        List<String> topics = Arrays.asList(args).subList(2, args.length);
        try (Admin admin = Admin.create(props)) {
            if (args[1].equals("ids"))
                byIds(admin, topics);
            else
                byNames(admin, topics);
        }
    }

    static void report(String topic, KafkaFuture<Void> f) throws InterruptedException {
        try {
            f.get();
            System.out.println("RESULT " + topic + " OK");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.out.println("RESULT " + topic + " ERROR " + c.getClass().getSimpleName() + ": "
                               + c.getMessage());
        }
    }

    static void byNames(Admin admin, List<String> topics) throws Exception {
        Map<String, KafkaFuture<Void>> r =
            admin.deleteTopics(TopicCollection.ofTopicNames(topics)).topicNameValues();
        for (String t : topics)
            report(t, r.get(t));
    }

    static void byIds(Admin admin, List<String> topics) throws Exception {
        Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get();
        List<Uuid> ids = new ArrayList<>();
        for (String t : topics)
            ids.add(d.get(t).topicId());
        Map<Uuid, KafkaFuture<Void>> r =
            admin.deleteTopics(TopicCollection.ofTopicIds(ids)).topicIdValues();
        for (int i = 0; i < topics.size(); i++)
            report(topics.get(i), r.get(ids.get(i)));
    }
}
