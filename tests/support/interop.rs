//! Interop scenarios shared by the modules of `tests/interop/`: the same flow runs against the 5.x and the 4.9 line
//! of real RocketMQ software, with our `mqnamesrv` as the only name server.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::broker::{cluster_info, route, wait_for, wait_registered, Broker};
use super::mqadmin::{expected_bodies, JavaClient, MqAdmin};
use super::observe::metric;
use super::proc::{OurNode, RetryBudget};

/// Tests that start brokers take this (`let _serial = serial();`) and hold it to their end. It is two things:
///
/// * the lock of the calling source file, so that a file's tests run one after another, as they always have;
/// * then one of the process's broker slots (`NAMESRV_PEER_SLOTS`, default 2): tests of different files run side by
///   side, but no more of them at once than that, however many threads the test harness runs (two brokers booting
///   at once on two cores already make both slow). A test waiting for its file's lock holds no slot, so the harness
///   may run more threads than slots (`--test-threads`) without starving anyone.
#[track_caller]
pub fn serial() -> Serial {
    static LOCKS: Mutex<BTreeMap<&'static str, &'static Mutex<()>>> = Mutex::new(BTreeMap::new());
    let file = std::panic::Location::caller().file();
    let lock = {
        let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
        *locks.entry(file).or_insert_with(|| Box::leak(Box::new(Mutex::new(()))))
    };
    let file = lock.lock().unwrap_or_else(|e| e.into_inner());
    Serial { _slot: Slot::take(), _file: file }
}

/// A file's lock and a broker slot (`serial`); the slot is given back first.
pub struct Serial {
    _slot: Slot,
    _file: MutexGuard<'static, ()>,
}

/// Broker slots in use, and the signal that one was given back.
static SLOTS_USED: Mutex<usize> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

struct Slot;

