//! Interop scenarios shared by the `tests/interop_*.rs` files: the same flow runs against the 5.x and the 4.9 line
//! of real RocketMQ software, with our `mqnamesrv` as the only name server.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::broker::{cluster_info, route, wait_for, wait_registered, Broker};
use super::mqadmin::{expected_bodies, JavaClient, MqAdmin};
use super::proc::OurNode;

/// Tests that start brokers take this lock, so that a file's tests run one after another (two brokers booting at
/// once on two cores only makes both slow).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Prints a step with the time since `t0` (visible with `--nocapture`, and in the output of a failed test).
pub fn step(t0: Instant, what: &str) {
    eprintln!("[{:>6.1}s] {what}", t0.elapsed().as_secs_f64());
}

/// Whitespace removed, for asserting on pretty-printed JSON.
pub fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The versions of the three kinds of Java peers in one flow.
#[derive(Clone, Copy, Debug)]
pub struct JavaPeers<'a> {
    pub broker: &'a str,
    pub tools: &'a str,
    pub client: &'a str,
}

/// Scenario 1 (and 3): a real broker registers with our server; mqadmin sees it in clusterList; mqadmin creates a
/// topic through the broker, and after the broker re-registers, topicRoute/topicList show it; a real Java producer
/// sends N messages and a real Java push consumer receives all N, with routes from our server only. Then the broker
/// is shut down (SIGTERM → UNREGISTER_BROKER) and its routes go away; started again they come back and a producer
/// works again; then it is killed (SIGKILL → connection close) and its routes go away again.
pub fn core_flow(peers: JavaPeers, tag: &str) {
    const N: usize = 20;
    let t0 = Instant::now();
    let ns = OurNode::start();
    let nsaddr = ns.addr_string();
    let cluster = format!("InteropCluster{tag}");
    let broker_name = format!("interop-broker-{tag}");
    let topic = format!("InteropTopic{tag}");

    step(t0, "fetching mqadmin and compiling the Java client");
    let admin = MqAdmin::new(peers.tools);
    let client = JavaClient::new(peers.client);

    step(t0, &format!("starting broker {} against {nsaddr}", peers.broker));
    let mut broker = Broker::start(peers.broker, &cluster, &broker_name, &nsaddr);
    let baddr = broker.addr_string();
    let took = wait_registered(ns.addr(), &broker, Duration::from_secs(60));
    step(t0, &format!("broker registered ({took:?} after boot)"));

    // clusterList: one row with our cluster, broker name and address.
    let out = admin.ok(&nsaddr, &["clusterList"]);
    assert!(
        out.lines().any(|l| l.contains(&cluster) && l.contains(&broker_name) && l.contains(&baddr)),
        "clusterList does not show {cluster}/{broker_name}/{baddr}:\n{out}"
    );
    step(t0, "clusterList shows the broker");

    // updateTopic goes to the broker (found via our cluster info); the broker then registers the topic with us.
    let out = admin.ok(&nsaddr, &["updateTopic", "-c", &cluster, "-t", &topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic output:\n{out}");
    let (_, took) = wait_for(
        &format!("route of {topic}"),
        Duration::from_secs(25),
        || route(ns.addr(), &topic),
        || format!("{}\n{}", broker.log(), ns.log()),
    );
    step(t0, &format!("topic route appeared {took:?} after updateTopic"));

    let out = admin.ok(&nsaddr, &["topicRoute", "-t", &topic]);
    let flat = squash(&out);
    assert!(flat.contains(&format!("\"brokerName\":\"{broker_name}\"")), "topicRoute:\n{out}");
    assert!(flat.contains(&format!("\"{baddr}\"")), "topicRoute lacks the broker address {baddr}:\n{out}");
    assert!(flat.contains("\"writeQueueNums\":4") && flat.contains("\"readQueueNums\":4"), "topicRoute:\n{out}");
    assert!(flat.contains(&format!("\"cluster\":\"{cluster}\"")), "topicRoute:\n{out}");

    let out = admin.ok(&nsaddr, &["topicList"]);
    assert!(out.lines().any(|l| l.trim() == topic), "topicList lacks {topic}:\n{out}");
    step(t0, "topicRoute and topicList show the topic");

    // Real producer and consumer; they know nothing but our address.
    let brokers = client.produce(&nsaddr, &topic, N, "core");
    assert!(brokers.iter().all(|b| *b == broker_name), "messages went to {brokers:?}");
    step(t0, &format!("Java producer sent {N} messages"));
    let got = client.consume(&nsaddr, &topic, &format!("interop_cg_{tag}"), N, "core", Duration::from_secs(90));
    assert_eq!(got, expected_bodies("core", N), "consumer received the wrong set");
    step(t0, &format!("Java push consumer received all {N}"));

    // Graceful stop: the broker unregisters (UNREGISTER_BROKER) from its shutdown hook.
    broker.shutdown();
    let (_, took) = wait_for(
        "the route to disappear after the broker shut down",
        Duration::from_secs(10),
        || route(ns.addr(), &topic).is_none().then_some(()),
        || ns.log(),
    );
    let info = cluster_info(ns.addr()).expect("cluster info");
    assert!(!info.contains(&baddr), "cluster info still lists {baddr} after shutdown: {info}");
    step(t0, &format!("broker shut down; route gone within {took:?}"));
    let out = admin.run(&nsaddr, &["topicRoute", "-t", &topic]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("No topic route info"), "topicRoute after shutdown:\n{all}");

    broker.start_again();
    let (_, took) = wait_for(
        "the route to come back after the broker restarted",
        Duration::from_secs(60),
        || route(ns.addr(), &topic),
        || format!("{}\n{}", broker.log(), ns.log()),
    );
    step(t0, &format!("broker restarted; route back {took:?} after boot"));
    let out = admin.ok(&nsaddr, &["topicRoute", "-t", &topic]);
    assert!(squash(&out).contains(&format!("\"{baddr}\"")), "topicRoute after restart:\n{out}");
    client.produce(&nsaddr, &topic, 3, "again");
    step(t0, "Java producer works after the restart");

    // Crash: the connection closes without UNREGISTER_BROKER.
    broker.kill();
    let (_, took) = wait_for(
        "the route to disappear after the broker was killed",
        Duration::from_secs(10),
        || route(ns.addr(), &topic).is_none().then_some(()),
        || ns.log(),
    );
    let info = cluster_info(ns.addr()).expect("cluster info");
    assert!(!info.contains(&baddr), "cluster info still lists {baddr} after the kill: {info}");
    step(t0, &format!("broker killed; route gone within {took:?}; scenario done"));
}
