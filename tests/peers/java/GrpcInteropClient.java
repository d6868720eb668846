// A real gRPC client peer (rocketmq-client-java 5.0.x) for tests/interop/acl2.rs: it talks to a 5.x proxy only (the
// proxy asks the name server for routes), signing every request with StaticSessionCredentialsProvider(AK, SK), i.e.
// the `authorization: MQv2-HMAC-SHA1 ...` header the proxy checks against the cluster's users. Compiled at test time
// with javac against the fetched rocketmq-client-java jar (one shaded jar). Plain TCP (no TLS) to the proxy.
//
//   java GrpcInteropClient produce ENDPOINT TOPIC COUNT PREFIX AK SK
//       -> "SENT <i> <messageId>" per message, "RETRIES 0 0", "OK"
//   java GrpcInteropClient consume ENDPOINT TOPIC GROUP COUNT PREFIX TIMEOUT_SECONDS AK SK
//       -> "RECV <body>" per distinct body (each acknowledged), "OK"
// Otherwise "FAIL <reason>" and exit status 1. The producer makes one attempt per message (setMaxAttempts(1)), so
// nothing hides a failed send; it ends with the "RETRIES <early> <late>" line every producer program of tests/peers
// prints (always "RETRIES 0 0" here; docs/interop.md, "Retries").

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

public class GrpcInteropClient {
    public static void main(String[] args) {
        try {
            if (args.length == 7 && args[0].equals("produce")) {
                produce(config(args[1], args[5], args[6]), args[2], Integer.parseInt(args[3]), args[4]);
            } else if (args.length == 9 && args[0].equals("consume")) {
                consume(config(args[1], args[7], args[8]), args[2], args[3], Integer.parseInt(args[4]), args[5],
                    Integer.parseInt(args[6]));
            } else {
                fail("usage: produce ENDPOINT TOPIC COUNT PREFIX AK SK"
                    + " | consume ENDPOINT TOPIC GROUP COUNT PREFIX TIMEOUT_S AK SK");
            }
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            fail(t.toString());
        }
        System.out.println("OK");
        System.out.flush();
        System.exit(0);
    }

    static void fail(String why) {
        System.out.println("FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    static ClientConfiguration config(String endpoint, String accessKey, String secretKey) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setCredentialProvider(new StaticSessionCredentialsProvider(accessKey, secretKey))
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    static void produce(ClientConfiguration cfg, String topic, int count, String prefix) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer p = provider.newProducerBuilder()
            .setClientConfiguration(cfg)
            .setTopics(topic)
            .setMaxAttempts(1)
            .build();
        try {
            for (int i = 0; i < count; i++) {
                Message m = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setBody((prefix + "-" + i).getBytes(StandardCharsets.UTF_8))
                    .build();
                SendReceipt r = p.send(m);
                System.out.println("SENT " + i + " " + r.getMessageId());
            }
        } finally {
            System.out.println("RETRIES 0 0");
            p.close();
        }
    }

    static void consume(ClientConfiguration cfg, String topic, String group, int count, String prefix, int timeoutS)
            throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        SimpleConsumer c = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(cfg)
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .build();
        Set<String> seen = new HashSet<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(timeoutS).toNanos();
        try {
            while (seen.size() < count && System.nanoTime() < deadline) {
                List<MessageView> got = c.receive(16, Duration.ofSeconds(30));
                for (MessageView m : got) {
                    String body = StandardCharsets.UTF_8.decode(m.getBody()).toString();
                    if (body.startsWith(prefix + "-") && seen.add(body)) {
                        System.out.println("RECV " + body);
                    }
                    c.ack(m);
                }
            }
        } finally {
            c.close();
        }
        if (seen.size() < count) {
            throw new RuntimeException("received " + seen.size() + " of " + count + " messages in " + timeoutS + " s");
        }
    }
}
