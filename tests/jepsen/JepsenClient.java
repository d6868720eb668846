// The fault tests' client (tests/jepsen/main.rs, tests/jepsen/fleet.rs), compiled at test time against rocketmq-client
// 5.5.0.
//
//   java JepsenClient produce NAMESRV TOPIC SECONDS [RETRIES]
//        -> one send at a time for SECONDS, bodies "j-<i>": "ACK <i> <start> <end> <broker>" when the broker answered
//           SEND_OK (<broker>: the address that stored it, from the offset message id), "FAIL <i> <start> <end>
//           <reason>" otherwise (times in ms since the epoch); "DONE" at the end
//   java JepsenClient consume NAMESRV TOPIC GROUP    -> "STARTED", then "READ <body>" per message, from the first
//                                                      offset, until killed
//
// NAMESRV may list several name servers ("a;b;c"), as clients are given them. RETRIES is the client's own resend
// (`retryTimesWhenSendFailed`), 0 when absent: then a failed send is a FAIL line and the next send has a new body,
// so an ACK line is exactly one acknowledged message, which the checker then expects the consumer to read. With
// the client's default of 2, a failed attempt is sent again (to another broker) within the same 3 s timeout.

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;

public class JepsenClient {
    // Flushed at every line: the test reads the file while the program runs.
    static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out), true);

    public static void main(String[] args) throws Exception {
        if ((args.length == 4 || args.length == 5) && args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]), args.length == 5 ? Integer.parseInt(args[4]) : 0);
        } else if (args.length == 4 && args[0].equals("consume")) {
            consume(args[1], args[2], args[3]);
        } else {
            OUT.println("usage: produce NS TOPIC SECONDS [RETRIES] | consume NS TOPIC GROUP");
            System.exit(2);
        }
    }

    static void produce(String ns, String topic, int seconds, int retries) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("jepsen_producer");
        p.setNamesrvAddr(ns);
        p.setRetryTimesWhenSendFailed(retries);
        p.setSendMsgTimeout(3000);
        p.start();
        long end = System.currentTimeMillis() + seconds * 1000L;
        for (int i = 0; System.currentTimeMillis() < end; i++) {
            long start = System.currentTimeMillis();
            try {
                SendResult r = p.send(new Message(topic, ("j-" + i).getBytes(StandardCharsets.UTF_8)));
                String times = " " + start + " " + System.currentTimeMillis();
                if (r.getSendStatus() == SendStatus.SEND_OK) {
                    OUT.println("ACK " + i + times + " " + storedBy(r));
                } else {
                    OUT.println("FAIL " + i + times + " " + r.getSendStatus());
                }
            } catch (Throwable t) {
                String times = " " + start + " " + System.currentTimeMillis();
                OUT.println("FAIL " + i + times + " " + t.toString().replace('\n', ' '));
                // Do not spin while nothing can be sent.
                Thread.sleep(100);
            }
            Thread.sleep(20);
        }
        p.shutdown();
        OUT.println("DONE");
        System.exit(0);
    }

    // The broker that stored a message: its offset message id begins with the store host's address.
    static String storedBy(SendResult r) {
        try {
            return MessageDecoder.decodeMessageId(r.getOffsetMsgId()).getAddress().toString().replaceFirst("^.*/", "");
        } catch (Exception e) {
            return "?";
        }
    }

    static void consume(String ns, String topic, String group) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                OUT.println("READ " + new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        // The harness starts its faults only after this: start() fails outright when the name server it asks first
        // is down at that moment, and a consumer that never started would read nothing.
        OUT.println("STARTED");
        Thread.sleep(Long.MAX_VALUE);
    }
}
