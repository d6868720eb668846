//! The operator HTTP endpoint end to end: /metrics counts what happened, /health, /ready, /routes/{topic},
//! /cluster answer valid JSON, /rocketmq/nsaddr serves nsaddrList.

use crate::support;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::json;
use namesrv::protocol::{RequestCode, ResponseCode};
use support::client::Client;
use support::inproc::InProc;
use support::ours::OurNamesrv;
use support::registration::{new_cmd, Broker};

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let (status, _, body) = support::observe::http_response(addr, path).expect("an HTTP answer");
    (status, body)
}

/// The value of an unlabelled metric in a `/metrics` text; panics when it is missing.
fn metric_value(text: &str, name: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("no {name}"));
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number")
}

/// The in-process fixture with the HTTP endpoint on.
fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        tweak(c);
    })
}

/// The commit `mqnamesrv --version` names (the library's build of the same tree).
fn namesrv_commit() -> String {
    let v = namesrv::VERSION;
    v[v.find('(').unwrap() + 1..v.len() - 1].to_string()
}

#[test]
fn metrics_and_json_endpoints() {
    let srv = start(|_| {});
    let http = srv.http_addr().expect("HTTP enabled");
    let broker = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    let mut c = Client::connect(srv.local_addr());
    assert_eq!(c.request(broker.register(&["TopicA", "TopicB"], 1, 513)).code, ResponseCode::SUCCESS);
    for _ in 0..3 {
        let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "TopicA"));
        assert_eq!(r.code, ResponseCode::SUCCESS);
    }
    let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "nope"));
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST);

    let (status, text) = get(http, "/metrics");
    assert_eq!(status, 200);
    for line in [
        "namesrv_requests_total{code=\"GET_ROUTEINFO_BY_TOPIC\",result=\"success\"} 3",
        "namesrv_requests_total{code=\"GET_ROUTEINFO_BY_TOPIC\",result=\"not_found\"} 1",
        "namesrv_responses_total{code=\"GET_ROUTEINFO_BY_TOPIC\",response=\"SUCCESS\"} 3",
        "namesrv_responses_total{code=\"GET_ROUTEINFO_BY_TOPIC\",response=\"TOPIC_NOT_EXIST\"} 1",
        "namesrv_requests_total{code=\"REGISTER_BROKER\",result=\"success\"} 1",
        "namesrv_request_duration_seconds_count{code=\"GET_ROUTEINFO_BY_TOPIC\"} 4",
        "namesrv_brokers 1",
        "namesrv_topics 2",
        "namesrv_queue_entries 2",
        "namesrv_connections_open 1",
        "namesrv_evictions_total{cause=\"expired\"} 0",
        "namesrv_registrations_total 1",
        &format!("namesrv_build_info{{version=\"{}\",commit=\"{}\"}} 1", env!("CARGO_PKG_VERSION"), namesrv_commit()),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    assert!(!text.contains("GET_ROUTEINFO_BY_TOPIC\",result=\"error\""), "a missing topic is no error:\n{text}");
    if cfg!(target_os = "linux") {
        // Process metrics: present, and plausible for this test process.
        let value = |name: &str| metric_value(&text, name);
        let rss = value("process_resident_memory_bytes");
        assert!(rss > 1e6, "{rss}");
        assert!(value("process_virtual_memory_bytes") >= rss, "virtual memory includes the resident set");
        let fds = value("process_open_fds");
        assert!(fds >= 3.0, "stdin, stdout, stderr at least: {fds}");
        assert!(value("process_max_fds") >= fds);
        assert!(value("process_cpu_seconds_total") >= 0.0, "counted in 10 ms ticks: a quick test process may show 0");
        // The test process started moments ago; the kernel's boot time is in whole seconds, hence the margin.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let started = value("process_start_time_seconds");
        assert!(started <= now + 2.0 && started > now - 3600.0, "{started} vs {now}");
    } else {
        assert!(!text.contains("\nprocess_"), "process metrics come from /proc only:\n{text}");
    }

    assert_eq!(get(http, "/health"), (200, "ok\n".into()));
    let (status, ready) = get(http, "/ready");
    assert_eq!(status, 200);
    let ready = json::parse(ready.as_bytes()).expect("valid JSON");
    assert_eq!(ready.get("ready").and_then(|v| v.as_bool()), Some(true));

    let (status, route) = get(http, "/routes/TopicA");
    assert_eq!(status, 200);
    assert!(route.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#), "{route}");
    assert_eq!(get(http, "/routes/missing").0, 404);
    let (status, cluster) = get(http, "/cluster");
    assert_eq!(status, 200);
    assert!(cluster.contains(r#""clusterAddrTable":{"C1":["b1"]}"#), "{cluster}");

    // Unregistering shows up as an eviction by cause.
    assert_eq!(c.request(broker.unregister()).code, ResponseCode::SUCCESS);
    let (_, text) = get(http, "/metrics");
    assert!(text.contains("namesrv_evictions_total{cause=\"unregistered\"} 1"), "{text}");
    assert!(text.contains("namesrv_brokers 0"), "{text}");
}

#[test]
fn not_ready_while_waiting_for_service() {
    let srv = start(|c| c.need_wait_for_service = true);
    let (status, body) = get(srv.http_addr().unwrap(), "/ready");
    assert_eq!(status, 503);
    assert!(body.contains("needWaitForService"), "{body}");
}

#[test]
fn address_server_hands_out_the_configured_name_servers() {
    let srv = start(|c| c.nsaddr_list = " 10.0.0.1:9876; 10.0.0.2:9876 ;".into());
    let http = srv.http_addr().unwrap();
    // What a Java client's TopAddressing reads: the list, ';'-separated.
    assert_eq!(get(http, "/rocketmq/nsaddr"), (200, "10.0.0.1:9876;10.0.0.2:9876".to_string()));
    assert_eq!(get(http, "/rocketmq/nsaddr?nofix=1").0, 200);
    assert_eq!(get(http, "/rocketmq/other").0, 404);
    // Off when unset.
    let off = start(|_| {});
    assert_eq!(get(off.http_addr().unwrap(), "/rocketmq/nsaddr").0, 404);
}

#[test]
fn http_is_off_by_default() {
    let srv = start(|c| c.http_address = String::new());
    assert!(srv.http_addr().is_none());
}

#[test]
fn graceful_shutdown_answers_go_away_then_stops() {
    let mut srv = start(|c| {
        c.enable_shutdown_gracefully = true;
        c.shutdown_wait_time_seconds = 1;
    });
    let addr = srv.local_addr();
    let http = srv.http_addr().unwrap();
    let mut c = Client::connect(addr);
    assert_eq!(c.request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO)).code, ResponseCode::SUCCESS);
    let server = srv.take();
    let stopper = std::thread::spawn(move || server.shutdown_gracefully());
    // While draining: 5.x clients (version > 475) are told to go away, older ones are still served.
    let go_away = || c.request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO)).code == ResponseCode::GO_AWAY;
    assert!(support::eventually(Duration::from_secs(2), go_away), "no GO_AWAY while draining");
    let r = c.request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO));
    assert_eq!((r.code, r.remark.as_deref()), (ResponseCode::GO_AWAY, Some("please go away")));
    let mut old = new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO);
    old.version = 317;
    assert_eq!(c.request(old).code, ResponseCode::SUCCESS);
    assert_eq!(get(http, "/ready").0, 503);
    assert!(stopper.join().unwrap(), "everything owed was delivered");
    assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err(), "listener closed");
}

