//! The fleet view (`namesrvPeers`, decision 0029) end to end: two real processes of ours that name each other
//! see a KV entry only one of them holds, in `/api/fleet` and in the gauge, and stop seeing it once it is gone;
//! a peer that never answers and one that answers garbage are reported unreachable while the server serves on.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use namesrv::protocol::{RequestCode, ResponseCode};
use serde_json::Value;
use support::client::Client;
use support::inproc::InProc;
use support::proc::Managed;

/// Bounds the test's runtime only: with fleetCheckSeconds=1 a drift is confirmed within about two checks.
const WAIT: Duration = Duration::from_secs(20);

struct Node {
    port: u16,
    http: u16,
    _proc: Managed,
    _dir: tempfile::TempDir,
}

impl Node {
    fn start(port: u16, http: u16, peers: &str) -> Node {
        let dir = tempfile::Builder::new().prefix("fleet-").tempdir().expect("temp dir");
        let props: Vec<(String, String)> = [
            ("listenPort", port.to_string()),
            ("bindAddress", "127.0.0.1".to_string()),
            ("kvConfigPath", dir.path().join("kvConfig.json").display().to_string()),
            ("httpAddress", format!("127.0.0.1:{http}")),
            ("namesrvPeers", peers.to_string()),
            ("fleetCheckSeconds", "1".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let file = dir.path().join("namesrv.properties");
        support::write_properties(&file, &props);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"));
        cmd.arg("-c").arg(&file).current_dir(dir.path()).env("HOME", dir.path());
        let mut proc = Managed::spawn("mqnamesrv", cmd, &log_path(dir.path()));
        proc.wait_accepting(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(20));
        Node { port, http, _proc: proc, _dir: dir }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn http_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.http))
    }
}

fn log_path(dir: &Path) -> std::path::PathBuf {
    dir.join("mqnamesrv.log")
}

