// Producers that start one after another against one name server, as new clients do after a name server was
// replaced: each creates a fresh DefaultMQProducer (its own instance, so no route is cached from the one before),
// sends one message and shuts down, until SECONDS have passed since the probe began.
//
//   java BootstrapProbe probe NAMESRV TOPIC SECONDS
//
// prints one line per producer, "OK <ms since start>", "NOROUTE <ms> <message>" (the client's "No route info of
// this topic") or "FAIL <ms> <exception>", then "SUMMARY ok=<n> noroute=<n> fail=<n>".

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

public class BootstrapProbe {
    public static void main(String[] args) throws Exception {
        String ns = args[1], topic = args[2];
        long until = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000L;
        long start = System.currentTimeMillis();
        int ok = 0, noRoute = 0, fail = 0;
        for (int i = 0; System.currentTimeMillis() < until; i++) {
            DefaultMQProducer p = new DefaultMQProducer("bootstrap_probe_pg");
            p.setNamesrvAddr(ns);
            p.setInstanceName("bootstrap-probe-" + i + "-" + System.nanoTime());
            p.setSendMsgTimeout(3000);
            p.setRetryTimesWhenSendFailed(0);
            long at = System.currentTimeMillis() - start;
            try {
                p.start();
                p.send(new Message(topic, ("probe-" + i).getBytes("UTF-8")));
                ok++;
                System.out.println("OK " + at);
            } catch (Throwable t) {
                String m = String.valueOf(t.getMessage()).replace('\n', ' ');
                if (m.contains("No route info of this topic")) {
                    noRoute++;
                    System.out.println("NOROUTE " + at + " " + m.substring(0, Math.min(m.length(), 120)));
                } else {
                    fail++;
                    System.out.println("FAIL " + at + " " + t.getClass().getSimpleName() + ": " + m.substring(0, Math.min(m.length(), 160)));
                }
            } finally {
                p.shutdown();
            }
            System.out.flush();
        }
        System.out.println("SUMMARY ok=" + ok + " noroute=" + noRoute + " fail=" + fail);
        System.out.flush();
        System.exit(0);
    }
}
