//! The JSON the web console reads (`/api/...`): a view of one snapshot, plus the writer-private live table asked
//! of the writer over a side channel. Built with serde_json on the HTTP thread: nothing here is on a hot path.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::HttpContext;
use crate::state::Snapshot;
use crate::write_command::LiveRow;

/// Most topics `/api/topics` lists unless asked for fewer.
const TOPICS_DEFAULT_LIMIT: usize = 200;
const TOPICS_MAX_LIMIT: usize = 5000;

pub(super) fn overview(ctx: &HttpContext, snap: &Snapshot) -> Value {
    let reason = ctx.not_ready_reason(snap);
    let mut v = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("NAMESRV_COMMIT"),
        "startedMs": ctx.started_ms,
        "nowMs": ctx.clock.now_ms(),
        "generation": snap.generation,
        "topics": snap.routes.topic_count(),
        "brokers": ctx.metrics.writer.live_brokers.load(Ordering::Relaxed),
        "ready": reason.is_none(),
        "events": ctx.feed.is_on(),
    });
    if let Some(r) = reason {
        v["reason"] = json!(r);
    }
    v
}

/// Clusters → broker groups → members, with each member's liveness (`rows`, the writer's live table).
pub(super) fn brokers(ctx: &HttpContext, snap: &Snapshot, rows: &[LiveRow]) -> Value {
    let live: HashMap<(&str, &str), &LiveRow> = rows.iter().map(|r| ((&*r.cluster, &*r.addr), r)).collect();
    let info = snap.routes.cluster_info();
    let now = ctx.clock.now_ms();
    let clusters: Vec<Value> = info
        .cluster_addr_table
        .iter()
        .map(|(cluster, names)| {
            let mut members = Vec::new();
            for name in names {
                let Some(bd) = info.broker_addr_table.get(name) else { continue };
                let topic_count = snap.routes.broker_topic_count(name);
                for (id, addr) in &bd.broker_addrs {
                    let mut m = json!({
                        "brokerName": &**name,
                        "brokerId": id,
                        "addr": addr,
                        "topicCount": topic_count,
                        "live": false,
                    });
                    if let Some(l) = live.get(&(&**cluster, addr.as_str())) {
                        m["live"] = json!(true);
                        m["heartbeatAgeMs"] = json!((now - l.last_update_ms).max(0));
                        m["timeoutMs"] = json!(l.timeout_ms);
                        m["haServerAddr"] = json!(l.ha_server_addr);
                        m["dataVersion"] = json!({
                            "stateVersion": l.data_version.state_version,
                            "timestamp": l.data_version.timestamp,
                            "counter": l.data_version.counter,
                        });
                    }
                    members.push(m);
                }
            }
            json!({ "name": &**cluster, "brokers": members })
        })
        .collect();
    json!({ "nowMs": now, "clusters": clusters })
}

/// A page of topic names, naturally sorted (`_2` before `_10`): those containing `q` (case-insensitive), of one
/// `kind` (`normal`, `retry`, `dlq`, `system`), hosted in `cluster` or by broker group `broker`, from `offset`, at
/// most `limit`. `total` counts every topic, `matched` those that pass the filters; `counts` splits the topics
/// that pass every filter but the kind by kind, so the page can label its kind buttons.
pub(super) fn topics(snap: &Arc<Snapshot>, query: &str) -> Value {
    let param = |name| super::query::param(query, name).filter(|v| !v.is_empty());
    let q = param("q").unwrap_or_default().to_lowercase();
    let number = |name, default: usize| param(name).and_then(|l| l.parse::<usize>().ok()).unwrap_or(default);
    let limit = number("limit", TOPICS_DEFAULT_LIMIT).min(TOPICS_MAX_LIMIT);
    let offset = number("offset", 0);
    let kind = param("kind").and_then(|k| TopicKind::parse(&k));
    let order = natural_order(snap);
    let system = SystemNames::of(snap);
    // The cluster's topics come from its own list; a broker group's from each candidate's route, after the cheaper
    // filters have thinned them out (the view has no public list of a group's topics).
    let in_cluster: Option<ahash::AHashSet<Arc<str>>> =
        param("cluster").map(|c| snap.routes.topics_by_cluster(&c).topic_list.into_iter().collect());
    let broker = param("broker");
    let mut counts = [0usize; 4];
    let mut matched = 0;
    let mut names = Vec::new();
    for t in order.iter() {
        if !q.is_empty() && !t.to_lowercase().contains(&q) {
            continue;
        }
        if in_cluster.as_ref().is_some_and(|c| !c.contains(t)) {
            continue;
        }
        if let Some(b) = &broker {
            let hosted =
                snap.routes.route(t, false).is_some_and(|r| r.queue_datas.iter().any(|qd| *qd.broker_name == **b));
            if !hosted {
                continue;
            }
        }
        let k = TopicKind::of(t, &system);
        counts[k as usize] += 1;
        if kind.is_some_and(|want| want != k) {
            continue;
        }
        if matched >= offset && names.len() < limit {
            names.push(&**t);
        }
        matched += 1;
    }
    let counts: serde_json::Map<String, Value> =
        TopicKind::ALL.iter().map(|k| (k.name().to_string(), json!(counts[*k as usize]))).collect();
    json!({
        "total": snap.routes.topic_count(),
        "matched": matched,
        "offset": offset,
        "limit": limit,
        "counts": counts,
        "topics": names,
    })
}

