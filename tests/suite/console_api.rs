//! The web console's page and the JSON it reads, end to end over HTTP (the page itself in a real browser is
//! `interop_console`, a peer suite).

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::{RequestCode, ResponseCode};
use serde_json::Value;
use support::client::Client;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker, T0};

fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        tweak(c);
    })
}

/// Status, head and body of a GET.
fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    support::observe::http_response(addr, path).expect("an HTTP answer")
}

fn get_json(addr: SocketAddr, path: &str) -> Value {
    let (status, _, body) = get(addr, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

#[test]
fn the_page_is_served_from_the_binary_with_a_strict_policy() {
    let srv = start(|_| {});
    let (status, head, body) = get(srv.http_addr().unwrap(), "/");
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: text/html"), "{head}");
    let csp = head.lines().find(|l| l.starts_with("Content-Security-Policy:")).expect("a CSP header");
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"), "{csp}");
    assert!(body.starts_with("<!doctype html>"), "{}", &body[..body.len().min(80)]);
    // Nothing fetched from elsewhere.
    for external in ["http://", "https://", "//cdn"] {
        assert!(!body.contains(&format!("src=\"{external}")), "the page loads {external}");
    }
}

#[test]
fn brokers_with_liveness_topics_kv_and_config() {
    let srv = start(|c| c.tls_server_key_password = "hunter2".into());
    let http = srv.http_addr().unwrap();
    let mut c = Client::connect(srv.local_addr());
    let b = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    assert_eq!(c.request(b.register(&["TopicA", "TopicB", "Other"], 7, 513)).code, ResponseCode::SUCCESS);
    let put =
        new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k").with_ext("value", "v");
    assert_eq!(c.request(put).code, ResponseCode::SUCCESS);
    srv.clock.advance_ms(4_000);

    let v = get_json(http, "/api/brokers");
    let cluster = &v["clusters"][0];
    assert_eq!(cluster["name"], "C1");
    let m = &cluster["brokers"][0];
    assert_eq!(
        (m["brokerName"].as_str(), m["brokerId"].as_i64(), m["addr"].as_str()),
        (Some("b1"), Some(0), Some("127.0.0.1:10911"))
    );
    assert_eq!(m["live"], true);
    // The writer's own record: registered at T0, the clock is 4 s on.
    assert_eq!(m["heartbeatAgeMs"], 4_000);
    assert_eq!(m["timeoutMs"], 120_000);
    assert_eq!(m["dataVersion"]["counter"], 7);
    assert_eq!(m["dataVersion"]["timestamp"], T0);
    assert_eq!(m["topicCount"], 3);
    assert_eq!(m["haServerAddr"], "127.0.0.1:10912");

    let v = get_json(http, "/api/topics?q=topic&limit=1");
    assert_eq!((v["total"].as_u64(), v["matched"].as_u64()), (Some(3), Some(2)));
    assert_eq!(v["topics"], serde_json::json!(["TopicA"]));
    assert_eq!(get_json(http, "/api/topics")["topics"], serde_json::json!(["Other", "TopicA", "TopicB"]));

    let v = get_json(http, "/api/kv");
    assert_eq!(v["namespaces"][0]["namespace"], "NS");
    assert_eq!(v["namespaces"][0]["entries"][0], serde_json::json!({"key": "k", "value": "v"}));

    let v = get_json(http, "/api/config");
    let value =
        |k: &str| v["entries"].as_array().unwrap().iter().find(|e| e["key"] == k).map(|e| e["value"].clone()).expect(k);
    assert_eq!(value("listenPort"), "0");
    // A secret is not served at all, only named.
    assert!(v["entries"].as_array().unwrap().iter().all(|e| e["key"] != "tls.server.keyPassword"));
    assert!(v["hidden"].as_array().unwrap().contains(&serde_json::json!("tls.server.keyPassword")));
    assert!(!v.to_string().contains("hunter2"));

    let v = get_json(http, "/api/overview");
    assert_eq!((v["topics"].as_u64(), v["brokers"].as_u64(), v["ready"].as_bool()), (Some(3), Some(1), Some(true)));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));

    // The broker goes: listed no more.
    drop(c);
    assert!(support::eventually(Duration::from_secs(5), || get_json(http, "/api/brokers")["clusters"]
        .as_array()
        .is_some_and(|c| c.is_empty())));
}