#[test]
fn graceful_shutdown_without_go_away_is_quick_and_complete() {
    let _turn = crate::alone();
    let mut srv = start(|_| {});
    let mut c = Client::connect(srv.local_addr());
    let broker = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    assert_eq!(c.request(broker.register(&["A", "B"], 1, 513)).code, ResponseCode::SUCCESS);
    let started = std::time::Instant::now();
    assert!(srv.stop_gracefully());
    assert!(started.elapsed() < Duration::from_secs(3));
    c.expect_closed(Duration::from_secs(2));
}

/// A server with warm restart on (`routes.bin` beside its KV file), and the broker the warm-restart tests register.
fn warm_fixture() -> (InProc, Broker<'static>) {
    let fx = start(|c| {
        c.route_snapshot_path =
            std::path::Path::new(&c.kv_config_path).with_file_name("routes.bin").to_string_lossy().into();
    });
    (fx, Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 })
}

/// The warm-restart tests' route query: TopicA's code.
fn ask(c: &mut Client) -> i32 {
    c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "TopicA")).code
}

/// Asks until TopicA is gone (the expiry scan runs on the writer's own timer, after the clock moved); `why` if it
/// is still served 5 s later.
fn until_topic_gone(c: &mut Client, why: &str) {
    assert!(support::eventually(Duration::from_secs(5), || ask(c) == ResponseCode::TOPIC_NOT_EXIST), "{why}");
}

