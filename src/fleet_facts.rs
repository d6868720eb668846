//! What one name server knows, in a form two servers can be compared by: four aspects, each a sorted map of
//! item name → value (a set is a map to ""). Pure: built from a snapshot or from a peer's answers, no I/O.
//!
//! - brokers: `cluster/brokerName/brokerId` → address (GET_BROKER_CLUSTER_INFO's content);
//! - topics: the topic names (GET_ALL_TOPIC_LIST_FROM_NAMESERVER); queue data is left to `admin diff`, which reads
//!   every route — a check on an interval reads one list;
//! - kv: `namespace/key` → value;
//! - config: the keys of `AGREEING_KEYS` → value.

pub(crate) mod wire;

use std::collections::BTreeMap;

use crate::protocol::json;
use crate::state::{PreparedFacts, Snapshot};

/// The KV namespace every RocketMQ cluster uses (order topics): always asked of a peer that only speaks the
/// standard codes, even when we have no key in it.
pub(crate) const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// The Java keys that change what a name server answers or does to the cluster's brokers, so that two servers of
/// one fleet that differ in them give clients different answers: order-topic conf in routes and registrations,
/// acting masters in routes, whether topic lists are served, min-broker-id notices, topic deletion by
/// registration, how fast a dead broker leaves the routes, the product-environment route lookup. Per-host keys
/// (ports, paths, addresses, thread counts) are meant to differ and are left out.
pub(crate) const AGREEING_KEYS: &[&str] = &[
    "clusterTest",
    "deleteTopicWithBrokerRegistration",
    "enableAllTopicList",
    "enableTopicList",
    "notifyMinBrokerIdChanged",
    "orderMessageEnable",
    "productEnvName",
    "returnOrderTopicConfigToBroker",
    "scanNotActiveBrokerInterval",
    "supportActingMaster",
];

/// One aspect of what a name server knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Aspect {
    Brokers,
    Topics,
    Kv,
    Config,
}

impl Aspect {
    pub(crate) const ALL: [Aspect; 4] = [Aspect::Brokers, Aspect::Topics, Aspect::Kv, Aspect::Config];

    /// The name in `/api/fleet`, the `aspect` label and the FLEET_FACTS body.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Aspect::Brokers => "brokers",
            Aspect::Topics => "topics",
            Aspect::Kv => "kv",
            Aspect::Config => "config",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Item name → value, sorted.
pub type Items = BTreeMap<String, String>;

/// What one server knows; `None` for an aspect the server would not tell (e.g. `enableAllTopicList=false`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub aspects: [Option<Items>; 4],
}

impl Facts {
    /// Ours, from one snapshot.
    pub fn from_snapshot(snap: &Snapshot) -> Facts {
        let info = snap.routes.cluster_info();
        let mut brokers = Items::new();
        for (name, bd) in &info.broker_addr_table {
            for (id, addr) in &bd.broker_addrs {
                brokers.insert(broker_key(&bd.cluster, name, *id), addr.clone());
            }
        }
        let topics: Items = snap.routes.topic_names().map(|t| (t.to_string(), String::new())).collect();
        let mut kv = Items::new();
        for (ns, table) in snap.kv.to_map() {
            for (k, v) in table {
                kv.insert(kv_key(&ns, &k), v);
            }
        }
        Facts { aspects: [Some(brokers), Some(topics), Some(kv), Some(config_items(&snap.config.java_entries()))] }
    }

    /// Each aspect's digest and items as JSON, what FLEET_FACTS answers from.
    pub(crate) fn prepare(&self) -> PreparedFacts {
        PreparedFacts {
            aspects: self.aspects.clone().map(|items| {
                let items = items?;
                // A map of strings always serializes.
                let json = serde_json::to_vec(&items).unwrap_or_default();
                Some((digest(&items), bytes::Bytes::from(json)))
            }),
        }
    }

    pub(crate) fn get(&self, aspect: Aspect) -> Option<&Items> {
        self.aspects[aspect.index()].as_ref()
    }

    /// The KV namespaces we hold, plus ORDER_TOPIC_CONFIG: what a peer without FLEET_FACTS is asked about.
    pub(crate) fn kv_namespaces(&self) -> Vec<String> {
        let mut out: Vec<String> = vec![ORDER_TOPIC_CONFIG.to_string()];
        // A set, not a scan of `out`: the namespaces are as many as clients chose to create.
        let mut seen: std::collections::HashSet<&str> = [ORDER_TOPIC_CONFIG].into();
        if let Some(kv) = self.get(Aspect::Kv) {
            for key in kv.keys() {
                if let Some((ns, _)) = key.split_once('/') {
                    if seen.insert(ns) {
                        out.push(ns.to_string());
                    }
                }
            }
        }
        out
    }
}

/// Ours, prepared once per snapshot: the first FLEET_FACTS after a publish walks the tables, every other one until
/// the next publish copies what it left.
pub(crate) fn prepared(snap: &Snapshot) -> &PreparedFacts {
    snap.fleet_facts.get_or_init(|| Facts::from_snapshot(snap).prepare())
}

