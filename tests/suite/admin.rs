//! The admin surface over raw frames on an in-process server (reference §11 items 16–20): write permissions,
//! topic deletion/registration, the KV store, runtime config, zone filtering and order config, and the topic lists.
//! Remember Java's rule: a broker's first registration with exactly one topic is refused, so every broker here
//! registers at least two.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use namesrv::config::Config;
use namesrv::model::TopicConfig;
use namesrv::protocol::json::{self, Value};
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use support::client::Client;
use support::inproc::InProc;
use support::registration::{self, new_cmd};

fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(tweak)
}

/// A broker's identity for REGISTER_BROKER.
struct Broker<'a> {
    cluster: &'a str,
    name: &'a str,
    addr: &'a str,
    id: i64,
    zone: Option<&'a str>,
}

impl Broker<'_> {
    fn register_configs(&self, topics: Vec<TopicConfig>, counter: i64) -> RemotingCommand {
        let shared = registration::Broker { cluster: self.cluster, name: self.name, addr: self.addr, id: self.id };
        let cmd = shared.register_configs(topics, counter, 513);
        match self.zone {
            Some(zone) => cmd.with_ext("__ZONE_NAME", zone),
            None => cmd,
        }
    }

    /// Registers `topics` with perm 6, 4/4 queues, sys flag 0.
    fn register(&self, c: &mut Client, topics: &[&str]) -> RemotingCommand {
        self.register_with(c, topics, 6, 0)
    }

    fn register_with(&self, c: &mut Client, topics: &[&str], perm: i32, sys_flag: i32) -> RemotingCommand {
        let configs = topics
            .iter()
            .map(|t| TopicConfig {
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm,
                topic_sys_flag: sys_flag,
                ..TopicConfig::with_defaults(*t)
            })
            .collect();
        let r = c.request(self.register_configs(configs, 1));
        assert_eq!(r.code, ResponseCode::SUCCESS, "register {}: {r:?}", self.name);
        r
    }
}

fn broker<'a>(cluster: &'a str, name: &'a str, addr: &'a str) -> Broker<'a> {
    Broker { cluster, name, addr, id: 0, zone: None }
}

/// Sends `code` with the given ext fields.
fn call(c: &mut Client, code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
    let mut cmd = new_cmd(code);
    for (k, v) in ext {
        cmd = cmd.with_ext(k, *v);
    }
    c.request(cmd)
}

fn text(r: &RemotingCommand) -> String {
    String::from_utf8(r.body.to_vec()).unwrap()
}

fn parse(r: &RemotingCommand) -> Value {
    json::parse(&r.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", text(r)))
}

fn route(c: &mut Client, topic: &str) -> RemotingCommand {
    call(c, RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)])
}

/// brokerName → perm of a topic's queue datas; empty when the topic has no route.
fn perms(c: &mut Client, topic: &str) -> BTreeMap<String, i32> {
    let r = route(c, topic);
    if r.code == ResponseCode::TOPIC_NOT_EXIST {
        return BTreeMap::new();
    }
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    let v = parse(&r);
    let Some(Value::Array(qds)) = v.get("queueDatas") else { panic!("no queueDatas: {}", text(&r)) };
    qds.iter()
        .map(|q| {
            (
                q.get("brokerName").and_then(Value::as_str).unwrap().into_owned(),
                q.get("perm").unwrap().as_i32().unwrap(),
            )
        })
        .collect()
}

/// The broker names of a route's brokerDatas.
fn broker_names(r: &RemotingCommand) -> BTreeSet<String> {
    let Some(Value::Array(bds)) = parse(r).get("brokerDatas").cloned() else { panic!("no brokerDatas: {}", text(r)) };
    bds.iter().map(|b| b.get("brokerName").and_then(Value::as_str).unwrap().into_owned()).collect()
}