/// Warm restart: a restarted server serves the routes it had, provisionally, until the broker re-registers — a
/// client never sees TOPIC_NOT_EXIST for a live broker's topic (apache/rocketmq #5322). Without re-registration
/// the provisional broker expires like any other.
#[test]
fn warm_restart_serves_saved_routes_until_brokers_re_register() {
    let (mut fx, broker) = warm_fixture();

    let mut b = fx.client();
    assert_eq!(b.request(broker.register(&["TopicA", "TopicB"], 1, 513)).code, ResponseCode::SUCCESS);
    assert!(fx.stop_gracefully());
    drop(b);
    let saved = std::fs::metadata(&fx.config.route_snapshot_path).map(|m| m.len()).unwrap_or(0);
    assert!(saved > 0, "route tables saved at shutdown");

    // The port changes (port 0), as a client would reconnect after a restart.
    fx.restart();
    let mut c = fx.client();
    assert_eq!(ask(&mut c), ResponseCode::SUCCESS, "routes are there before the broker re-registers");
    let http = fx.http_addr().unwrap();
    let (status, ready) = get(http, "/ready");
    assert_eq!(status, 503);
    assert!(ready.contains("provisional"), "{ready}");
    assert!(get(http, "/metrics").1.contains("namesrv_provisional_brokers 1"));

    let mut b = fx.client();
    let r = b.request(broker.register(&["TopicA", "TopicB"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(ask(&mut c), ResponseCode::SUCCESS);
    assert_eq!(get(http, "/ready").0, 200);
    assert!(get(http, "/metrics").1.contains("namesrv_provisional_brokers 0"));
    assert!(fx.stop_gracefully());
    drop(b);

    // Restart once more; this time the broker never comes back: its saved routes expire after its timeout.
    fx.restart();
    let mut c = fx.client();
    assert_eq!(ask(&mut c), ResponseCode::SUCCESS);
    fx.clock.advance_ms(121_000);
    until_topic_gone(&mut c, "provisional broker never expired");
    assert_eq!(get(fx.http_addr().unwrap(), "/ready").0, 200);
}

/// Warm restart: a broker's timeout counts from when it was last heard from, not from the restart. One silent for
/// most of its timeout before the restart goes when the rest of it passes; one silent for longer is not served.
#[test]
fn warm_restart_counts_a_brokers_timeout_from_when_it_was_last_heard_from() {
    let (mut fx, broker) = warm_fixture();

    let mut b = fx.client();
    assert_eq!(b.request(broker.register(&["TopicA", "TopicB"], 1, 513)).code, ResponseCode::SUCCESS);
    fx.clock.advance_ms(100_000);
    assert!(fx.stop_gracefully());
    drop(b);
    fx.restart();
    let mut c = fx.client();
    assert_eq!(ask(&mut c), ResponseCode::SUCCESS, "20 s of its 120 s timeout are left");
    fx.clock.advance_ms(20_001);
    until_topic_gone(&mut c, "served past its timeout counted from its registration");
    drop(c);

    // Registered again, then silent for longer than its timeout while the name server is down.
    let mut b = fx.client();
    assert_eq!(b.request(broker.register(&["TopicA", "TopicB"], 1, 513)).code, ResponseCode::SUCCESS);
    assert!(fx.stop_gracefully());
    drop(b);
    fx.clock.advance_ms(120_001);
    fx.restart();
    let mut c = fx.client();
    assert_eq!(ask(&mut c), ResponseCode::TOPIC_NOT_EXIST, "a broker gone for longer than its timeout is replayed");
    let http = fx.http_addr().unwrap();
    assert_eq!(get(http, "/ready").0, 200);
    assert!(get(http, "/metrics").1.contains("namesrv_provisional_brokers 0"));
}

/// The binary itself: SIGTERM stops it gracefully with exit status 0.
#[test]
fn sigterm_stops_the_binary_with_status_0() {
    let dir = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let props = dir.path().join("namesrv.properties");
    let kv = dir.path().join("kvConfig.json");
    std::fs::write(&props, format!("listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={}\n", kv.display()))
        .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&props)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let listening = || TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok();
    assert!(support::eventually(Duration::from_secs(10), listening), "the binary never listened");
    let mut c = Client::connect(addr);
    assert_eq!(c.request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO)).code, ResponseCode::SUCCESS);
    let killed = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(killed.success());
    let Some(status) = support::eventually_some(Duration::from_secs(10), || child.try_wait().unwrap()) else {
        let _ = child.kill();
        panic!("did not stop within 10 s of SIGTERM");
    };
    assert_eq!(status.code(), Some(0));
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(out.contains("The Name Server boot success."), "{out}");
}