fn fleet(http: SocketAddr) -> Value {
    let body = support::observe::http_get(http, "/api/fleet").expect("/api/fleet");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The `kv` drift entry of the one peer in `view`.
fn kv_drift(view: &Value) -> Option<Value> {
    view["peers"][0]["drift"].as_array()?.iter().find(|d| d["aspect"] == "kv").cloned()
}

fn kv(addr: SocketAddr, code: i32, value: Option<&str>) {
    let mut c = Client::connect(addr);
    let mut cmd = c.cmd(code).with_ext("namespace", "fleet-ns").with_ext("key", "only-on-a");
    if let Some(v) = value {
        cmd = cmd.with_ext("value", v);
    }
    assert_eq!(c.request(cmd).code, ResponseCode::SUCCESS);
}

#[test]
fn a_kv_entry_on_one_server_only_is_drift_on_both_until_it_is_removed() {
    let (pa, pb) = (support::free_port(), support::free_port());
    let (qa, qb) = (support::free_port(), support::free_port());
    // Both list the whole fleet, themselves included: each must skip its own address.
    let peers = format!("127.0.0.1:{pa};127.0.0.1:{pb}");
    let a = Node::start(pa, qa, &peers);
    let b = Node::start(pb, qb, &peers);
    let (ha, hb) = (a.http_addr(), b.http_addr());

    // Agreeing fleet: each sees one peer, reachable, with no drift in any aspect.
    let agree = |n: &Node, other: &Node| {
        let v = fleet(n.http_addr());
        v["enabled"] == true
            && v["intervalMs"] == 1000
            && v["peers"].as_array().map(Vec::len) == Some(1)
            && v["peers"][0]["addr"] == other.addr().to_string()
            && v["peers"][0]["reachable"] == true
            && v["peers"][0]["drift"].as_array().is_some_and(|d| d.len() == 4 && d.iter().all(|x| x["count"] == 0))
    };
    assert!(support::eventually(WAIT, || agree(&a, &b) && agree(&b, &a)), "{}\n{}", fleet(ha), fleet(hb));

    kv(a.addr(), RequestCode::PUT_KV_CONFIG, Some("v1"));
    let named = |http: SocketAddr, list: &str| {
        kv_drift(&fleet(http)).is_some_and(|d| d["count"] == 1 && d[list] == serde_json::json!(["fleet-ns/only-on-a"]))
    };
    assert!(support::eventually(WAIT, || named(ha, "onlyHere")), "{}", fleet(ha));
    assert!(support::eventually(WAIT, || named(hb, "onlyThere")), "{}", fleet(hb));
    let gauge = format!("namesrv_fleet_drift{{peer=\"{}\",aspect=\"kv\"}}", b.addr());
    assert_eq!(support::observe::metric(ha, &gauge), 1.0);
    let up = format!("namesrv_fleet_peer_up{{peer=\"{}\"}}", b.addr());
    assert_eq!(support::observe::metric(ha, &up), 1.0);
    // The health verdicts say it in words, and as their gauge.
    let verdict = format!("name server {} of the fleet differs from this one: 1 kv", b.addr());
    assert!(fleet_verdicts(ha).contains(&verdict), "{:?}", fleet_verdicts(ha));
    let drift_gauge = "namesrv_health_verdicts{kind=\"fleet_drift\",severity=\"warning\"}";
    assert_eq!(support::observe::metric(ha, drift_gauge), 1.0);

    // The same key with another value on B: now "different" on both.
    kv(b.addr(), RequestCode::PUT_KV_CONFIG, Some("v2"));
    assert!(support::eventually(WAIT, || named(ha, "different") && named(hb, "different")), "{}", fleet(ha));

    kv(a.addr(), RequestCode::DELETE_KV_CONFIG, None);
    kv(b.addr(), RequestCode::DELETE_KV_CONFIG, None);
    let gone = |http: SocketAddr| kv_drift(&fleet(http)).is_some_and(|d| d["count"] == 0);
    assert!(support::eventually(WAIT, || gone(ha) && gone(hb)), "{}\n{}", fleet(ha), fleet(hb));
    assert_eq!(support::observe::metric(ha, &gauge), 0.0);
    assert_eq!(fleet_verdicts(ha), Vec::<String>::new());
}

/// The titles of the `fleet_drift` health verdicts.
fn fleet_verdicts(http: SocketAddr) -> Vec<String> {
    let (status, _, body) = support::observe::http_response(http, "/api/health").expect("an answer");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    v["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .filter(|v| v["kind"] == "fleet_drift")
        .map(|v| v["title"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A listener that accepts and holds every connection without a byte (`garbage` false) or answers every read with
/// bytes that are no frame (`garbage` true), until the test ends.
fn bad_peer(garbage: bool, stop: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    if garbage {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut buf = [0u8; 1024];
                        let _ = s.read(&mut buf);
                        // A length prefix of 2 GiB, then noise: no frame, and nothing to allocate for.
                        let _ = s.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 9, b'{', b'x']);
                    }
                    held.push(s);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    addr
}

#[test]
fn a_hung_peer_and_a_garbage_peer_are_unreachable_and_hurt_nothing() {
    let _turn = crate::alone();
    let stop = Arc::new(AtomicBool::new(false));
    let hung = bad_peer(false, stop.clone());
    let garbage = bad_peer(true, stop.clone());
    let srv = InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        c.namesrv_peers = format!("{hung},{garbage}");
        c.fleet_check_seconds = 1;
    });
    let http = srv.http_addr().expect("http");
    let reported = |addr: SocketAddr, words: &str| {
        let v = fleet(http);
        v["peers"].as_array().is_some_and(|ps| {
            ps.iter().any(|p| {
                p["addr"] == addr.to_string()
                    && p["reachable"] == false
                    && p["checkedMs"].as_i64().is_some_and(|t| t > 0)
                    && p["error"].as_str().is_some_and(|e| e.contains(words))
                    && p["drift"] == serde_json::json!([])
            })
        })
    };
    assert!(support::eventually(WAIT, || reported(garbage, "undecodable")), "{}", fleet(http));
    assert!(support::eventually(WAIT, || reported(hung, "no answer within")), "{}", fleet(http));
    assert_eq!(support::observe::metric(http, &format!("namesrv_fleet_peer_up{{peer=\"{hung}\"}}")), 0.0);
    let unreadable = fleet_verdicts(http);
    assert!(
        unreadable
            .iter()
            .any(|t| t.contains(&format!("{hung} of the fleet cannot be read")) && t.contains("no answer within")),
        "{unreadable:?}"
    );

    // Meanwhile the server answers at once: the fleet thread's waits are its own.
    for _ in 0..20 {
        let mut c = srv.client();
        let started = Instant::now();
        let cmd =
            c.cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "n").with_ext("key", "k").with_ext("value", "v");
        assert_eq!(c.request(cmd).code, ResponseCode::SUCCESS);
        assert!(started.elapsed() < Duration::from_secs(1), "a write waited {:?}", started.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn without_peers_the_view_is_off() {
    let srv = InProc::start(|c| c.http_address = "127.0.0.1:0".into());
    let v = fleet(srv.http_addr().expect("http"));
    assert_eq!(v, serde_json::json!({ "enabled": false, "intervalMs": 0, "peers": [] }));
    let text = support::observe::http_get(srv.http_addr().unwrap(), "/metrics").unwrap();
    assert!(!text.contains("namesrv_fleet_"), "{text}");
}

/// A stand-in for Java's name server in front of one of ours: FLEET_FACTS and FLEET_ROUTES are answered
/// REQUEST_CODE_NOT_SUPPORTED, as Java answers a code it does not know; every other request is passed to `upstream` and its answer back.
fn java_like(upstream: SocketAddr, stop: Arc<AtomicBool>) -> SocketAddr {
    use bytes::BytesMut;
    use namesrv::protocol::{frame, RemotingCommand};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut down, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let _ = down.set_nonblocking(false);
            let _ = down.set_read_timeout(Some(Duration::from_secs(5)));
            std::thread::spawn(move || {
                let mut up = Client::connect(upstream);
                let mut buf = BytesMut::new();
                let mut chunk = [0u8; 16 * 1024];
                loop {
                    while let Ok(Some(req)) = frame::decode(&mut buf, 16 << 20) {
                        use namesrv::test_support::fleet::wire::{FLEET_FACTS, FLEET_ROUTES};
                        let answer = if req.code == FLEET_FACTS || req.code == FLEET_ROUTES {
                            let remark = format!(" request type {} not supported", req.code);
                            RemotingCommand::response_to(&req, ResponseCode::REQUEST_CODE_NOT_SUPPORTED, Some(remark))
                        } else {
                            up.try_request(req, Duration::from_secs(5)).expect("upstream answers")
                        };
                        let mut out = BytesMut::new();
                        frame::encode(&answer, &mut out);
                        if down.write_all(&out).is_err() {
                            return;
                        }
                    }
                    match down.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// The aspect `name`'s drift entry of the one peer in `view`.
fn aspect(view: &Value, name: &str) -> Value {
    view["peers"][0]["drift"]
        .as_array()
        .and_then(|d| d.iter().find(|x| x["aspect"] == name).cloned())
        .unwrap_or_default()
}

#[test]
fn a_java_peer_is_compared_through_the_standard_codes() {
    use support::registration::Broker;
    let stop = Arc::new(AtomicBool::new(false));
    let b = InProc::start(|c| c.support_acting_master = true);
    let mut c = b.client();
    let broker = Broker { cluster: "C1", name: "only-on-b", addr: "127.0.0.1:10911", id: 0 };
    let r = c.request(broker.register(&["TopicOnB", "TopicOnB2"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
    let java = java_like(b.addr(), stop.clone());
    let a = InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        c.namesrv_peers = java.to_string();
        c.fleet_check_seconds = 1;
    });
    kv(a.addr(), RequestCode::PUT_KV_CONFIG, Some("v1"));
    let http = a.http_addr().expect("http");
    let seen = || {
        let v = fleet(http);
        aspect(&v, "kv")["onlyHere"] == serde_json::json!(["fleet-ns/only-on-a"])
            && aspect(&v, "topics")["onlyThere"] == serde_json::json!(["TopicOnB", "TopicOnB2"])
            && aspect(&v, "brokers")["onlyThere"] == serde_json::json!(["C1/only-on-b/0"])
            && aspect(&v, "config")["different"] == serde_json::json!(["supportActingMaster"])
    };
    assert!(support::eventually(WAIT, seen), "{}", fleet(http));
    stop.store(true, Ordering::Relaxed);
}

/// What one check costs the peer, at 1000 topics: printed for docs/decisions/0029, and bounded here.
#[test]
fn a_check_costs_the_peer_one_small_request_when_in_agreement() {
    use namesrv::test_support::fleet::facts::{Facts, Items};
    use namesrv::test_support::fleet::peer::check;
    use support::registration::Broker;
    let srv = InProc::start(|_| {});
    let topics: Vec<String> = (0..1000).map(|i| format!("BenchmarkTopic_{i:04}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let mut c = srv.client();
    let broker = Broker { cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.1:10911", id: 0 };
    assert_eq!(c.request(broker.register(&names, 1, 513)).code, ResponseCode::SUCCESS);
    let addr = srv.addr().to_string();
    let same = Facts::from_snapshot(&srv.snapshot());
    let empty = Facts { aspects: [Some(Items::new()), Some(Items::new()), Some(Items::new()), Some(Items::new())] };

    let agree = check(&addr, &same, false, None).expect("in agreement");
    let drift = check(&addr, &empty, false, None).expect("everything differs");
    let java = check(&addr, &empty, true, None).expect("standard codes");
    eprintln!(
        "fleet check at 1000 topics (requests, bytes sent, bytes answered): agreeing {} {} {}; all differing {} {} {}; \
         standard codes {} {} {}",
        agree.requests, agree.sent, agree.bytes, drift.requests, drift.sent, drift.bytes, java.requests, java.sent,
        java.bytes
    );
    // The peer builds its facts on a reactor per request: the round trip bounds that work.
    let started = Instant::now();
    for _ in 0..50 {
        check(&addr, &same, false, None).expect("in agreement");
    }
    eprintln!("fleet check at 1000 topics: {:?} per agreeing round trip (connect included)", started.elapsed() / 50);
    assert!(agree.ours && agree.requests == 1 && agree.bytes < 1024, "{} B", agree.bytes);
    assert!(drift.requests == 1 && drift.bytes > 20_000, "{} B", drift.bytes);
    assert!(!java.ours && java.requests == 4, "{}", java.requests);
}

/// A peer with ACL 2.0 on: checked with `innerClientAuthenticationCredentials`, which it accepts; a server without
/// the credential is refused, and says so.
#[test]
fn peers_that_need_accounts_are_asked_with_the_inner_credential() {
    let inner = r#"{"accessKey":"inner-ak","secretKey":"inner-sk-123"}"#;
    let guarded = InProc::start(|c| {
        c.authentication_enabled = true;
        c.inner_client_authentication_credentials = inner.into();
        c.auth_users_path = c.kv_config_path.replace("kvConfig.json", "authUsers.json");
    });
    let peer = guarded.addr();
    let signed = InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        c.namesrv_peers = peer.to_string();
        c.fleet_check_seconds = 1;
        c.inner_client_authentication_credentials = inner.into();
    });
    let unsigned = InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        c.namesrv_peers = peer.to_string();
        c.fleet_check_seconds = 1;
    });
    let (hs, hu) = (signed.http_addr().expect("http"), unsigned.http_addr().expect("http"));
    let checked = |http: SocketAddr| fleet(http)["peers"][0]["checkedMs"].as_i64().is_some_and(|t| t > 0);
    assert!(support::eventually(WAIT, || checked(hs) && checked(hu)), "{}\n{}", fleet(hs), fleet(hu));
    assert_eq!(fleet(hs)["peers"][0]["reachable"], true, "{}", fleet(hs));
    let refused = fleet(hu);
    assert_eq!(refused["peers"][0]["reachable"], false, "{refused}");
    assert!(refused["peers"][0]["error"].as_str().is_some_and(|e| e.contains("answered request 32047")), "{refused}");
}

/// With ACL off and `adminAllowList` set, FLEET_FACTS is answered to the addresses of `namesrvPeers` and of the
/// allow-list only: anybody else gets NO_PERMISSION with a remark that says why.
#[test]
fn fleet_facts_are_answered_to_peers_and_admins_only() {
    use namesrv::test_support::allow_list::AllowList;
    use namesrv::test_support::fleet::wire::FLEET_FACTS;
    let admins = |list: &str| AllowList::parse(list).unwrap();
    let elsewhere = InProc::start(|c| {
        c.namesrv_peers = "192.0.2.7:9876".into();
        c.admin_allow_list = admins("192.0.2.0/24");
    });
    let mut c = elsewhere.client();
    let cmd = c.cmd(FLEET_FACTS);
    let r = c.request(cmd);
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{:?}", r.remark);
    assert!(r.remark.as_deref().is_some_and(|m| m.contains("namesrvPeers")), "{:?}", r.remark);
    assert!(r.body.is_empty());
    let peer = InProc::start(|c| {
        c.namesrv_peers = "192.0.2.7:9876;127.0.0.1:1".into();
        c.admin_allow_list = admins("192.0.2.0/24");
    });
    let admin = InProc::start(|c| c.admin_allow_list = admins("192.0.2.0/24,127.0.0.1"));
    for srv in [&peer, &admin] {
        let mut c = srv.client();
        let cmd = c.cmd(FLEET_FACTS);
        let r = c.request(cmd);
        assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
        let body: Value = serde_json::from_slice(&r.body).expect("JSON");
        assert!(body["topics"]["digest"].is_string(), "{body}");
    }
}