/// What a topic is for, as the console filters them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TopicKind {
    Normal = 0,
    /// A consumer group's retry topic, `%RETRY%group`.
    Retry = 1,
    /// A consumer group's dead-letter topic, `%DLQ%group`.
    Dlq = 2,
    /// One the brokers keep for themselves (`SystemNames`).
    System = 3,
}

impl TopicKind {
    const ALL: [TopicKind; 4] = [TopicKind::Normal, TopicKind::Retry, TopicKind::Dlq, TopicKind::System];

    fn name(self) -> &'static str {
        match self {
            TopicKind::Normal => "normal",
            TopicKind::Retry => "retry",
            TopicKind::Dlq => "dlq",
            TopicKind::System => "system",
        }
    }

    fn parse(s: &str) -> Option<TopicKind> {
        TopicKind::ALL.into_iter().find(|k| k.name() == s)
    }

    fn of(topic: &str, system: &SystemNames) -> TopicKind {
        if topic.starts_with("%RETRY%") {
            TopicKind::Retry
        } else if topic.starts_with("%DLQ%") {
            TopicKind::Dlq
        } else if system.contains(topic) {
            TopicKind::System
        } else {
            TopicKind::Normal
        }
    }
}

/// Java's `TopicValidator.SYSTEM_TOPIC_SET` (brokers create these for themselves; clients may not send to them).
const JAVA_SYSTEM_TOPICS: [&str; 9] = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

/// The names that make a topic a system topic: Java's fixed set and prefixes (`rmq_sys_`, and `RMQ_SYS_` for
/// the transaction and trace topics of versions that add more), and the cluster and broker names, which brokers
/// register as topics of their own and GET_SYSTEM_TOPIC_LIST_FROM_NS answers (`RouteView::system_topics`).
struct SystemNames(HashSet<Arc<str>>);

impl SystemNames {
    fn of(snap: &Snapshot) -> SystemNames {
        SystemNames(snap.routes.system_topics().topic_list.into_iter().collect())
    }

    fn contains(&self, topic: &str) -> bool {
        JAVA_SYSTEM_TOPICS.contains(&topic)
            || topic.starts_with("rmq_sys_")
            || topic.starts_with("RMQ_SYS_")
            || self.0.contains(topic)
    }
}

/// Every topic name in natural order, kept from one call to the next: sorting 100k names costs tens of
/// milliseconds, telling that the names are those of the last call costs one pass over them (`topic_names` is in
/// byte order, as `Cached::names` is kept). Snapshots change with every registration, the names much less often.
fn natural_order(snap: &Snapshot) -> Arc<[Arc<str>]> {
    static CACHE: Mutex<Option<Cached>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = cache.as_ref() {
        let same = c.names.len() == snap.routes.topic_count()
            && c.names.iter().zip(snap.routes.topic_names()).all(|(a, b)| Arc::ptr_eq(a, b) || a == b);
        if same {
            return c.natural.clone();
        }
    }
    let names: Vec<Arc<str>> = snap.routes.topic_names().cloned().collect();
    let mut natural = names.clone();
    natural.sort_by(|a, b| natural_cmp(a, b));
    let natural: Arc<[Arc<str>]> = natural.into();
    *cache = Some(Cached { names, natural: natural.clone() });
    natural
}

