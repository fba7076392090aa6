// AdmissionClient: a small Java AdminClient program for kadmit's admission
// integration tests (tests/integration/test_admission_e2e.py).
//
//   java AdmissionClient create BOOTSTRAP VALIDATE_ONLY NAME:PARTITIONS:RF ...
//
// Sends every topic in ONE createTopics call and prints, per topic in
// request order, "RESULT name OK" or "RESULT name ERROR ExceptionClass: message".
// Exit 0 whatever the per-topic results; 1 on a usage or connection error.
// -Dadmission.client.config=FILE adds client properties (SASL, client.id).
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;

public class AdmissionClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 4 || !args[0].equals("create")) {
            System.err.println("usage: AdmissionClient create BOOTSTRAP VALIDATE_ONLY NAME:P:RF ...");
            System.exit(1);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        String extra = System.getProperty("admission.client.config");
        if (extra != null) {
            try (java.io.FileInputStream in = new java.io.FileInputStream(extra)) {
                props.load(in);
            }
        }
        boolean validateOnly = Boolean.parseBoolean(args[2]);
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String[] f = args[i].split(":");
            topics.add(new NewTopic(f[0], Integer.parseInt(f[1]), Short.parseShort(f[2])));
        }
        try (Admin admin = Admin.create(props)) {
            CreateTopicsResult res =
                admin.createTopics(topics, new CreateTopicsOptions().validateOnly(validateOnly));
            Map<String, KafkaFuture<Void>> values = res.values();
            for (NewTopic t : topics) {
                try {
                    values.get(t.name()).get();
                    System.out.println("RESULT " + t.name() + " OK");
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    System.out.println("RESULT " + t.name() + " ERROR " + c.getClass().getSimpleName()
                                       + ": " + c.getMessage());
                }
            }
        }
    }
}
