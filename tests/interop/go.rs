//! Interop with the Apache RocketMQ Go client (rocketmq-client-go/v2 v2.1.2): through our `mqnamesrv` it finds a
//! real Java 5.5.0 broker, produces and consumes, and lists topics. Needs Go, Java 17+ and Maven; see
//! `docs/interop.md`. Ignored: run with `cargo test -- --ignored`.

use crate::support;

use std::time::{Duration, Instant};

use support::broker::{route, wait_for, wait_registered, Broker};
use support::gopeer;
use support::interop::{serial, step};
use support::java::JAVA_5X;
use support::mqadmin::MqAdmin;
use support::proc::OurNode;

#[test]
#[ignore = "real peer: Go client and a Java 5.5.0 broker"]
fn go_client_routes_produce_consume_topic_list() {
    const N: usize = 20;
    let _serial = serial();
    let t0 = Instant::now();
    let bin = gopeer::binary();
    step(t0, &format!("built {}", bin.display()));
    let ns = OurNode::start();
    let nsaddr = ns.addr_string();
    let admin = MqAdmin::new(JAVA_5X);
    let mut broker = Broker::start(JAVA_5X, "GoCluster", "go-broker", &nsaddr);
    wait_registered(ns.addr(), &broker, Duration::from_secs(60));
    let topic = "GoInteropTopic";
    let out = admin.ok(&nsaddr, &["updateTopic", "-c", "GoCluster", "-t", topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    wait_for("the topic's route", Duration::from_secs(25), || route(ns.addr(), topic), || broker.log());
    step(t0, "broker up, topic created");

    // GET_ROUTEINFO_BY_TOPIC with the Go client's version (317: the default dialect, unquoted brokerAddrs keys).
    let out = gopeer::ok("route", &nsaddr, &["-t", topic], Duration::from_secs(30));
    let mut queues: Vec<&str> = out.lines().filter(|l| l.starts_with("QUEUE ")).collect();
    queues.sort();
    assert_eq!(
        queues,
        vec!["QUEUE go-broker 0", "QUEUE go-broker 1", "QUEUE go-broker 2", "QUEUE go-broker 3"],
        "Go FetchPublishMessageQueues:\n{out}"
    );
    step(t0, "Go admin FetchPublishMessageQueues");

    // GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    let out = gopeer::ok("topics", &nsaddr, &[], Duration::from_secs(30));
    assert!(out.lines().any(|l| l == format!("TOPIC {topic}")), "Go FetchAllTopicList lacks {topic}:\n{out}");
    assert!(out.lines().any(|l| l == "TOPIC TBW102"), "Go FetchAllTopicList lacks the broker's TBW102:\n{out}");
    step(t0, "Go admin FetchAllTopicList");

    let n = N.to_string();
    let out = gopeer::ok("produce", &nsaddr, &["-t", topic, "-count", &n, "-prefix", "go"], Duration::from_secs(120));
    assert_eq!(out.lines().filter(|l| l.starts_with("SENT ")).count(), N, "Go producer:\n{out}");
    step(t0, &format!("Go producer sent {N}"));
    gopeer::consume_all(&nsaddr, topic, "go_interop_cg", "go", N);
    step(t0, &format!("Go push consumer received all {N}"));
    broker.kill();
}
