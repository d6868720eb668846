// A real-Java-client peer for tests/interop/acl.rs: the same producer and push consumer as InteropClient.java, but
// every client is built with the stock AclClientRPCHook (SessionCredentials ACCESS_KEY/SECRET_KEY), so every request
// it sends, the ones to the name server included, carries the AccessKey and Signature ext fields. Compiled at test
// time with javac against the fetched classpath: rocketmq-client (5.x, which holds org.apache.rocketmq.acl.common)
// or rocketmq-client + rocketmq-acl (4.9.x). The same source builds against both lines (`var` for the route type,
// whose package moved between them). The name server list is always given explicitly.
//
//   java AclInteropClient route   NS TOPIC AK SK
//       -> "QUEUE <brokerName> <queueId>" per writable queue, "PERM <brokerName> <perm>" per broker, "OK";
//          refused by the name server: "REFUSED <code> <remark>" and exit status 3
//   java AclInteropClient produce NS TOPIC COUNT PREFIX AK SK
//       -> "SENT <i> <msgId> <brokerName>" per message, "RETRIES 0 0", "OK"
//   java AclInteropClient consume NS TOPIC GROUP COUNT PREFIX TIMEOUT_SECONDS AK SK
//       -> "RECV <body>" per distinct body, "OK"
// Otherwise "FAIL <reason>" and exit status 1. No step is retried: a refused route lookup makes the first send fail.
// The client's own resend (retryTimesWhenSendFailed) is turned off too, so that nothing hides a failed send; produce
// still ends with the "RETRIES <early> <late>" line of InteropClient.java (always "RETRIES 0 0" here), so that the
// tests read every producer program alike (tests/support/proc.rs; docs/interop.md, "Retries").
//
// `route` calls MQClientAPIImpl.getTopicRouteInfoFromNameServer of a started producer, i.e. exactly the signed
// GET_ROUTEINFO_BY_TOPIC a producer sends before its first message, but without the producer's fallback to the
// default topic, so that the name server's answer code and remark reach the output.

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

public class AclInteropClient {
    public static void main(String[] args) throws Exception {
        try {
            if (args.length == 5 && args[0].equals("route")) {
                route(args[1], args[2], hook(args[3], args[4]));
            } else if (args.length == 7 && args[0].equals("produce")) {
                produce(args[1], args[2], Integer.parseInt(args[3]), args[4], hook(args[5], args[6]));
            } else if (args.length == 9 && args[0].equals("consume")) {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5], Integer.parseInt(args[6]),
                    hook(args[7], args[8]));
            } else {
                fail("usage: route NS TOPIC AK SK | produce NS TOPIC COUNT PREFIX AK SK"
                    + " | consume NS TOPIC GROUP COUNT PREFIX TIMEOUT_S AK SK");
            }
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            fail(t.toString());
        }
        System.out.println("OK");
        System.out.flush();
        System.exit(0);
    }

    static RPCHook hook(String accessKey, String secretKey) {
        return new AclClientRPCHook(new SessionCredentials(accessKey, secretKey));
    }

    static void fail(String why) {
        System.out.println("FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    static void route(String ns, String topic, RPCHook hook) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("acl_interop_route_pg", hook);
        p.setNamesrvAddr(ns);
        p.setInstanceName("acl-interop-route-" + System.nanoTime());
        p.start();
        try {
            var api = p.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
            var route = api.getTopicRouteInfoFromNameServer(topic, 10000);
            for (var qd : route.getQueueDatas()) {
                System.out.println("PERM " + qd.getBrokerName() + " " + qd.getPerm());
                for (int i = 0; i < qd.getWriteQueueNums(); i++) {
                    System.out.println("QUEUE " + qd.getBrokerName() + " " + i);
                }
            }
        } catch (MQClientException e) {
            System.out.println("REFUSED " + e.getResponseCode() + " " + e.getErrorMessage());
            System.out.flush();
            p.shutdown();
            System.exit(3);
        }
        p.shutdown();
    }

    static void produce(String ns, String topic, int count, String prefix, RPCHook hook) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("acl_interop_pg_" + prefix, hook);
        p.setNamesrvAddr(ns);
        p.setInstanceName("acl-interop-producer-" + prefix + "-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        try {
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, "acl", (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = p.send(m);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    throw new RuntimeException("send " + i + ": " + r);
                }
                System.out.println("SENT " + i + " " + r.getMsgId() + " " + r.getMessageQueue().getBrokerName());
            }
        } finally {
            System.out.println("RETRIES 0 0");
            p.shutdown();
        }
    }

    static void consume(String ns, String topic, String group, int count, String prefix, int timeoutS, RPCHook hook)
            throws Exception {
        final Set<String> seen = new HashSet<>();
        final CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(ns);
        c.setInstanceName("acl-interop-consumer-" + group + "-" + System.nanoTime());
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
