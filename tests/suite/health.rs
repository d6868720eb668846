//! Health verdicts end to end: brokers registered over the wire with a server in-process, the verdicts read from
//! `/api/health` and `/metrics` as the console and Prometheus read them, and `mqnamesrv admin health`'s exit codes
//! (the built binary) as a cron job or probe sees them.

use crate::support;

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use namesrv::protocol::{RequestCode, ResponseCode};
use serde_json::Value;
use support::client::Client;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};

const MASTER: Broker = Broker { cluster: "HealthCluster", name: "group-a", addr: "127.0.0.1:10911", id: 0 };
const SLAVE: Broker = Broker { cluster: "HealthCluster", name: "group-a", addr: "127.0.0.1:10921", id: 1 };
const OTHER: Broker = Broker { cluster: "HealthCluster", name: "group-b", addr: "127.0.0.1:10931", id: 0 };

fn start() -> InProc {
    InProc::start(|c| c.http_address = "127.0.0.1:0".into())
}

fn get(addr: SocketAddr, path: &str) -> String {
    let (status, _, body) = support::observe::http_response(addr, path).expect("an HTTP answer");
    assert_eq!(status, 200, "{path}: {body}");
    body
}

fn health(addr: SocketAddr) -> Value {
    let body = get(addr, "/api/health");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn kinds(h: &Value) -> Vec<String> {
    h["verdicts"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap().to_string()).collect()
}

/// Each broker on its own connection, as real brokers are: closing one evicts that broker only. (A registration
/// of a single topic cannot add a member, as in Java: every broker here carries two or more.)
fn register(srv: &InProc, b: &Broker, topics: &[&str]) -> Client {
    let mut c = Client::connect(srv.addr());
    let r = c.request(b.register(topics, 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
    c
}

#[test]
fn a_group_that_loses_its_master_is_a_critical_verdict_within_a_second() {
    let _turn = crate::alone();
    let srv = start();
    let http = srv.http_addr().unwrap();
    let master = register(&srv, &MASTER, &["OrdersTopic", "SharedTopic"]);
    let _slave = register(&srv, &SLAVE, &["OrdersTopic", "SharedTopic"]);
    let _other = register(&srv, &OTHER, &["SharedTopic", "OtherTopic"]);
    let h = health(http);
    assert_eq!((h["status"].as_str(), kinds(&h)), (Some("ok"), vec![]), "{h:#}");

    // The master's connection closes, as when its process dies: the writer evicts it at once.
    drop(master);
    let mut last = Value::Null;
    let h = support::eventually_some(Duration::from_secs(1), || {
        let h = health(http);
        if kinds(&h).contains(&"no_master".to_string()) {
            return Some(h);
        }
        last = h;
        None
    });
    let h = h.unwrap_or_else(|| panic!("no no_master verdict a second after the close: {last:#}"));
    assert_eq!(h["status"], "critical");
    let v = h["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "no_master").unwrap();
    assert_eq!((v["cluster"].as_str(), v["brokerName"].as_str()), (Some("HealthCluster"), Some("group-a")));
    assert_eq!(v["topics"], serde_json::json!(["OrdersTopic", "SharedTopic"]));
    assert!(v["title"].as_str().unwrap().contains("id 1 at 127.0.0.1:10921"), "{v:#}");
    // OrdersTopic lives on group-a alone: nobody can write to it. SharedTopic still has group-b's master.
    let w = h["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "no_writable_queue").unwrap();
    assert_eq!((w["topics"].clone(), w["severity"].as_str()), (serde_json::json!(["OrdersTopic"]), Some("critical")));
    // The master is remembered as lost.
    let lost = h["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "brokers_lost").unwrap();
    assert!(lost["title"].as_str().unwrap().contains("connection closed"), "{lost:#}");

    // Prometheus sees the same.
    let metrics = get(http, "/metrics");
    for line in [
        "namesrv_health_verdicts{kind=\"no_master\",severity=\"critical\"} 1",
        "namesrv_health_status 2",
        "namesrv_health_unwritable_topics 1",
    ] {
        assert!(metrics.contains(line), "no `{line}` in /metrics");
    }

    // The master comes back: every verdict goes (the loss too, as the broker is live again).
    let _master = register(&srv, &MASTER, &["OrdersTopic", "SharedTopic"]);
    let h = health(http);
    assert_eq!((h["status"].as_str(), kinds(&h)), (Some("ok"), vec![]), "{h:#}");
}

#[test]
fn wiped_write_permission_and_late_heartbeats_are_warnings() {
    let srv = start();
    let http = srv.http_addr().unwrap();
    let mut a = register(&srv, &MASTER, &["OrdersTopic", "AuditTopic"]);
    let _b = register(&srv, &OTHER, &["OtherTopic", "BillingTopic"]);
    let wipe = new_cmd(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", "group-b");
    assert_eq!(a.request(wipe).code, ResponseCode::SUCCESS);
    let h = health(http);
    assert_eq!(h["status"], "warning", "{h:#}");
    assert_eq!(kinds(&h), vec!["write_wiped", "no_writable_queue"], "{h:#}");
    assert_eq!(h["verdicts"][0]["brokerName"], "group-b");

    // 61 s without a heartbeat (the timeout is 120 s): late. group-a's master heartbeats and is not.
    srv.clock.advance_ms(61_000);
    let hb = new_cmd(RequestCode::BROKER_HEARTBEAT)
        .with_ext("clusterName", MASTER.cluster)
        .with_ext("brokerAddr", MASTER.addr)
        .with_ext("brokerName", MASTER.name);
    assert_eq!(a.request(hb).code, ResponseCode::SUCCESS);
    let h = health(http);
    let late: Vec<&Value> =
        h["verdicts"].as_array().unwrap().iter().filter(|v| v["kind"] == "heartbeat_late").collect();
    assert_eq!(late.len(), 1, "{h:#}");
    assert_eq!((late[0]["addr"].as_str(), late[0]["severity"].as_str()), (Some(OTHER.addr), Some("warning")));
}

/// `mqnamesrv admin health --http ADDR` with no account and no environment.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("admin")
        .arg("health")
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("ROCKETMQ_HOME")
        .env_remove("NAMESRV_HTTP")
        .output()
        .expect("run mqnamesrv");
    let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

#[test]
fn admin_health_exits_0_when_well_1_when_not_and_2_when_it_cannot_tell() {
    let srv = start();
    let http = srv.http_addr().unwrap().to_string();
    let master = register(&srv, &MASTER, &["OrdersTopic", "AuditTopic"]);
    let _slave = register(&srv, &SLAVE, &["OrdersTopic", "AuditTopic"]);
    let (code, out, err) = cli(&["--http", &http]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("OK  no verdicts"), "{out}");

    drop(master);
    // The eviction is applied by the writer after the close is seen; wait for it on the API, not by a sleep.
    let verdict = || kinds(&health(srv.http_addr().unwrap())).contains(&"no_master".to_string());
    assert!(support::eventually(Duration::from_secs(5), verdict), "no verdict after the close");
    let (code, out, err) = cli(&["--http", &http]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("CRITICAL") && out.contains("no_master") && out.contains("group-a has no master"), "{out}");
    let (code, json, _) = cli(&["--http", &http, "--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["health"]["status"], "critical", "{json}");

    // A second server that cannot be read: the worst outcome wins, and the line says why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let (code, out, _) = cli(&["--http", &format!("{http};{closed}"), "--timeout", "2000"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("{closed}  UNKNOWN  cannot connect")), "{out}");
    // Without an address it says where to find one.
    let (code, _, err) = cli(&[]);
    assert_eq!(code, 2);
    assert!(err.contains("--http HOST:PORT") && err.contains("NAMESRV_HTTP"), "{err}");
}