pub(crate) fn broker_key(cluster: &str, name: &str, id: i64) -> String {
    format!("{cluster}/{name}/{id}")
}

pub(crate) fn kv_key(namespace: &str, key: &str) -> String {
    format!("{namespace}/{key}")
}

/// The agreeing keys among `entries` (GET_NAMESRV_CONFIG's pairs).
pub(crate) fn config_items(entries: &[(String, String)]) -> Items {
    entries.iter().filter(|(k, _)| AGREEING_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A stable 64-bit digest of an aspect (FNV-1a over `name \0 value \0`, in order): stable across builds and
/// processes, unlike std's hasher, so two servers compute the same digest for the same items.
pub(crate) fn digest(items: &Items) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain(std::iter::once(&0u8)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (k, v) in items {
        eat(k.as_bytes());
        eat(v.as_bytes());
    }
    h
}

/// How two views of one aspect differ: names only here, only there, and present on both with different values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Diff {
    pub only_here: Vec<String>,
    pub only_there: Vec<String>,
    pub different: Vec<String>,
}

impl Diff {
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.only_here.is_empty() && self.only_there.is_empty() && self.different.is_empty()
    }
}

/// One merge pass over two sorted maps: O(n + m).
pub(crate) fn compare(here: &Items, there: &Items) -> Diff {
    let mut d = Diff::default();
    let mut a = here.iter().peekable();
    let mut b = there.iter().peekable();
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => return d,
            (Some((k, _)), None) => {
                d.only_here.push((*k).clone());
                a.next();
            }
            (None, Some((k, _))) => {
                d.only_there.push((*k).clone());
                b.next();
            }
            (Some((ka, va)), Some((kb, vb))) => match ka.cmp(kb) {
                std::cmp::Ordering::Less => {
                    d.only_here.push((*ka).clone());
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    d.only_there.push((*kb).clone());
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    if va != vb {
                        d.different.push((*ka).clone());
                    }
                    a.next();
                    b.next();
                }
            },
        }
    }
}

/// Why a peer's body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("cannot read the {what}: {reason}")]
    Unreadable { what: &'static str, reason: String },
}

fn unreadable(what: &'static str, reason: impl ToString) -> BodyError {
    BodyError::Unreadable { what, reason: reason.to_string() }
}

fn parse_object(body: &[u8], what: &'static str) -> Result<json::Value, BodyError> {
    let v = json::parse(body).map_err(|e| unreadable(what, e))?;
    match v {
        json::Value::Object(_) => Ok(v),
        _ => Err(unreadable(what, "not a JSON object")),
    }
}