#[test]
fn with_acl_on_the_data_needs_an_account_and_probes_stay_open() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(&acl, "accounts:\n  - accessKey: operator\n    secretKey: 12345678\n    admin: false\n").unwrap();
    let kv = dir.path().join("kvConfig.json");
    std::fs::write(&kv, r#"{"configTable":{"NS":{"k":"secret value"}}}"#).unwrap();
    let srv = start(|c| {
        c.acl_enable = true;
        c.acl_file = acl.display().to_string();
        c.kv_config_path = kv.display().to_string();
        c.extra.insert("secretKey".into(), "do-not-serve".into());
    });
    let http = srv.http_addr().unwrap();
    for (i, path) in [
        "/",
        "/api/kv",
        "/api/config",
        "/api/overview",
        "/api/topics",
        "/api/brokers",
        "/events",
        "/routes/T",
        "/cluster",
        "/nope",
    ]
    .into_iter()
    .enumerate()
    {
        let (status, head, body) = get(http, path);
        assert_eq!(status, 401, "{path} without credentials: {body}");
        assert!(head.contains("Www-Authenticate: Basic realm=\"namesrv\""), "{path}: {head}");
        assert!(!body.contains("secret value"), "{path}");
        // Four wrong logins: a fifth would throttle this address for 10 s (`wrong_logins_are_throttled_per_address`).
        if i >= 2 {
            continue;
        }
        let (status, _, _) = support::observe::http_response_as(http, path, "operator", "1234567").unwrap();
        assert_eq!(status, 401, "{path} with a wrong secret");
        let (status, _, _) = support::observe::http_response_as(http, path, "nobody", "12345678").unwrap();
        assert_eq!(status, 401, "{path} as an unknown account");
    }
    // Probes and the address list stay open; /metrics too unless httpMetricsAuth.
    for path in ["/health", "/ready", "/metrics"] {
        assert_eq!(get(http, path).0, 200, "{path}");
    }
    // An account (a reader is enough: nothing here writes) sees the data, secrets still left out.
    let as_operator = |path: &str| {
        let (status, _, body) = support::observe::http_response_as(http, path, "operator", "12345678").unwrap();
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    assert_eq!(
        as_operator("/api/kv")["namespaces"][0]["entries"][0],
        serde_json::json!({"key": "k", "value": "secret value"})
    );
    let config = as_operator("/api/config").to_string();
    assert!(!config.contains("do-not-serve"), "{config}");
    let hidden = as_operator("/api/config")["hidden"].clone();
    assert!(hidden.as_array().unwrap().contains(&serde_json::json!("secretKey")), "{config}");
    let metrics = get(http, "/metrics").2;
    assert!(metrics.contains("namesrv_http_refused_total{reason=\"no_credentials\"} 10"), "{metrics}");
    assert!(metrics.contains("namesrv_http_refused_total{reason=\"bad_credentials\"} 4"), "{metrics}");
}

/// Five wrong logins from one address within 10 s: every request of it that needs an account gets 429 with
/// `Retry-After` for the rest of the window, right credentials included; probes stay open; it is counted.
#[test]
fn wrong_logins_are_throttled_per_address() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(&acl, "accounts:\n  - accessKey: operator\n    secretKey: 12345678\n").unwrap();
    let srv = start(|c| {
        c.acl_enable = true;
        c.acl_file = acl.display().to_string();
    });
    let http = srv.http_addr().unwrap();
    let as_user = |user: &str, password: &str| support::observe::http_response_as(http, "/api/kv", user, password);
    assert_eq!(as_user("operator", "12345678").unwrap().0, 200);
    for i in 0..5 {
        assert_eq!(as_user("operator", &format!("guess{i}")).unwrap().0, 401, "guess {i}");
    }
    for (user, password) in [("operator", "guess5"), ("operator", "12345678"), ("nobody", "x")] {
        let (status, head, body) = as_user(user, password).unwrap();
        assert_eq!(status, 429, "{user}: {body}");
        let wait: u64 = head
            .lines()
            .find_map(|l| l.strip_prefix("Retry-After: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Retry-After in {head}"));
        assert!((1..=10).contains(&wait), "{head}");
        assert!(body.contains("failed logins"), "{body}");
    }
    assert_eq!(get(http, "/health").0, 200);
    let metrics = get(http, "/metrics").2;
    assert!(metrics.contains("namesrv_http_refused_total{reason=\"bad_credentials\"} 5"), "{metrics}");
    assert!(metrics.contains("namesrv_http_refused_total{reason=\"login_throttled\"} 3"), "{metrics}");
}

