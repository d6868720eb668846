// A tiny real-Java-client peer for tests/interop/java5.rs and java49.rs, compiled at test time with javac against the
// rocketmq-client classpath fetched by tests/peers/fetch.sh (the same source builds against 4.9.x and 5.x).
// The name server list is given explicitly, so nothing is looked up over HTTP, except by route-via-domain, which
// sets none and lets the client fetch the list from the address server named by -Drocketmq.namesrv.domain.
//
//   java InteropClient produce NAMESRV TOPIC COUNT PREFIX       -> "SENT <i> <msgId> <brokerName>" per message,
//                                                                  "RETRY ..." per retry, "RETRIES <early> <late>", "OK"
//   java InteropClient consume NAMESRV TOPIC GROUP COUNT PREFIX TIMEOUT_SECONDS
//                                                               -> "RECV <body>" per distinct body, "OK"
//   java InteropClient route NAMESRV TOPIC                      -> "QUEUE <brokerName> <queueId>" per queue, "OK"
//   java InteropClient route-via-domain TOPIC                   -> the same, name servers from the address server
// Exit status 0 only when everything succeeded; otherwise "FAIL <reason>" and status 1.
//
// Retries (produce). A send that fails is tried again, 500 ms later, up to MAX_ATTEMPTS times in all. A retry can
// hide an intermittent wrong route, so none is silent: each one prints
//   RETRY <i> <attempt> <early|late> <reason>
// and produce ends (also when it fails) with
//   RETRIES <early> <late>
// early = retries before this process's first successful send (legitimate only while a route appears: the first
// lookup went to a name server that was just killed or restarted); late = retries after a send had worked, i.e. a
// route that worked and then failed: never legitimate. The test that runs the program judges the counts
// (tests/support/proc.rs, RetryBudget; the rule is in docs/interop.md, "Retries"). The client's own resend
// (retryTimesWhenSendFailed, 2 by default) is turned off, so that every failed attempt passes through this count.

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class InteropClient {
    public static void main(String[] args) throws Exception {
        try {
            if (args.length >= 5 && args[0].equals("produce")) {
                produce(args[1], args[2], Integer.parseInt(args[3]), args[4]);
            } else if (args.length >= 7 && args[0].equals("consume")) {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5], Integer.parseInt(args[6]));
            } else if (args.length >= 3 && args[0].equals("route")) {
                route(args[1], args[2]);
            } else if (args.length >= 2 && args[0].equals("route-via-domain")) {
                route(null, args[1]);
            } else {
                fail("usage: produce NS TOPIC COUNT PREFIX | consume NS TOPIC GROUP COUNT PREFIX TIMEOUT_S"
                    + " | route NS TOPIC | route-via-domain TOPIC");
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

    // The route lookup a producer makes before its first send (GET_ROUTEINFO_BY_TOPIC through MQClientAPIImpl).
    static void route(String ns, String topic) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("interop_route_pg");
        // null: no list of our own, so that start() asks the address server for it.
        if (ns != null) {
            p.setNamesrvAddr(ns);
        }
        p.setInstanceName("interop-route-" + System.nanoTime());
        p.start();
        try {
            for (org.apache.rocketmq.common.message.MessageQueue q : p.fetchPublishMessageQueues(topic)) {
                System.out.println("QUEUE " + q.getBrokerName() + " " + q.getQueueId());
            }
        } finally {
            p.shutdown();
        }
    }

    static final int MAX_ATTEMPTS = 20;

    static void produce(String ns, String topic, int count, String prefix) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("interop_pg_" + prefix);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-producer-" + prefix + "-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setRetryTimesWhenSendFailed(0);
        int early = 0;
        int late = 0;
        boolean sentOne = false;
        p.start();
        try {
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, "interop", (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = null;
                Exception last = null;
                for (int attempt = 1; ; attempt++) {
                    String why;
                    try {
                        r = p.send(m);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            break;
                        }
                        why = "status " + r.getSendStatus();
                    } catch (Exception e) {
                        last = e;
                        why = e.toString();
                    }
                    if (attempt >= MAX_ATTEMPTS) {
                        break;
                    }
                    if (sentOne) {
                        late++;
                    } else {
                        early++;
                    }
                    System.out.println("RETRY " + i + " " + attempt + " " + (sentOne ? "late " : "early ")
                        + why.replace('\n', ' '));
                    Thread.sleep(500);
                }
                if (r == null || r.getSendStatus() != SendStatus.SEND_OK) {
                    throw new RuntimeException("send " + i + " failed: " + r, last);
                }
                sentOne = true;
                System.out.println("SENT " + i + " " + r.getMsgId() + " " + r.getMessageQueue().getBrokerName());
            }
        } finally {
            System.out.println("RETRIES " + early + " " + late);
            p.shutdown();
        }
    }

    static void consume(String ns, String topic, String group, int count, String prefix, int timeoutS)
            throws Exception {
        final Set<String> seen = new HashSet<>();
        final CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-consumer-" + group + "-" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            synchronized (seen) {
                for (MessageExt m : msgs) {
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    if (body.startsWith(prefix + "-") && seen.add(body)) {
                        System.out.println("RECV " + body);
                        if (seen.size() == count) {
                            done.countDown();
                        }
                    }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean ok = done.await(timeoutS, TimeUnit.SECONDS);
        int n;
        synchronized (seen) {
            n = seen.size();
        }
        c.shutdown();
        if (!ok) {
            throw new RuntimeException("received " + n + " of " + count + " messages in " + timeoutS + " s");
        }
    }
}