/// GET_BROKER_CLUSTER_INFO's body (either fastjson dialect) → broker items.
pub(crate) fn brokers_from_cluster_info(body: &[u8]) -> Result<Items, BodyError> {
    let v = parse_object(body, "cluster info")?;
    let mut out = Items::new();
    if let Some(table) = v.get("brokerAddrTable") {
        for (name, bd) in table.members() {
            let cluster = bd.get("cluster").and_then(json::Value::as_str).unwrap_or_default().into_owned();
            if let Some(addrs) = bd.get("brokerAddrs") {
                for (id, addr) in addrs.members() {
                    let id: i64 = id.trim().parse().map_err(|_| unreadable("cluster info", "a broker id"))?;
                    let addr = addr.as_str().unwrap_or_default().into_owned();
                    out.insert(broker_key(&cluster, name, id), addr);
                }
            }
        }
    }
    Ok(out)
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER's body → topic items.
pub(crate) fn topics_from_list(body: &[u8]) -> Result<Items, BodyError> {
    if body.is_empty() {
        return Ok(Items::new());
    }
    let v = parse_object(body, "topic list")?;
    let mut out = Items::new();
    if let Some(json::Value::Array(items)) = v.get("topicList") {
        for t in items {
            if let Some(t) = t.as_str() {
                out.insert(t.into_owned(), String::new());
            }
        }
    }
    Ok(out)
}

/// GET_KVLIST_BY_NAMESPACE's body → KV items of `namespace`, added to `out`.
pub(crate) fn kv_from_table(namespace: &str, body: &[u8], out: &mut Items) -> Result<(), BodyError> {
    if body.is_empty() {
        return Ok(());
    }
    let v = parse_object(body, "KV table")?;
    if let Some(table) = v.get("table") {
        for (k, val) in table.members() {
            if let Some(val) = val.as_str() {
                out.insert(kv_key(namespace, k), val.into_owned());
            }
        }
    }
    Ok(())
}

/// GET_NAMESRV_CONFIG's body (properties text) → config items.
pub(crate) fn config_from_properties(body: &[u8]) -> Result<Items, BodyError> {
    let text = String::from_utf8_lossy(body);
    let pairs = crate::protocol::props::parse(&text).map_err(|e| unreadable("configuration", e))?;
    Ok(config_items(&pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(pairs: &[(&str, &str)]) -> Items {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn compare_sorts_names_into_three_lists() {
        let here = items(&[("a", "1"), ("b", "2"), ("d", "4")]);
        let there = items(&[("b", "2"), ("c", "3"), ("d", "5")]);
        let d = compare(&here, &there);
        assert_eq!(d.only_here, ["a"]);
        assert_eq!(d.only_there, ["c"]);
        assert_eq!(d.different, ["d"]);
        assert!(compare(&here, &here).is_empty());
    }

    #[test]
    fn digest_is_stable_and_sees_values() {
        let a = items(&[("k", "v")]);
        assert_eq!(digest(&a), digest(&a.clone()));
        assert_ne!(digest(&a), digest(&items(&[("k", "w")])));
        // The separator keeps ("ab","") apart from ("a","b").
        assert_ne!(digest(&items(&[("ab", "")])), digest(&items(&[("a", "b")])));
        // A fixed value: a change of the function would make every mixed-version fleet fetch full lists.
        assert_eq!(digest(&Items::new()), 0xcbf2_9ce4_8422_2325);
    }

    #[test]
    fn standard_bodies_become_items() {
        let b = brokers_from_cluster_info(
            br#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1",1:"h:2"},"brokerName":"broker-a","cluster":"C"}},"clusterAddrTable":{"C":["broker-a"]}}"#,
        )
        .unwrap();
        assert_eq!(b, items(&[("C/broker-a/0", "h:1"), ("C/broker-a/1", "h:2")]));
        assert_eq!(topics_from_list(br#"{"topicList":["t2","t1"]}"#).unwrap().len(), 2);
        let mut kv = Items::new();
        kv_from_table("ns", br#"{"table":{"k":"v"}}"#, &mut kv).unwrap();
        assert_eq!(kv, items(&[("ns/k", "v")]));
        let c = config_from_properties(b"listenPort=9876\norderMessageEnable=true\n").unwrap();
        assert_eq!(c, items(&[("orderMessageEnable", "true")]));
        assert!(brokers_from_cluster_info(b"\x00\x01garbage").is_err());
        assert!(topics_from_list(b"[1]").is_err());
    }

    /// What FLEET_FACTS costs at 100k topics, walked per request (as before it was prepared per snapshot) and
    /// prepared: printed for docs/security.md (`cargo test --release --lib fleet_facts -- --nocapture`), and the
    /// preparation checked to happen once per snapshot.
    #[test]
    fn facts_are_prepared_once_per_snapshot() {
        use crate::state::routes::test_util::{reg, S};
        use crate::state::routes::RouteTables;
        use std::time::Instant;
        let names: Vec<String> = (0..100_000).map(|i| format!("BenchmarkTopic_{i:06}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut tables = RouteTables::new();
        tables.register_broker(reg("C1", "b1", 0, "h1:10911", &names, 1), 1, S);
        let config = std::sync::Arc::new(crate::config::Config::default());
        let snap = Snapshot::new(1, tables.view(), Default::default(), config);
        let agreeing = |p: &PreparedFacts| p.aspects.clone().map(|a| a.map(|(d, _)| d));
        let runs = 5;
        let started = Instant::now();
        let mut walked = Vec::new();
        for _ in 0..runs {
            let p = Facts::from_snapshot(&snap).prepare();
            let digests = agreeing(&p);
            walked = super::wire::answer(&p, |a| digests[a.index()]);
        }
        let per_walk = started.elapsed() / runs;
        let first = Instant::now();
        let p = prepared(&snap);
        let first = first.elapsed();
        let digests = agreeing(p);
        let started = Instant::now();
        let mut answer = Vec::new();
        for _ in 0..runs * 100 {
            answer = super::wire::answer(prepared(&snap), |a| digests[a.index()]);
        }
        let per_prepared = started.elapsed() / (runs * 100);
        eprintln!(
            "FLEET_FACTS at 100k topics, agreeing asker: {per_walk:?} walked per request; prepared: {first:?} once \
             per snapshot, then {per_prepared:?} per request"
        );
        assert_eq!(answer, walked, "the same answer");
        assert!(std::ptr::eq(prepared(&snap), p), "prepared once");
        assert_eq!(
            p.aspects[Aspect::Topics.index()].as_ref().map(|(d, _)| *d),
            Some(digest(&snap.routes.topic_names().map(|t| (t.to_string(), String::new())).collect()))
        );
        assert!(answer.len() < 1024, "{} B", answer.len());
    }

    #[test]
    fn namespaces_asked_include_order_topic_config_once() {
        let mut f = Facts::default();
        f.aspects[Aspect::Kv.index()] = Some(items(&[("a/k", "1"), ("a/l", "2"), ("ORDER_TOPIC_CONFIG/t", "x")]));
        assert_eq!(f.kv_namespaces(), ["ORDER_TOPIC_CONFIG", "a"]);
    }

    /// As many namespaces as clients created, each once: listed in linear time (a search of the list so far took
    /// seconds here).
    #[test]
    fn many_namespaces_are_listed_quickly() {
        let mut f = Facts::default();
        f.aspects[Aspect::Kv.index()] = Some((0..40_000).map(|i| (format!("ns{i:05}/k"), "v".to_string())).collect());
        let started = std::time::Instant::now();
        let namespaces = f.kv_namespaces();
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        assert_eq!(namespaces.len(), 40_001);
    }
}