struct Cached {
    /// In `topic_names`' order.
    names: Vec<Arc<str>>,
    natural: Arc<[Arc<str>]>,
}

/// Natural order: runs of digits compare as numbers (`t_2` < `t_10`), letters without regard to case; names equal
/// that way (`a01`/`a1`, `A`/`a`) fall back to byte order, so the order is total and stable between calls.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let run = |s: &[u8], mut k: usize| {
                while k < s.len() && s[k] == b'0' {
                    k += 1;
                }
                let start = k;
                while k < s.len() && s[k].is_ascii_digit() {
                    k += 1;
                }
                (start, k)
            };
            let ((xs, xe), (ys, ye)) = (run(x, i), run(y, j));
            // Without leading zeros, a longer run is a larger number; of equal lengths, the digits decide.
            let ord = (xe - xs).cmp(&(ye - ys)).then_with(|| x[xs..xe].cmp(&y[ys..ye]));
            if ord != Ordering::Equal {
                return ord;
            }
            (i, j) = (xe, ye);
        } else {
            let ord = x[i].to_ascii_lowercase().cmp(&y[j].to_ascii_lowercase());
            if ord != Ordering::Equal {
                return ord;
            }
            i += 1;
            j += 1;
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| x.cmp(y))
}

/// KV namespaces with their entries. With `aclEnable` only accounts get here (`auth`), as only accounts may read
/// KV on the remoting port.
pub(super) fn kv(snap: &Snapshot) -> Value {
    let namespaces: Vec<Value> = snap
        .kv
        .to_map()
        .into_iter()
        .map(|(ns, table)| {
            let entries: Vec<Value> = table.into_iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
            json!({ "namespace": ns, "entries": entries })
        })
        .collect();
    json!({ "namespaces": namespaces })
}

