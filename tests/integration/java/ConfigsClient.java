// ConfigsClient: the Java AdminClient's config calls, for kadmit's KIP-578
// configs tests (tests/integration/test_kip578_configs.py).
//
//   java ConfigsClient PROPS alter VALIDATE_ONLY BROKER OP:KEY[=VALUE] ...
//   java ConfigsClient PROPS describe BROKER
//
// PROPS is an AdminClient properties file (bootstrap, SASL). BROKER is a
// broker id or "" for the default entity, or topic:NAME for a topic. alter sends ONE
// incrementalAlterConfigs call (OP is SET, DELETE, APPEND or SUBTRACT) and
// prints "RESULT OK" or "RESULT ERROR ExceptionClass: message". describe
// sends describeConfigs with synonyms and prints, for each entry,
// "ENTRY name=value source=SOURCE sensitive=BOOL synonyms=SRC:VALUE,...".
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.config.ConfigResource;

public class ConfigsClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ConfigsClient PROPS alter|describe ...");
            System.exit(1);
        }
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        try (Admin admin = Admin.create(props)) {
            if (args[1].equals("alter"))
                alter(admin, Boolean.parseBoolean(args[2]), args[3], args);
            else
                describe(admin, args[2]);
        }
    }

    static void alter(Admin admin, boolean validateOnly, String broker, String[] args)
        throws Exception {
        ConfigResource res = resource(broker);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            String[] opKey = args[i].split(":", 2);
            String[] kv = opKey[1].split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv.length > 1 ? kv[1] : null),
                                      AlterConfigOp.OpType.valueOf(opKey[0])));
        }
        Map<ConfigResource, Collection<AlterConfigOp>> req = Map.of(res, ops);
        try {
            admin.incrementalAlterConfigs(req, new AlterConfigsOptions().validateOnly(validateOnly))
                .all()
                .get();
            System.out.println("RESULT OK");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.out.println("RESULT ERROR " + c.getClass().getSimpleName() + ": " + c.getMessage());
        }
    }

    static ConfigResource resource(String name) {
        if (name.startsWith("topic:"))
            return new ConfigResource(ConfigResource.Type.TOPIC, name.substring(6));
        return new ConfigResource(ConfigResource.Type.BROKER, name);
    }

    static void describe(Admin admin, String broker) throws Exception {
        ConfigResource res = resource(broker);
        Config config = admin.describeConfigs(List.of(res),
                                              new DescribeConfigsOptions().includeSynonyms(true))
                            .all()
                            .get()
                            .get(res);
        for (ConfigEntry e : config.entries()) {
            StringBuilder syn = new StringBuilder();
            for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                if (syn.length() > 0)
                    syn.append(',');
                syn.append(s.source()).append(':').append(s.value());
            }
            System.out.println("ENTRY " + e.name() + "=" + e.value() + " source=" + e.source()
                               + " sensitive=" + e.isSensitive() + " synonyms=" + syn);
        }
    }
}
