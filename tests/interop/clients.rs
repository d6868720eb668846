//! Interop with the non-JVM clients, and a differential replay of everything the peers sent (issue #4, scenarios 5
//! and 7). One run, to start one broker:
//!
//! 1. Our `mqnamesrv` behind a recording proxy (`support::recorder`); every peer is given the proxy's address.
//! 2. A real Java 5.5.0 broker registers through it; `mqadmin` (5.5.0) creates a topic, lists topics, writes a KV
//!    entry and wipes/adds the broker's write permission.
//! 3. The native C++ client, 2.1 (`rocketmq-python-cvs`) and 1.x (`rocketmq`), sends messages with routes from us;
//!    ali-ons (npm, pure JavaScript) reads the route (compared with ours) and sends too; a Go push consumer
//!    receives every message. The broker then shuts down (UNREGISTER_BROKER).
//! 4. The recorded requests are replayed, in order and on the same connection grouping, against a fresh Java 5.5.0
//!    name server and a fresh one of ours, and every reply is compared after normalisation (`support::differ`).
//!
//! Ignored: runs with `cargo test -- --ignored`. Needs Java 17+ and Maven, Go, Python 3 with venv and pip, Node.js and npm; the
//! peers come from Maven Central, the Go module proxy, PyPI and npm into `~/.cache/namesrv-peers` (see
//! `docs/interop.md`). The recording proxy alone is checked by `tests/suite/recorder.rs`, which needs no peer.

use crate::support;

use std::time::{Duration, Instant};

use namesrv::protocol::json;
use namesrv::protocol::RequestCode as Rc;

use support::broker::{cluster_info, route, wait_for, wait_registered, Broker};
use support::interop::{perms, serial, squash, step};
use support::java::JAVA_5X;
use support::mqadmin::MqAdmin;
use support::native::{self, CPP_1X, CPP_21};
use support::normalize::canon;
use support::proc::OurNode;
use support::recorder::{Recorder, Recording};
use support::{gopeer, replay};

/// Messages per C++ client; ali-ons sends `ONS_N`.
const N: usize = 10;
const ONS_N: usize = 5;