/// Every key with its value (`-p`'s list) except secrets, which are not served at all; `hidden` names them, so
/// the operator sees that they are set.
pub(super) fn config(snap: &Snapshot) -> Value {
    let (hidden, shown): (Vec<_>, Vec<_>) =
        snap.config.all_entries().into_iter().partition(|(k, _)| crate::config::is_secret_key(k));
    let entries: Vec<Value> = shown.into_iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
    let hidden: Vec<String> = hidden.into_iter().map(|(k, _)| k).collect();
    json!({ "entries": entries, "hidden": hidden })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_served() {
        use crate::config::is_secret_key;
        for k in
            ["tls.server.keyPassword", "secretKey", "accessKey", "innerClientAuthenticationCredentials", "authToken"]
        {
            assert!(is_secret_key(k), "{k}");
        }
        assert!(!is_secret_key("listenPort") && !is_secret_key("aclEnable"));
        let mut config = crate::config::Config::default();
        config.extra.insert("secretKey".into(), "s3cret".into());
        config.extra.insert("productEnvNote".into(), "visible".into());
        // Root's account: no secret word in the key's name, secret by its class.
        config.init_authentication_user = r#"{"username":"root","password":"r00tpw"}"#.into();
        let snap = crate::writer::Writer::initial_snapshot(Default::default(), std::sync::Arc::new(config));
        let text = config_json(&snap);
        assert!(!text.contains("s3cret") && !text.contains("r00tpw") && text.contains("visible"), "{text}");
        let hidden = super::config(&snap)["hidden"].clone();
        for key in ["secretKey", "initAuthenticationUser"] {
            assert!(hidden.as_array().unwrap().contains(&json!(key)), "{key} not named as hidden: {text}");
        }
    }

    /// A snapshot of two clusters: `b1` (C1) hosting `topics1`, `b2` (C2) hosting `topics2`, each also its
    /// cluster's and its own name, as brokers register them by default (`clusterTopicEnable`, `brokerTopicEnable`).
    fn routes_of(topics1: &[&str], topics2: &[&str]) -> Arc<Snapshot> {
        use crate::state::routes::test_util::{reg, S};
        use crate::state::routes::RouteTables;
        let mut tables = RouteTables::new();
        fn with<'a>(topics: &[&'a str], own: [&'a str; 2]) -> Vec<&'a str> {
            [topics, &own[..]].concat()
        }
        tables.register_broker(reg("C1", "b1", 0, "h1:10911", &with(topics1, ["C1", "b1"]), 1), 1, S);
        tables.register_broker(reg("C2", "b2", 0, "h2:10911", &with(topics2, ["C2", "b2"]), 1), 1, S);
        let config = Arc::new(crate::config::Config::default());
        Arc::new(Snapshot::new(1, tables.view(), Default::default(), config))
    }

    fn names(v: &Value) -> Vec<&str> {
        v["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect()
    }

    #[test]
    fn natural_order_puts_numbers_in_numeric_order() {
        let mut v = ["t_10", "t_2", "t_1", "t_100", "T_3", "t_02", "a", "B", "t_0"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["a", "B", "t_0", "t_1", "t_02", "t_2", "T_3", "t_10", "t_100"]);
        // Total: names equal but for case or leading zeros still order one way.
        assert_eq!(natural_cmp("A", "a"), std::cmp::Ordering::Less);
        assert_eq!(natural_cmp("x01", "x1"), "x01".cmp("x1"));
        // A run longer than any integer type still compares.
        assert_eq!(natural_cmp("n99999999999999999999999", "n100000000000000000000000"), std::cmp::Ordering::Less);
    }

    #[test]
    fn topics_are_paged_in_natural_order() {
        let many: Vec<String> = (0..25).map(|i| format!("T_{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let snap = routes_of(&refs, &[]);
        let page = topics(&snap, "q=t_&offset=0&limit=10");
        assert_eq!(names(&page)[..3], ["T_0", "T_1", "T_2"]);
        assert_eq!(page["matched"], 25);
        let page = topics(&snap, "q=t_&offset=10&limit=10");
        assert_eq!(names(&page), (10..20).map(|i| format!("T_{i}")).collect::<Vec<_>>());
        let page = topics(&snap, "q=t_&offset=20&limit=10");
        assert_eq!(names(&page), ["T_20", "T_21", "T_22", "T_23", "T_24"]);
        assert!(names(&topics(&snap, "q=t_&offset=30&limit=10")).is_empty());
        // Without parameters: the first 200 of every topic (cluster and broker names included).
        assert_eq!(topics(&snap, "")["matched"], 25 + 4);
    }

    #[test]
    fn topics_by_kind_cluster_and_broker() {
        let snap = routes_of(
            &["orders", "%RETRY%g1", "%DLQ%g1", "TBW102", "rmq_sys_wheel_timer", "RMQ_SYS_TRACE_TOPIC"],
            &["payments", "SCHEDULE_TOPIC_XXXX"],
        );
        let all = topics(&snap, "");
        // Brokers register their cluster and broker names as topics: system topics too.
        assert_eq!(all["counts"], json!({"normal": 2, "retry": 1, "dlq": 1, "system": 8}), "{all}");
        assert_eq!(names(&topics(&snap, "kind=retry")), ["%RETRY%g1"]);
        assert_eq!(names(&topics(&snap, "kind=dlq")), ["%DLQ%g1"]);
        assert_eq!(names(&topics(&snap, "kind=normal")), ["orders", "payments"]);
        assert_eq!(names(&topics(&snap, "kind=system&cluster=C2")), ["b2", "C2", "SCHEDULE_TOPIC_XXXX"]);
        assert_eq!(names(&topics(&snap, "kind=normal&cluster=C1")), ["orders"]);
        assert_eq!(names(&topics(&snap, "kind=normal&broker=b2")), ["payments"]);
        let v = topics(&snap, "q=PAY&broker=b2");
        assert_eq!((names(&v), v["matched"].as_u64()), (vec!["payments"], Some(1)));
        assert_eq!(topics(&snap, "broker=nope")["matched"], 0);
        // An unknown kind filters nothing, as an empty one.
        assert_eq!(topics(&snap, "kind=weird")["matched"], all["matched"]);
    }

    #[test]
    fn the_order_follows_the_names_from_one_snapshot_to_the_next() {
        let a = routes_of(&["x_1", "x_10"], &[]);
        assert_eq!(names(&topics(&a, "q=x_")), ["x_1", "x_10"]);
        let b = routes_of(&["x_1", "x_10", "x_2"], &[]);
        assert_eq!(names(&topics(&b, "q=x_")), ["x_1", "x_2", "x_10"]);
        assert_eq!(names(&topics(&a, "q=x_")), ["x_1", "x_10"]);
    }

    fn config_json(snap: &Snapshot) -> String {
        config(snap).to_string()
    }
}