/// The `topicList` of a TopicList body.
fn topic_list(r: &RemotingCommand) -> BTreeSet<String> {
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    let Some(Value::Array(ts)) = parse(r).get("topicList").cloned() else { panic!("no topicList: {}", text(r)) };
    ts.iter().map(|t| t.as_str().unwrap().into_owned()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- §11.16 write permission ----

#[test]
fn wipe_and_add_write_perm_count_topics_and_set_perms() {
    let fx = start(|_| {});
    let mut c = fx.client();
    let a = broker("C1", "broker-a", "127.0.0.1:10911");
    let b = broker("C1", "broker-b", "127.0.0.2:10911");
    a.register(&mut c, &["PA1", "PA2", "Shared"]);
    b.register_with(&mut c, &["PB1", "Shared"], 7, 0);

    let r = call(&mut c, RequestCode::WIPE_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-a")]);
    assert_eq!((r.code, r.ext("wipeTopicCount")), (ResponseCode::SUCCESS, Some("3")), "{r:?}");
    assert_eq!(perms(&mut c, "PA1"), BTreeMap::from([("broker-a".into(), 4)]));
    assert_eq!(perms(&mut c, "Shared"), BTreeMap::from([("broker-a".into(), 4), ("broker-b".into(), 7)]));

    let r = call(&mut c, RequestCode::ADD_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-a")]);
    assert_eq!((r.code, r.ext("addTopicCount")), (ResponseCode::SUCCESS, Some("3")), "{r:?}");
    assert_eq!(perms(&mut c, "PA2"), BTreeMap::from([("broker-a".into(), 6)]));

    // 7 (with the inherit bit) becomes exactly 6 on ADD; WIPE clears only the write bit.
    let r = call(&mut c, RequestCode::ADD_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-b")]);
    assert_eq!(r.ext("addTopicCount"), Some("2"));
    assert_eq!(perms(&mut c, "Shared"), BTreeMap::from([("broker-a".into(), 6), ("broker-b".into(), 6)]));
    b.register_with(&mut c, &["PB1", "Shared"], 7, 0); // unchanged DataVersion: the namesrv-side 6 stays
    assert_eq!(perms(&mut c, "PB1"), BTreeMap::from([("broker-b".into(), 6)]));

    for code in [RequestCode::WIPE_WRITE_PERM_OF_BROKER, RequestCode::ADD_WRITE_PERM_OF_BROKER] {
        let r = call(&mut c, code, &[("brokerName", "no-such-broker")]);
        let key = if code == RequestCode::WIPE_WRITE_PERM_OF_BROKER { "wipeTopicCount" } else { "addTopicCount" };
        assert_eq!((r.code, r.ext(key)), (ResponseCode::SUCCESS, Some("0")), "{code}: {r:?}");
    }
}

// ---- §11.17 topic deletion and registration ----

#[test]
fn delete_topic_with_and_without_cluster_name() {
    let fx = start(|_| {});
    let mut c = fx.client();
    broker("C1", "broker-a", "127.0.0.1:10911").register(&mut c, &["Shared", "Shared2", "OnlyA"]);
    broker("C2", "broker-b", "127.0.0.2:10911").register(&mut c, &["Shared", "Shared2", "OnlyB"]);
    assert_eq!(perms(&mut c, "Shared").len(), 2);

    // Unknown cluster: nothing changes.
    let r = call(&mut c, RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "Shared"), ("clusterName", "C9")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(perms(&mut c, "Shared").len(), 2);
    // One cluster: only that cluster's queue data goes.
    let r = call(&mut c, RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "Shared"), ("clusterName", "C1")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(perms(&mut c, "Shared"), BTreeMap::from([("broker-b".into(), 6)]));
    // The other cluster too: no queue data left, the topic is gone.
    call(&mut c, RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "Shared"), ("clusterName", "C2")]);
    assert_eq!(route(&mut c, "Shared").code, ResponseCode::TOPIC_NOT_EXIST);
    // No cluster name (or an empty one): the whole topic, every cluster.
    let r = call(&mut c, RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "Shared2"), ("clusterName", "")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut c, "Shared2").code, ResponseCode::TOPIC_NOT_EXIST);
    // Others untouched; deleting a missing topic is still SUCCESS.
    assert_eq!(perms(&mut c, "OnlyA").len(), 1);
    assert_eq!(call(&mut c, RequestCode::DELETE_TOPIC_IN_NAMESRV, &[("topic", "nope")]).code, ResponseCode::SUCCESS);
    let all = topic_list(&call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]));
    assert_eq!(all, set(&["OnlyA", "OnlyB"]));
}