impl Slot {
    fn take() -> Slot {
        let slots = std::env::var("NAMESRV_PEER_SLOTS").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(2).max(1);
        let mut used = SLOTS_USED.lock().unwrap_or_else(|e| e.into_inner());
        while *used >= slots {
            used = SLOT_FREED.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *SLOTS_USED.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        SLOT_FREED.notify_one();
    }
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

/// GET_KV_CONFIG (101) from `ns` over the raw protocol: `Some(value)` on SUCCESS, `None` on QUERY_NOT_FOUND.
pub fn kv_get(ns: std::net::SocketAddr, namespace: &str, key: &str) -> Option<String> {
    let mut c = super::client::Client::connect(ns);
    let cmd = c.cmd(101).with_ext("namespace", namespace).with_ext("key", key);
    let r = c.request(cmd);
    match r.code {
        0 => Some(r.ext("value").unwrap_or_default().to_string()),
        22 => None,
        other => panic!("GET_KV_CONFIG {namespace}/{key}: unexpected code {other} {:?}", r.remark),
    }
}

/// The `perm` values of the queue data in a route JSON.
pub fn perms(route_json: &str) -> Vec<u32> {
    route_json
        .match_indices("\"perm\":")
        .map(|(i, m)| {
            let rest = &route_json[i + m.len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().expect("perm number")
        })
        .collect()
}

/// Scenario 2: mqadmin's name-server admin commands against our server, asserting on mqadmin's output and on
/// what our server answers afterwards: KV config (update, get back, delete), order config, get/update name server
/// config (and a black-listed key refused), wipe/add write permission of a live broker, deleteTopic, topicList -c.
pub fn admin_flow(peers: JavaPeers, tag: &str) {
    let t0 = Instant::now();
    let ns = OurNode::start();
    let nsaddr = ns.addr_string();
    let cluster = format!("AdminCluster{tag}");
    let broker_name = format!("admin-broker-{tag}");
    let topic = format!("AdminTopic{tag}");
    let admin = MqAdmin::new(peers.tools);

    // --- KV config: update, read back (raw 101 and mqadmin updateOrderConf -m get), delete.
    let out = admin.ok(&nsaddr, &["updateKvConfig", "-s", "INTEROP_NS", "-k", "k1", "-v", "v1"]);
    assert!(out.contains("success"), "updateKvConfig:\n{out}");
    assert_eq!(kv_get(ns.addr(), "INTEROP_NS", "k1").as_deref(), Some("v1"));
    let out = admin.ok(&nsaddr, &["deleteKvConfig", "-s", "INTEROP_NS", "-k", "k1"]);
    assert!(out.contains("success"), "deleteKvConfig:\n{out}");
    assert_eq!(kv_get(ns.addr(), "INTEROP_NS", "k1"), None);
    step(t0, "updateKvConfig / deleteKvConfig");

    let out = admin.ok(&nsaddr, &["updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "OrderViaKv", "-v", "b1:2"]);
    assert!(out.contains("success"), "updateKvConfig:\n{out}");
    let out = admin.ok(&nsaddr, &["updateOrderConf", "-t", "OrderViaKv", "-m", "get"]);
    assert!(out.contains("orderConf=[b1:2]"), "updateOrderConf -m get after updateKvConfig:\n{out}");

    // --- Name server config.
    let out = admin.ok(&nsaddr, &["getNamesrvConfig"]);
    let flat = squash(&out);
    assert!(flat.contains(&format!("listenPort={}", ns.addr().port())), "getNamesrvConfig:\n{out}");
    assert!(flat.contains("orderMessageEnable=false"), "getNamesrvConfig:\n{out}");
    let out = admin.ok(&nsaddr, &["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"]);
    assert!(out.contains("success"), "updateNamesrvConfig:\n{out}");
    let out = admin.ok(&nsaddr, &["getNamesrvConfig"]);
    assert!(squash(&out).contains("orderMessageEnable=true"), "getNamesrvConfig after update:\n{out}");
    // A black-listed key is refused (NO_PERMISSION), and the value does not change.
    let bad = ns.addr().to_string();
    let out =
        admin.run(&nsaddr, &["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/interop-should-not-be-used"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(!all.contains("update name server config success"), "black-listed key accepted:\n{all}");
    assert!(all.contains("black list") || all.contains("CODE: 16"), "black-listed key refusal:\n{all}");
    let out = admin.ok(&nsaddr, &["getNamesrvConfig"]);
    assert!(!out.contains("interop-should-not-be-used"), "kvConfigPath changed ({bad}):\n{out}");
    step(t0, "getNamesrvConfig / updateNamesrvConfig (black list refused)");

    // --- A live broker for the permission, delete and cluster-topic commands. 5.x brokers need the timer wheel for
    // deleteTopic (without it the broker answers SYSTEM_ERROR, an NPE on getTimerMessageStore()).
    let mut broker = Broker::start_with(peers.broker, &cluster, &broker_name, &nsaddr, &[("timerWheelEnable", "true")]);
    wait_registered(ns.addr(), &broker, Duration::from_secs(60));
    let out = admin.ok(&nsaddr, &["updateTopic", "-c", &cluster, "-t", &topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    let (r, _) = wait_for(
        "the new topic's route",
        Duration::from_secs(25),
        || route(ns.addr(), &topic),
        || format!("{}\n{}", broker.log(), ns.log()),
    );
    assert_eq!(perms(&r), vec![6], "route before wipeWritePerm: {r}");
    step(t0, "broker up, topic created");

    let out = admin.ok(&nsaddr, &["wipeWritePerm", "-b", &broker_name]);
    assert!(
        out.contains(&format!("wipe write perm of broker[{broker_name}] in name server[{nsaddr}] OK")),
        "wipeWritePerm:\n{out}"
    );
    let r = route(ns.addr(), &topic).expect("route after wipe");
    assert_eq!(perms(&r), vec![4], "route after wipeWritePerm: {r}\nmqadmin said:\n{out}");
    // The broker re-registers every 10 s (forceRegister=true) with an unchanged DataVersion; as in Java, that does
    // not touch queue data, so the wipe stays. The wipe was applied before mqadmin had its answer, and a
    // registration is counted only once it is applied and published: any count past this one is a registration
    // applied after the wipe.
    let registrations = || metric(ns.http_addr(), "namesrv_registrations_total");
    let before = registrations();
    let (_, took) = wait_for(
        "the broker's next registration",
        Duration::from_secs(30),
        || (registrations() > before).then_some(()),
        || format!("{}\n{}", broker.log(), ns.log()),
    );
    let r = route(ns.addr(), &topic).expect("route after wipe");
    assert_eq!(perms(&r), vec![4], "route after a re-registration that followed wipeWritePerm: {r}\n{}", ns.log());
    step(t0, &format!("the broker re-registered {took:?} after the wipe; the wipe stays"));
    let out = admin.ok(&nsaddr, &["addWritePerm", "-b", &broker_name]);
    assert!(
        out.contains(&format!("add write perm of broker[{broker_name}] in name server[{nsaddr}] OK")),
        "addWritePerm:\n{out}"
    );
    let r = route(ns.addr(), &topic).expect("route after add");
    assert_eq!(perms(&r), vec![6], "route after addWritePerm: {r}");
    step(t0, "wipeWritePerm / addWritePerm");

    // --- Order config.
    let conf = format!("{broker_name}:4");
    let out = admin.ok(&nsaddr, &["updateOrderConf", "-t", &topic, "-m", "put", "-v", &conf]);
    assert!(out.contains("success"), "updateOrderConf put:\n{out}");
    let out = admin.ok(&nsaddr, &["updateOrderConf", "-t", &topic, "-m", "get"]);
    assert!(out.contains(&format!("orderConf=[{conf}]")), "updateOrderConf get:\n{out}");
    assert_eq!(kv_get(ns.addr(), "ORDER_TOPIC_CONFIG", &topic).as_deref(), Some(conf.as_str()));
    // orderMessageEnable=true (set above): the route carries the order config. (Done after the permission checks:
    // the register reply hands the order config to the broker, which flips the topic's `order` flag and bumps its
    // DataVersion, and its next registration then rewrites the queue data, as it would with Java.)
    let r = route(ns.addr(), &topic).expect("route");
    assert!(r.contains(&format!("\"orderTopicConf\":\"{conf}\"")), "route with orderMessageEnable=true: {r}");
    step(t0, "updateOrderConf put/get; the route carries orderTopicConf");

    let out = admin.ok(&nsaddr, &["topicList", "-c"]);
    assert!(
        out.lines().any(|l| l.contains(&cluster) && l.contains(&topic)),
        "topicList -c lacks {cluster} {topic}:\n{out}"
    );
    step(t0, "topicList -c");

    let out = admin.ok(&nsaddr, &["deleteTopic", "-c", &cluster, "-t", &topic]);
    assert!(out.contains("from NameServer success"), "deleteTopic:\n{out}");
    assert_eq!(route(ns.addr(), &topic), None, "route after deleteTopic");
    let out = admin.ok(&nsaddr, &["topicList"]);
    assert!(!out.lines().any(|l| l.trim() == topic), "topicList still has {topic}:\n{out}");
    step(t0, "deleteTopic");

    broker.kill();
    let out = admin.ok(&nsaddr, &["updateOrderConf", "-t", &topic, "-m", "delete"]);
    assert!(out.contains("success"), "updateOrderConf delete:\n{out}");
    assert_eq!(kv_get(ns.addr(), "ORDER_TOPIC_CONFIG", &topic), None);
    step(t0, "updateOrderConf delete; scenario done");
}

/// Scenario 5: two name servers side by side, ours and (with `java_peer`) the Java one of `peers.tools`' version,
/// or ours twice. The broker registers with both (`namesrvAddr=a;b`); clients get both. Ours is killed: producers
/// and consumers keep working through the other. It is started again, empty, and catches up within one
/// registration period (10 s); then it alone serves a producer and a consumer.
pub fn two_namesrv_flow(peers: JavaPeers, tag: &str, java_peer: bool) {
    const N: usize = 10;
    let t0 = Instant::now();
    let mut a = OurNode::start();
    let (_b_ours, _b_java, b_addr) = if java_peer {
        let j = super::java::JavaNamesrv::start(peers.tools);
        let addr = j.addr();
        (None, Some(j), addr)
    } else {
        let o = OurNode::start();
        let addr = o.addr();
        (Some(o), None, addr)
    };
    let both = format!("{};{}", a.addr_string(), b_addr);
    let cluster = format!("PairCluster{tag}");
    let topic = format!("PairTopic{tag}");
    let admin = MqAdmin::new(peers.tools);
    let client = JavaClient::new(peers.client);
    let mut broker = Broker::start(peers.broker, &cluster, &format!("pair-broker-{tag}"), &both);
    for ns in [a.addr(), b_addr] {
        wait_registered(ns, &broker, Duration::from_secs(60));
    }
    let out = admin.ok(&both, &["updateTopic", "-c", &cluster, "-t", &topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    for ns in [a.addr(), b_addr] {
        wait_for("the topic's route on both", Duration::from_secs(25), || route(ns, &topic), || broker.log());
    }
    step(t0, "broker registered with both name servers; topic on both");

    client.produce(&both, &topic, N, "pair1");
    let got = client.consume(&both, &topic, &format!("pair_cg1_{tag}"), N, "pair1", Duration::from_secs(90));
    assert_eq!(got, expected_bodies("pair1", N));
    step(t0, "producer and consumer work with both up");

    a.kill();
    let down = RetryBudget::name_server_down("the first name server is down");
    client.produce_within(&both, &topic, N, "pair2", down);
    let got =
        client.consume_within(&both, &topic, &format!("pair_cg2_{tag}"), N, "pair2", Duration::from_secs(90), down);
    assert_eq!(got, expected_bodies("pair2", N));
    step(t0, "producer and consumer work with the first name server down");

    a.restart();
    // It starts empty: a route it serves this early came from a registration since the restart (the broker may be
    // connecting to it that very moment), never from before it. The route is read first, so a registration behind
    // it is already counted.
    if let Some(early) = route(a.addr(), &topic) {
        let since = metric(a.http_addr(), "namesrv_registrations_total");
        assert!(since >= 1.0, "a restarted name server starts empty, yet routed {early} with no registration");
    }
    let (_, took) = wait_for(
        "the restarted name server to catch up",
        Duration::from_secs(15),
        || route(a.addr(), &topic),
        || format!("{}\n{}", broker.log(), a.log()),
    );
    wait_registered(a.addr(), &broker, Duration::from_secs(1));
    step(t0, &format!("restarted name server caught up after {took:?}"));

    let only_a = a.addr_string();
    let out = admin.ok(&only_a, &["topicRoute", "-t", &topic]);
    assert!(squash(&out).contains(&format!("\"{}\"", broker.addr_string())), "topicRoute on {only_a}:\n{out}");
    client.produce(&only_a, &topic, N, "pair3");
    let got = client.consume(&only_a, &topic, &format!("pair_cg3_{tag}"), N, "pair3", Duration::from_secs(90));
    assert_eq!(got, expected_bodies("pair3", N));
    step(t0, "the restarted name server alone serves producer and consumer; scenario done");
    broker.kill();
}