/// The re-registration tests' setup: a server with the HTTP endpoint, broker b1 of C1, a client, and how many
/// registrations were applied without decoding their body so far (from /metrics).
fn re_registration_setup() -> (InProc, Broker<'static>, Client, impl Fn() -> f64) {
    let srv = start(|_| {});
    let http = srv.http_addr().expect("HTTP enabled");
    let broker = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    let c = Client::connect(srv.local_addr());
    let same_bodies = move || metric_value(&get(http, "/metrics").1, "namesrv_registrations_same_body_total");
    (srv, broker, c, same_bodies)
}

/// A broker re-sending its last body at a new DataVersion (what it does every 30 s) is applied without decoding
/// the body; a body changed since, or routes changed under the broker since (a wiped write perm), are not.
#[test]
fn unchanged_re_registrations_skip_the_decode_and_changed_ones_do_not() {
    let (_srv, broker, mut c, same_bodies) = re_registration_setup();
    let perm_of = |c: &mut Client, topic: &str| {
        let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic));
        assert_eq!(r.code, ResponseCode::SUCCESS, "{topic}");
        let route = json::parse(&r.body).expect("route JSON");
        match route.get("queueDatas") {
            Some(json::Value::Array(queues)) => queues[0].get("perm").and_then(|p| p.as_i64()),
            other => panic!("queueDatas: {other:?}"),
        }
    };

    for counter in 1..=3 {
        assert_eq!(c.request(broker.register(&["TopicA", "TopicB"], counter, 513)).code, ResponseCode::SUCCESS);
    }
    assert_eq!(same_bodies(), 2.0, "the 2nd and 3rd registrations repeat the 1st body");

    let wipe = new_cmd(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", "b1");
    assert_eq!(c.request(wipe).code, ResponseCode::SUCCESS);
    assert_eq!(perm_of(&mut c, "TopicA"), Some(4));
    // Java re-puts every queue on a changed DataVersion, restoring the perm: so must we, the full way.
    assert_eq!(c.request(broker.register(&["TopicA", "TopicB"], 4, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(perm_of(&mut c, "TopicA"), Some(6));
    assert_eq!(same_bodies(), 2.0);

    assert_eq!(c.request(broker.register(&["TopicA", "TopicB", "TopicC"], 5, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(perm_of(&mut c, "TopicC"), Some(6));
    assert_eq!(same_bodies(), 2.0);
    assert_eq!(c.request(broker.register(&["TopicA", "TopicB", "TopicC"], 6, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(same_bodies(), 3.0);
}

#[test]
fn unchanged_compressed_re_registrations_are_recognised_too() {
    let (_srv, broker, mut c, same_bodies) = re_registration_setup();
    for counter in 1..=3 {
        assert_eq!(c.request(broker.register_zlib(&["TopicA", "TopicB"], counter, 513)).code, ResponseCode::SUCCESS);
    }
    assert_eq!(same_bodies(), 2.0, "the 2nd and 3rd registrations repeat the 1st body");
    // The same topics as JSON: another body, decoded; then a changed zlib body, decoded.
    assert_eq!(c.request(broker.register(&["TopicA", "TopicB"], 4, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(c.request(broker.register_zlib(&["TopicA", "TopicC"], 5, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(same_bodies(), 2.0);
    let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "TopicC"));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(c.request(broker.register_zlib(&["TopicA", "TopicC"], 6, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(same_bodies(), 3.0);
}

/// The chart history kept by the binary itself: with a 1 s step, route queries for a topic that exists and one that
/// does not, and a request code nobody serves, show up as the request rate, the not-found rate and an error rate by
/// response code, each apart; levels (brokers, topics, connections) and p99 come along. Polled with a deadline.
#[test]
fn history_charts_not_found_apart_from_errors_by_response_code() {
    let http_port = support::free_port();
    let http_address = format!("127.0.0.1:{http_port}");
    let srv = OurNamesrv::start_with(&[("httpAddress", &http_address), ("httpHistoryStepSeconds", "1")]);
    let http = SocketAddr::from(([127, 0, 0, 1], http_port));
    let broker = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    let mut c = Client::connect(srv.addr());
    // Two topics: Java refuses a single-topic registration that introduces a broker (§5.3 step 7).
    let r = c.request(broker.register(&["TopicA", "TopicB"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}\n{}", r.remark, srv.log());
    let series = |h: &serde_json::Value, key: &str| -> Vec<(i64, f64)> {
        let points = h["series"][key].as_array().unwrap_or_else(|| panic!("no series {key}: {h}"));
        points.iter().map(|p| (p[0].as_i64().expect("t"), p[1].as_f64().expect("v"))).collect()
    };
    let mut last = serde_json::Value::Null;
    let history = support::eventually_some(Duration::from_secs(20), || {
        // Traffic in every step, so that the step being sampled has some whatever the timing.
        for _ in 0..4 {
            let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "TopicA"));
            assert_eq!(r.code, ResponseCode::SUCCESS);
        }
        let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "nope"));
        assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST);
        assert_eq!(c.request(new_cmd(9999)).code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
        let (status, body) = get(http, "/api/history");
        assert_eq!(status, 200, "{body}\n{}", srv.log());
        let h: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let both = series(&h, "requests").iter().zip(series(&h, "notFound")).any(|(r, n)| n.1 > 0.0 && r.1 > n.1);
        let unsupported = h["series"]["errors"]["REQUEST_CODE_NOT_SUPPORTED"]
            .as_array()
            .is_some_and(|a| a.iter().any(|p| p[1].as_f64().unwrap_or(0.0) > 0.0));
        if both && unsupported {
            return Some(h);
        }
        last = h;
        None
    });
    let history = history.unwrap_or_else(|| panic!("no step with both rates in 20 s: {last}\n{}", srv.log()));
    assert_eq!(history["stepMs"], 1000);
    let requests = series(&history, "requests");
    assert!(requests.windows(2).all(|w| w[0].0 <= w[1].0), "oldest first: {requests:?}");
    let now_ms = history["nowMs"].as_i64().expect("nowMs");
    assert!(requests.last().is_some_and(|(t, _)| *t <= now_ms), "{history}");
    let errors = history["series"]["errors"].as_object().expect("errors by response code");
    assert!(!errors.contains_key("TOPIC_NOT_EXIST") && !errors.contains_key("SUCCESS"), "{history}");
    for (code, points) in errors {
        if code != "REQUEST_CODE_NOT_SUPPORTED" {
            assert!(points.as_array().unwrap().iter().all(|p| p[1] == 0.0), "no {code} was answered: {history}");
        }
    }
    assert_eq!(series(&history, "brokers").last().map(|p| p.1), Some(1.0), "{history}");
    assert_eq!(series(&history, "topics").last().map(|p| p.1), Some(2.0), "{history}");
    assert!(series(&history, "connections").last().is_some_and(|p| p.1 >= 1.0), "{history}");
    assert!(series(&history, "p99Ms").iter().any(|p| p.1 > 0.0), "{history}");
}