#[test]
fn metrics_need_an_account_when_the_operator_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(&acl, "accounts:\n  - accessKey: operator\n    secretKey: 12345678\n").unwrap();
    let srv = start(|c| {
        c.acl_enable = true;
        c.acl_file = acl.display().to_string();
        c.http_metrics_auth = true;
    });
    let http = srv.http_addr().unwrap();
    assert_eq!(get(http, "/metrics").0, 401);
    assert_eq!(support::observe::http_response_as(http, "/metrics", "operator", "12345678").unwrap().0, 200);
    assert_eq!(get(http, "/health").0, 200);
}

#[test]
fn topics_are_paged_filtered_and_in_natural_order_over_http() {
    let srv = start(|_| {});
    let http = srv.http_addr().unwrap();
    let mut c = Client::connect(srv.local_addr());
    let many: Vec<String> = (0..30).map(|i| format!("Orders_{i}")).collect();
    let mut topics: Vec<&str> = many.iter().map(String::as_str).collect();
    topics.extend(["%RETRY%group", "%DLQ%group", "TBW102", "C1", "b1"]);
    let b = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    assert_eq!(c.request(b.register(&topics, 1, 513)).code, ResponseCode::SUCCESS);
    let b2 = Broker { cluster: "C2", name: "b2", addr: "127.0.0.1:10921", id: 0 };
    assert_eq!(c.request(b2.register(&["Payments_2", "Payments_10"], 1, 513)).code, ResponseCode::SUCCESS);

    let names = |v: &Value| -> Vec<String> {
        v["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
    };
    let page = get_json(http, "/api/topics?q=orders_&offset=0&limit=12");
    assert_eq!(page["matched"], 30);
    assert_eq!(names(&page)[..4], ["Orders_0", "Orders_1", "Orders_2", "Orders_3"], "natural order: {page}");
    let page = get_json(http, "/api/topics?q=orders_&offset=24&limit=12");
    assert_eq!(names(&page), (24..30).map(|i| format!("Orders_{i}")).collect::<Vec<_>>());
    assert_eq!(get_json(http, "/api/topics?kind=retry")["topics"], serde_json::json!(["%RETRY%group"]));
    assert_eq!(get_json(http, "/api/topics?kind=dlq")["topics"], serde_json::json!(["%DLQ%group"]));
    assert_eq!(get_json(http, "/api/topics?kind=system")["topics"], serde_json::json!(["b1", "C1", "TBW102"]));
    assert_eq!(get_json(http, "/api/topics?cluster=C2")["topics"], serde_json::json!(["Payments_2", "Payments_10"]));
    assert_eq!(get_json(http, "/api/topics?broker=b2&q=_10")["topics"], serde_json::json!(["Payments_10"]));
    let all = get_json(http, "/api/topics");
    assert_eq!(all["counts"], serde_json::json!({"normal": 32, "retry": 1, "dlq": 1, "system": 3}));
    assert_eq!((all["total"].as_u64(), all["matched"].as_u64()), (Some(37), Some(37)));
}