fn register_topic(c: &mut Client, topic: &str, queue_datas: &[(&str, i32)]) -> RemotingCommand {
    let qds: Vec<String> = queue_datas
        .iter()
        .map(|(b, perm)| {
            format!(r#"{{"brokerName":"{b}","perm":{perm},"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}}"#)
        })
        .collect();
    let body = format!(r#"{{"brokerDatas":[],"queueDatas":[{}]}}"#, qds.join(","));
    c.request(new_cmd(RequestCode::REGISTER_TOPIC_IN_NAMESRV).with_ext("topic", topic).with_body(body.into_bytes()))
}

#[test]
fn register_topic_ignores_unknown_brokers_yet_answers_success() {
    let fx = start(|_| {});
    let mut c = fx.client();
    broker("C1", "broker-a", "127.0.0.1:10911").register(&mut c, &["TA", "TA2"]);
    broker("C1", "broker-b", "127.0.0.2:10911").register(&mut c, &["TB", "TB2"]);

    // New topic with an unknown broker among the queue datas: nothing stored, still SUCCESS.
    let r = register_topic(&mut c, "NewT", &[("broker-a", 6), ("ghost", 6)]);
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    assert_eq!(route(&mut c, "NewT").code, ResponseCode::TOPIC_NOT_EXIST);
    let r = register_topic(&mut c, "NewT2", &[("ghost", 6)]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut c, "NewT2").code, ResponseCode::TOPIC_NOT_EXIST);
    // New topic, known brokers: created.
    assert_eq!(register_topic(&mut c, "NewT", &[("broker-a", 6), ("broker-b", 4)]).code, ResponseCode::SUCCESS);
    assert_eq!(perms(&mut c, "NewT"), BTreeMap::from([("broker-a".into(), 6), ("broker-b".into(), 4)]));
    let r = route(&mut c, "NewT");
    assert_eq!(broker_names(&r), set(&["broker-a", "broker-b"]));

    // Existing topic: applied in order up to the first unknown broker name.
    let r = register_topic(&mut c, "TA", &[("broker-b", 4), ("ghost", 6), ("broker-a", 2)]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(perms(&mut c, "TA"), BTreeMap::from([("broker-a".into(), 6), ("broker-b".into(), 4)]));
    // Existing topic, queue data replaced for a known broker.
    assert_eq!(register_topic(&mut c, "TA", &[("broker-a", 2)]).code, ResponseCode::SUCCESS);
    assert_eq!(perms(&mut c, "TA"), BTreeMap::from([("broker-a".into(), 2), ("broker-b".into(), 4)]));
    // No body / no queue data: SUCCESS, nothing.
    let r = c.request(new_cmd(RequestCode::REGISTER_TOPIC_IN_NAMESRV).with_ext("topic", "Empty"));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(register_topic(&mut c, "Empty", &[]).code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut c, "Empty").code, ResponseCode::TOPIC_NOT_EXIST);
}

// ---- §11.18 KV store ----

#[test]
fn kv_round_trip_not_found_remarks_emptied_namespace_and_restart() {
    let mut fx = start(|_| {});
    let mut c = fx.client();
    let put = |c: &mut Client, ns: &str, k: &str, v: &str| {
        call(c, RequestCode::PUT_KV_CONFIG, &[("namespace", ns), ("key", k), ("value", v)])
    };
    assert_eq!(put(&mut c, "NS", "k1", "v1").code, ResponseCode::SUCCESS);
    assert_eq!(put(&mut c, "NS", "k2", "v2").code, ResponseCode::SUCCESS);
    assert_eq!(put(&mut c, "NS", "k1", "v1b").code, ResponseCode::SUCCESS);
    assert_eq!(put(&mut c, "KEEP", "a", "b").code, ResponseCode::SUCCESS);

    let r = call(&mut c, RequestCode::GET_KV_CONFIG, &[("namespace", "NS"), ("key", "k1")]);
    assert_eq!((r.code, r.ext("value")), (ResponseCode::SUCCESS, Some("v1b")));
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(text(&r), r#"{"table":{"k1":"v1b","k2":"v2"}}"#);

    // Not found: code 22 with Java's remarks.
    let r = call(&mut c, RequestCode::GET_KV_CONFIG, &[("namespace", "NS"), ("key", "missing")]);
    assert_eq!(r.code, ResponseCode::QUERY_NOT_FOUND);
    assert_eq!(r.remark.as_deref(), Some("No config item, Namespace: NS Key: missing"));
    let r = call(&mut c, RequestCode::GET_KV_CONFIG, &[("namespace", "NOPE"), ("key", "k1")]);
    assert_eq!(r.code, ResponseCode::QUERY_NOT_FOUND);
    assert_eq!(r.remark.as_deref(), Some("No config item, Namespace: NOPE Key: k1"));
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NOPE")]);
    assert_eq!(r.code, ResponseCode::QUERY_NOT_FOUND);
    assert_eq!(r.remark.as_deref(), Some("No config item, Namespace: NOPE"));
    // Missing key on PUT.
    let r = call(&mut c, RequestCode::PUT_KV_CONFIG, &[("namespace", "NS"), ("value", "x")]);
    assert_eq!((r.code, r.remark.as_deref()), (ResponseCode::SYSTEM_ERROR, Some("namespace or key is null")));

    // Delete: always SUCCESS; an emptied namespace lists as {"table":{}}.
    for k in ["k1", "k2", "k2", "never"] {
        let r = call(&mut c, RequestCode::DELETE_KV_CONFIG, &[("namespace", "NS"), ("key", k)]);
        assert_eq!(r.code, ResponseCode::SUCCESS, "delete {k}");
    }
    assert_eq!(call(&mut c, RequestCode::GET_KV_CONFIG, &[("namespace", "NS"), ("key", "k1")]).code, 22);
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
    assert_eq!((r.code, text(&r)), (ResponseCode::SUCCESS, r#"{"table":{}}"#.to_string()));
    assert_eq!(put(&mut c, "NS", "k3", "v3").code, ResponseCode::SUCCESS);
    assert_eq!(
        fs::read_to_string(fx.path("kvConfig.json")).unwrap(),
        r#"{"configTable":{"KEEP":{"a":"b"},"NS":{"k3":"v3"}}}"#
    );
    call(&mut c, RequestCode::DELETE_KV_CONFIG, &[("namespace", "NS"), ("key", "k3")]);

    // Everything survives a restart on the same file, including the emptied namespace.
    drop(c);
    fx.restart();
    let mut c = fx.client();
    let r = call(&mut c, RequestCode::GET_KV_CONFIG, &[("namespace", "KEEP"), ("key", "a")]);
    assert_eq!((r.code, r.ext("value")), (ResponseCode::SUCCESS, Some("b")));
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
    assert_eq!((r.code, text(&r)), (ResponseCode::SUCCESS, r#"{"table":{}}"#.to_string()));
}

// ---- §11.19 config ----

fn config_lines(r: &RemotingCommand) -> Vec<(String, String)> {
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    text(r)
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("not key=value: {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn update_config(c: &mut Client, props: &str) -> RemotingCommand {
    c.request(new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(props.as_bytes().to_vec()))
}

#[test]
fn get_config_is_sorted_and_update_respects_black_list_and_persists() {
    let fx = start(|_| {});
    let store = fx.path("namesrv.properties");
    fs::write(&store, "listenPort=0\n").unwrap();
    let mut c = fx.client();

    let r = call(&mut c, RequestCode::GET_NAMESRV_CONFIG, &[]);
    assert!(text(&r).ends_with('\n'), "every line ends with a newline");
    let lines = config_lines(&r);
    let keys: Vec<&str> = lines.iter().map(|(k, _)| k.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted by key");
    let map: BTreeMap<_, _> = lines.iter().cloned().collect();
    assert_eq!(map.len(), lines.len(), "no duplicate keys");
    assert_eq!(map.get("enableAllTopicList").map(String::as_str), Some("true"));
    assert_eq!(map.get("kvConfigPath"), Some(&fx.path("kvConfig.json").display().to_string()));
    assert_eq!(map.get("configStorePath"), Some(&store.display().to_string()));
    assert!(map.contains_key("listenPort") && map.contains_key("serverWorkerThreads"));
    assert!(!map.contains_key("reactorThreads"), "our own keys stay out of a stock answer");

    // A key of Java's black list refuses the whole update, with Java's remark.
    for bad in ["kvConfigPath=/tmp/elsewhere.json", "configStorePath=/tmp/x", "configBlackList=", "rocketmqHome=/x"] {
        let r = update_config(&mut c, &format!("enableAllTopicList=false\n{bad}\n"));
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{bad}: {r:?}");
        assert_eq!(r.remark.as_deref(), Some("Can not update config in black list."));
    }
    assert_eq!(config_lines(&call(&mut c, RequestCode::GET_NAMESRV_CONFIG, &[])), lines, "nothing applied");
    assert_eq!(call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]).code, ResponseCode::SUCCESS);
    assert_eq!(fs::read_to_string(&store).unwrap(), "listenPort=0\n", "config file untouched");

    // No body: SUCCESS, nothing.
    assert_eq!(update_config(&mut c, "").code, ResponseCode::SUCCESS);

    // enableAllTopicList=false: 206 is disabled at once, and the config file is rewritten.
    let r = update_config(&mut c, "enableAllTopicList=false\n");
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    let r = call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]);
    assert_eq!((r.code, r.remark.as_deref()), (ResponseCode::SYSTEM_ERROR, Some("disable")));
    let after = config_lines(&call(&mut c, RequestCode::GET_NAMESRV_CONFIG, &[]));
    let after_map: BTreeMap<_, _> = after.iter().cloned().collect();
    assert_eq!(after_map.get("enableAllTopicList").map(String::as_str), Some("false"));
    let file = fs::read_to_string(&store).unwrap();
    assert!(file.lines().any(|l| l == "enableAllTopicList=false"), "config file not rewritten:\n{file}");
    let file_keys: Vec<&str> = file.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    let mut sorted = file_keys.clone();
    sorted.sort();
    assert_eq!(file_keys, sorted, "config file sorted by key");
    assert_eq!(fs::read_to_string(fx.path("namesrv.properties.bak")).unwrap(), "listenPort=0\n");
    // The other lists are gated by enableTopicList, not enableAllTopicList.
    assert_eq!(call(&mut c, RequestCode::GET_TOPICS_BY_CLUSTER, &[("cluster", "C")]).code, ResponseCode::SUCCESS);

    // enableTopicList=false: 224 and 311–313 disabled; 304 is not gated.
    assert_eq!(update_config(&mut c, "enableTopicList=false").code, ResponseCode::SUCCESS);
    for code in [
        RequestCode::GET_TOPICS_BY_CLUSTER,
        RequestCode::GET_UNIT_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ] {
        let r = call(&mut c, code, &[("cluster", "C")]);
        assert_eq!((r.code, r.remark.as_deref()), (ResponseCode::SYSTEM_ERROR, Some("disable")), "{code}");
    }
    assert_eq!(call(&mut c, RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[]).code, ResponseCode::SUCCESS);
    // Re-enable: back at once.
    assert_eq!(update_config(&mut c, "enableAllTopicList=true\nenableTopicList=true\n").code, ResponseCode::SUCCESS);
    assert_eq!(call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]).code, ResponseCode::SUCCESS);
}

// ---- §11.20 zone filtering and order config ----

#[test]
fn zone_filter_keeps_the_zone_and_master_less_groups_in_default_dialect() {
    let fx = start(|_| {});
    let mut c = fx.client();
    let topics = ["ZT", "ZT2"];
    Broker { zone: Some("z1"), ..broker("C", "broker-a", "127.0.0.1:10911") }.register(&mut c, &topics);
    Broker { zone: Some("z2"), ..broker("C", "broker-b", "127.0.0.2:10911") }.register(&mut c, &topics);
    // A group with only a slave (master down): kept whatever its zone.
    Broker { zone: Some("z2"), id: 1, ..broker("C", "broker-c", "127.0.0.3:10911") }.register(&mut c, &topics);
    broker("C", "broker-d", "127.0.0.4:10911").register(&mut c, &topics);

    let all = route(&mut c, "ZT");
    assert_eq!(broker_names(&all), set(&["broker-a", "broker-b", "broker-c", "broker-d"]));
    assert!(text(&all).contains(r#"{"0":"127.0.0.1:10911"}"#), "version 513 without zone: standard dialect");

    for zone in ["z1", "Z1"] {
        let r = call(
            &mut c,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "ZT"), ("__ZONE_MODE", "true"), ("__ZONE_NAME", zone)],
        );
        assert_eq!(r.code, ResponseCode::SUCCESS);
        assert_eq!(broker_names(&r), set(&["broker-a", "broker-c"]), "zone {zone}: {}", text(&r));
        assert_eq!(perms(&mut c, "ZT").len(), 4, "filtering a reply does not change the tables");
        let qd: BTreeSet<String> = match parse(&r).get("queueDatas") {
            Some(Value::Array(q)) => {
                q.iter().map(|q| q.get("brokerName").unwrap().as_str().unwrap().into_owned()).collect()
            }
            _ => panic!("{}", text(&r)),
        };
        assert_eq!(qd, set(&["broker-a", "broker-c"]), "queue data of dropped brokers goes too");
        // Version 513 asked for standard JSON, but the zone hook re-encodes in the default dialect.
        assert!(text(&r).contains(r#""brokerAddrs":{0:"127.0.0.1:10911"}"#), "{}", text(&r));
        assert!(text(&r).contains(r#""brokerAddrs":{1:"127.0.0.3:10911"}"#), "{}", text(&r));
    }
    // Zone mode off, or a blank zone name: no filter, standard dialect.
    for ext in [[("__ZONE_MODE", "false"), ("__ZONE_NAME", "z1")], [("__ZONE_MODE", "true"), ("__ZONE_NAME", " ")]] {
        let r = call(&mut c, RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "ZT"), ext[0], ext[1]]);
        assert_eq!(broker_names(&r).len(), 4, "{ext:?}");
        assert!(text(&r).contains(r#"{"0":"#), "{ext:?}: {}", text(&r));
    }
    // A zone with no brokers keeps only the master-less group.
    let r = call(
        &mut c,
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        &[("topic", "ZT"), ("__ZONE_MODE", "true"), ("__ZONE_NAME", "z9")],
    );
    assert_eq!(broker_names(&r), set(&["broker-c"]));
}

#[test]
fn order_topic_config_in_routes_and_register_replies() {
    let fx = start(|c| c.order_message_enable = true);
    let mut c = fx.client();
    let a = broker("C", "broker-a", "127.0.0.1:10911");
    // No ORDER_TOPIC_CONFIG namespace yet: no body.
    let r = a.register(&mut c, &["OT", "Plain"]);
    assert!(r.body.is_empty(), "{}", text(&r));
    assert!(!text(&route(&mut c, "OT")).contains("orderTopicConf"));

    let put = call(
        &mut c,
        RequestCode::PUT_KV_CONFIG,
        &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "OT"), ("value", "broker-a:4;broker-b:4")],
    );
    assert_eq!(put.code, ResponseCode::SUCCESS);
    let r = route(&mut c, "OT");
    assert!(text(&r).contains(r#""orderTopicConf":"broker-a:4;broker-b:4""#), "{}", text(&r));
    assert_eq!(parse(&r).get("orderTopicConf").and_then(Value::as_str).as_deref(), Some("broker-a:4;broker-b:4"));
    assert!(!text(&route(&mut c, "Plain")).contains("orderTopicConf"), "only topics with a conf carry it");

    // returnOrderTopicConfigToBroker (default true): every REGISTER_BROKER reply carries the namespace's KVTable.
    let r = a.register(&mut c, &["OT", "Plain"]);
    assert_eq!(text(&r), r#"{"table":{"OT":"broker-a:4;broker-b:4"}}"#);
    let r = broker("C", "broker-b", "127.0.0.2:10911").register(&mut c, &["OT", "B2"]);
    assert_eq!(text(&r), r#"{"table":{"OT":"broker-a:4;broker-b:4"}}"#);
    // Switched off at run time: no body any more.
    assert_eq!(update_config(&mut c, "returnOrderTopicConfigToBroker=false").code, ResponseCode::SUCCESS);
    assert!(a.register(&mut c, &["OT", "Plain"]).body.is_empty());
    // orderMessageEnable off: routes lose orderTopicConf.
    assert_eq!(update_config(&mut c, "orderMessageEnable=false").code, ResponseCode::SUCCESS);
    assert!(!text(&route(&mut c, "OT")).contains("orderTopicConf"));
}

#[test]
fn order_topic_conf_is_off_by_default() {
    let fx = start(|_| {});
    let mut c = fx.client();
    call(&mut c, RequestCode::PUT_KV_CONFIG, &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "OT"), ("value", "x:1")]);
    let r = broker("C", "broker-a", "127.0.0.1:10911").register(&mut c, &["OT", "Plain"]);
    assert_eq!(text(&r), r#"{"table":{"OT":"x:1"}}"#, "brokers get it by default");
    assert!(!text(&route(&mut c, "OT")).contains("orderTopicConf"), "clients only with orderMessageEnable");
}

// ---- topic lists: 224, 304, 311–313 ----

#[test]
fn topic_lists_by_cluster_system_and_unit_flags() {
    let fx = start(|_| {});
    let mut c = fx.client();
    let a = broker("C1", "broker-a", "127.0.0.1:10911");
    // FLAG_UNIT = 1, FLAG_UNIT_SUB = 2.
    a.register_with(&mut c, &["N0", "N0b"], 6, 0);
    a.register_with(&mut c, &["U1", "U1b"], 6, 1);
    a.register_with(&mut c, &["S2", "S2b"], 6, 2);
    a.register_with(&mut c, &["US3", "US3b"], 6, 3);
    broker("C2", "broker-b", "127.0.0.2:10911").register(&mut c, &["B1", "B2"]);

    let by = |c: &mut Client, cluster: &str| {
        topic_list(&call(c, RequestCode::GET_TOPICS_BY_CLUSTER, &[("cluster", cluster)]))
    };
    assert_eq!(by(&mut c, "C1"), set(&["N0", "N0b", "U1", "U1b", "S2", "S2b", "US3", "US3b"]));
    assert_eq!(by(&mut c, "C2"), set(&["B1", "B2"]));
    let r = call(&mut c, RequestCode::GET_TOPICS_BY_CLUSTER, &[("cluster", "nope")]);
    assert_eq!((r.code, text(&r)), (ResponseCode::SUCCESS, r#"{"topicList":[]}"#.to_string()));

    let r = call(&mut c, RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[]);
    assert_eq!(topic_list(&r), set(&["C1", "C2", "broker-a", "broker-b"]));
    let addr = parse(&r).get("brokerAddr").and_then(Value::as_str).map(|s| s.into_owned());
    assert!(matches!(addr.as_deref(), Some("127.0.0.1:10911" | "127.0.0.2:10911")), "brokerAddr {addr:?}");

    let unit = topic_list(&call(&mut c, RequestCode::GET_UNIT_TOPIC_LIST, &[]));
    assert_eq!(unit, set(&["U1", "U1b", "US3", "US3b"]));
    let sub = topic_list(&call(&mut c, RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST, &[]));
    assert_eq!(sub, set(&["S2", "S2b", "US3", "US3b"]));
    let sub_ununit = topic_list(&call(&mut c, RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, &[]));
    assert_eq!(sub_ununit, set(&["S2", "S2b"]));

    let all = topic_list(&call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]));
    assert_eq!(all.len(), 10);
    assert!(parse(&call(&mut c, RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[])).get("brokerAddr").is_none());
}

/// Empty server: every list answers an empty list, 304 without a broker address.
#[test]
fn lists_on_an_empty_server() {
    let fx = start(|_| {});
    let mut c = fx.client();
    for code in [
        RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode::GET_UNIT_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ] {
        let r = call(&mut c, code, &[]);
        assert_eq!((r.code, text(&r)), (ResponseCode::SUCCESS, r#"{"topicList":[]}"#.to_string()), "{code}");
    }
}
