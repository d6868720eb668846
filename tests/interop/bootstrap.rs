//! A replaced name server (decision 0034), measured with real peers: one Java 5.5.0 broker registers every 30 s
//! (its default) with four name servers — two of ours that list each other in `namesrvPeers`, two Java 5.5.0 ones —
//! and a fifth of ours that only tells when a registration round happened. Right after one, one of ours and one
//! Java server are killed, wiped and started again on their addresses; then producers start one after another
//! against each restarted server alone for 30 s (`tests/peers/java/BootstrapProbe.java`), and their "No route info
//! of this topic" failures are counted. Ours serves the peer's table from its start; Java waits for the broker.
//! Ignored: run with `cargo test --test interop bootstrap:: -- --ignored --nocapture`.

use crate::support;

use std::time::{Duration, Instant};

use support::broker::{route, wait_for, wait_registered, Broker};
use support::interop::{serial, step};
use support::java::{JavaNamesrv, JAVA_5X};
use support::mqadmin::{JavaClient, MqAdmin};
use support::observe::metric;
use support::proc::OurNode;

/// The window the probes run for: one registration period of the broker (its default, 30 s).
const WINDOW_S: &str = "30";

/// (ok, noroute, fail) from a probe's `SUMMARY` line.
fn summary(out: &str) -> (u32, u32, u32) {
    let line = out.lines().find_map(|l| l.strip_prefix("SUMMARY ")).unwrap_or_else(|| panic!("no summary:\n{out}"));
    let n = |k: &str| line.split(' ').find_map(|f| f.strip_prefix(k)).and_then(|v| v.parse().ok()).expect("a count");
    (n("ok="), n("noroute="), n("fail="))
}

#[test]
#[ignore = "real peer: Java 5.5.0 broker, name server and producers"]
fn a_replaced_name_server_serves_routes_from_its_first_second() {
    let _serial = serial();
    let t0 = Instant::now();
    let (pa, pb) = (support::free_port(), support::free_port());
    let peers = format!("127.0.0.1:{pa};127.0.0.1:{pb}");
    let a = OurNode::start_at(pa, &[("namesrvPeers", &peers)]);
    let mut b = OurNode::start_at(pb, &[("namesrvPeers", &peers)]);
    let ja = JavaNamesrv::start(JAVA_5X);
    let jb = JavaNamesrv::start(JAVA_5X);
    let jb_port = jb.port().to_string();
    let watch = OurNode::start();
    let all = [a.addr(), b.addr(), ja.addr(), jb.addr(), watch.addr()];
    let list = all.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(";");
    let (cluster, topic) = ("BootCluster", "BootTopic");
    let broker = Broker::start_with(JAVA_5X, cluster, "boot-broker", &list, &[("registerNameServerPeriod", "30000")]);
    for ns in all {
        wait_registered(ns, &broker, Duration::from_secs(60));
    }
    let out = MqAdmin::new(JAVA_5X).ok(&list, &["updateTopic", "-c", cluster, "-t", topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    for ns in all {
        wait_for("the topic's route everywhere", Duration::from_secs(40), || route(ns, topic), || broker.log());
    }
    let probe = JavaClient::bootstrap_probe(JAVA_5X);
    step(t0, "broker registered with the five name servers; topic everywhere");

    // Just after a registration round: the restarted servers would wait the whole period for the next one.
    let rounds = || metric(watch.http_addr(), "namesrv_registrations_total");
    let before = rounds();
    wait_for("a registration round", Duration::from_secs(40), || (rounds() > before).then_some(()), || broker.log());
    b.kill_and_wipe();
    drop(jb);
    b.restart();
    let jb = JavaNamesrv::start_with(JAVA_5X, &[("listenPort", &jb_port)]);
    step(t0, "one of ours and one Java name server wiped and restarted");

    let (ours, java) = std::thread::scope(|s| {
        let ours = s.spawn(|| probe.run(&["probe", &b.addr().to_string(), topic, WINDOW_S], Duration::from_secs(120)));
        let java = s.spawn(|| probe.run(&["probe", &jb.addr().to_string(), topic, WINDOW_S], Duration::from_secs(120)));
        (ours.join().expect("probe"), java.join().expect("probe"))
    });
    let (ours_ok, ours_noroute, ours_fail) = summary(&ours.stdout);
    let (java_ok, java_noroute, java_fail) = summary(&java.stdout);
    step(t0, &format!("ours: ok={ours_ok} noroute={ours_noroute} fail={ours_fail}"));
    step(t0, &format!("Java: ok={java_ok} noroute={java_noroute} fail={java_fail}"));
    assert_eq!(ours_noroute, 0, "ours, restarted empty with a peer:\n{}\n{}", ours.stdout, b.log());
    assert!(ours_ok > 0, "no producer of ours got through:\n{}", ours.stdout);
    drop(a);
}