#[test]
#[ignore = "real peer: C++ (Python) and ali-ons (Node.js) clients, Java 5.5.0 name server"]
fn cpp_and_ali_ons_clients_recorded_then_replayed_against_java() {
    let _serial = serial();
    let t0 = Instant::now();
    // Install (or find in the cache) every peer before anything runs, so installs do not count against timeouts.
    native::python(CPP_21);
    native::python(CPP_1X);
    native::ali_ons();
    gopeer::binary();
    let admin = MqAdmin::new(JAVA_5X);
    step(t0, "peers installed");

    let ns = OurNode::start();
    let recorder = Recorder::start(ns.addr());
    let via = recorder.addr_string();
    let cluster = "NativeCluster";
    let broker_name = "native-broker";
    let topic = "NativeTopic";
    // forceRegister=false: the broker asks QUERY_DATA_VERSION every period and registers only when it changed;
    // enableSlaveActingMaster with compatibleWithOldNameSrv=false: it also sends BROKER_HEARTBEAT every second
    // (with the default `true` its heartbeat is another QUERY_DATA_VERSION). All of it ends up in the recording.
    let mut broker = Broker::start_with(
        JAVA_5X,
        cluster,
        broker_name,
        &via,
        &[("forceRegister", "false"), ("enableSlaveActingMaster", "true"), ("compatibleWithOldNameSrv", "false")],
    );
    wait_registered(ns.addr(), &broker, Duration::from_secs(60));
    step(t0, &format!("broker registered with ours through the recorder at {via}"));

    let out = admin.ok(&via, &["updateTopic", "-c", cluster, "-t", topic, "-r", "4", "-w", "4"]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    wait_for("the topic's route", Duration::from_secs(25), || route(ns.addr(), topic), || broker.log());
    let out = admin.ok(&via, &["topicRoute", "-t", topic]);
    assert!(out.contains(&format!("\"{}\"", broker.addr_string())), "topicRoute:\n{out}");
    let out = admin.ok(&via, &["topicList"]);
    assert!(out.lines().any(|l| l.trim() == topic), "topicList lacks {topic}:\n{out}");
    let out = admin.ok(&via, &["updateKvConfig", "-s", "NATIVE_NS", "-k", "k1", "-v", "v1"]);
    assert!(out.contains("success"), "updateKvConfig:\n{out}");
    let out = admin.ok(&via, &["getNamesrvConfig"]);
    assert!(squash(&out).contains(&format!("listenPort={}", ns.addr().port())), "getNamesrvConfig:\n{out}");
    admin.ok(&via, &["wipeWritePerm", "-b", broker_name]);
    assert_eq!(perms(&route(ns.addr(), topic).expect("route")), vec![4], "perm after wipeWritePerm");
    admin.ok(&via, &["addWritePerm", "-b", broker_name]);
    assert_eq!(perms(&route(ns.addr(), topic).expect("route")), vec![6], "perm after addWritePerm");
    step(t0, "mqadmin: updateTopic, topicRoute, topicList, updateKvConfig, getNamesrvConfig, wipe/addWritePerm");

    // The native C++ clients: every send must come back SEND_OK.
    for (peer, start) in [(CPP_21, 0), (CPP_1X, N)] {
        let out = native::cpp_produce(peer, &via, topic, N, "native", start);
        out.expect_ok(&format!("C++ producer {peer:?}"));
        let sent = out.stdout.lines().filter(|l| l.starts_with("SENT OK ")).count();
        assert_eq!(sent, N, "C++ producer {peer:?}: SEND_OK count\n--- stdout ---\n{}", out.stdout);
        step(t0, &format!("C++ client {} {} sent {N} messages", peer.0, peer.1));
    }

    // ali-ons: the route as it parsed it equals ours; then it sends.
    let out = native::ons(&via, topic, ONS_N, "native", 2 * N);
    out.expect_ok("ali-ons");
    let theirs = out.stdout.lines().find_map(|l| l.strip_prefix("ROUTE ")).expect("ali-ons printed no ROUTE");
    let ours = route(ns.addr(), topic).expect("our route");
    let parse = |text: &str| canon(&json::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}: {text}")), None);
    assert_eq!(parse(theirs), parse(&ours), "ali-ons's route differs from ours:\nali-ons: {theirs}\nours:    {ours}");
    let sent = out.stdout.lines().filter(|l| l.starts_with(&format!("SENT SEND_OK {broker_name} "))).count();
    assert_eq!(sent, ONS_N, "ali-ons sends:\n{}", out.stdout);
    step(t0, &format!("ali-ons read the route (equal to ours) and sent {ONS_N} messages"));

    // A Go push consumer receives everything the C++ clients and ali-ons sent.
    let total = 2 * N + ONS_N;
    gopeer::consume_all(&via, topic, "native_cg", "native", total);
    step(t0, &format!("Go push consumer received all {total}"));

    broker.shutdown();
    wait_for(
        "the route to go after the broker shut down",
        Duration::from_secs(10),
        || route(ns.addr(), topic).is_none().then_some(()),
        || ns.log(),
    );
    // Probes through the recorder, so that the replay compares the state after the unregistration too.
    assert_eq!(route(recorder.addr(), topic), None, "route after the broker shut down");
    let info = cluster_info(recorder.addr()).expect("cluster info");
    assert!(!info.contains(&broker.addr_string()), "cluster info after the broker shut down: {info}");
    let recording = recorder.stop();
    step(t0, &format!("broker shut down; recorded {} events", recording.events.len()));

    // Through a file that outlives the run (overwritten by the next one), so a failed replay can be looked at.
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-clients-recording.bin");
    recording.save(&file);
    let recording = Recording::load(&file);
    step(t0, &format!("recording saved to {}", file.display()));
    let requests = recording.requests();
    let mut seen: Vec<(i32, String, i32)> = requests
        .iter()
        .map(|(_, c)| (c.code, c.language.map(|l| l.name().to_string()).unwrap_or_default(), c.version))
        .collect();
    seen.sort();
    seen.dedup();
    eprintln!("recorded requests (code, language, version): {seen:?}");
    for code in [
        Rc::REGISTER_BROKER,
        Rc::UNREGISTER_BROKER,
        Rc::QUERY_DATA_VERSION,
        Rc::BROKER_HEARTBEAT,
        Rc::GET_ROUTEINFO_BY_TOPIC,
        Rc::GET_BROKER_CLUSTER_INFO,
        Rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        Rc::PUT_KV_CONFIG,
        Rc::WIPE_WRITE_PERM_OF_BROKER,
        Rc::ADD_WRITE_PERM_OF_BROKER,
    ] {
        assert!(requests.iter().any(|(_, c)| c.code == code), "nothing recorded with code {code}: {seen:?}");
    }
    // The C++ clients and ali-ons (with an access key) add AccessKey/Signature/OnsChannel, which must be ignored.
    assert!(
        requests.iter().any(|(_, c)| c.ext("Signature").is_some()),
        "no request with a Signature ext field was recorded: {seen:?}"
    );
    let route_clients: Vec<&str> =
        seen.iter().filter(|(c, _, _)| *c == Rc::GET_ROUTEINFO_BY_TOPIC).map(|(_, l, _)| l.as_str()).collect();
    for lang in ["JAVA", "CPP", "GO"] {
        assert!(route_clients.contains(&lang), "no route request from a {lang} client recorded: {seen:?}");
    }
    // Both sides of Java's dialect switch at version 401 (V4_9_4): 4xx+ gets standard JSON, older the default one.
    let versions: Vec<i32> =
        seen.iter().filter(|(c, _, _)| *c == Rc::GET_ROUTEINFO_BY_TOPIC).map(|(_, _, v)| *v).collect();
    assert!(versions.iter().any(|v| *v >= 401) && versions.iter().any(|v| *v < 401), "route versions: {versions:?}");

    let done = replay::replay("replay of the recorded peer traffic", &recording);
    eprintln!("replayed: {done:?}");
    assert_eq!(done.compared.values().sum::<usize>() + done.oneway, requests.len(), "not every request replayed");
    step(
        t0,
        &format!("replayed {} requests against Java {JAVA_5X} and ours: no unexplained difference", requests.len()),
    );
}
