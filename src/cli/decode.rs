//! Response bodies → model types, with the crate's lenient reader: both fastjson dialects (bare or quoted integer
//! keys), numbers as strings, unknown keys ignored.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use crate::protocol::json::{self, JsonError, Value};

/// Why a response body could not be read; `what` names the body (`topic route`, `KV table`, …).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum DecodeError {
    #[error("cannot read the {what}: {source}")]
    Json { what: &'static str, source: JsonError },
    #[error("cannot read the {what}: not a JSON object")]
    NotAnObject { what: &'static str },
    #[error("broker id {id:?} is not a number")]
    BrokerId { id: String },
}

fn parse(body: &[u8], what: &'static str) -> Result<Value, DecodeError> {
    let v = json::parse(body).map_err(|source| DecodeError::Json { what, source })?;
    if matches!(v, Value::Object(_)) {
        Ok(v)
    } else {
        Err(DecodeError::NotAnObject { what })
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(|s| s.into_owned())
}

fn int(v: Option<&Value>) -> i32 {
    v.and_then(Value::as_i32).unwrap_or(0)
}

fn broker_data(v: &Value) -> Result<BrokerData, DecodeError> {
    let mut addrs = BTreeMap::new();
    if let Some(table) = v.get("brokerAddrs") {
        for (id, addr) in table.members() {
            let id: i64 = id.trim().parse().map_err(|_| DecodeError::BrokerId { id: id.clone() })?;
            if let Some(addr) = addr.as_str() {
                addrs.insert(id, addr.into_owned());
            }
        }
    }
    Ok(BrokerData {
        cluster: Arc::from(text(v.get("cluster")).unwrap_or_default()),
        broker_name: Arc::from(text(v.get("brokerName")).unwrap_or_default()),
        broker_addrs: addrs,
        zone_name: text(v.get("zoneName")),
        enable_acting_master: v.get("enableActingMaster").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn queue_data(v: &Value) -> QueueData {
    QueueData {
        broker_name: Arc::from(text(v.get("brokerName")).unwrap_or_default()),
        read_queue_nums: int(v.get("readQueueNums")),
        write_queue_nums: int(v.get("writeQueueNums")),
        perm: int(v.get("perm")),
        // `topicSynFlag` is the pre-4.9.0 name.
        topic_sys_flag: int(v.get("topicSysFlag").or_else(|| v.get("topicSynFlag"))),
    }
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    match v.get(key) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

/// `TopicRouteData` (105). Static-topic mapping info is not read.
pub(super) fn topic_route(body: &[u8]) -> Result<TopicRouteData, DecodeError> {
    let v = parse(body, "topic route")?;
    let mut route = TopicRouteData {
        queue_datas: array(&v, "queueDatas").iter().map(queue_data).collect(),
        broker_datas: array(&v, "brokerDatas")
            .iter()
            .map(|b| broker_data(b).map(Arc::new))
            .collect::<Result<_, _>>()?,
        order_topic_conf: text(v.get("orderTopicConf")),
        ..TopicRouteData::default()
    };
    if let Some(table) = v.get("filterServerTable") {
        for (addr, servers) in table.members() {
            let list = match servers {
                Value::Array(items) => items.iter().filter_map(|s| text(Some(s))).collect(),
                _ => Vec::new(),
            };
            route.filter_server_table.insert(addr.clone(), list);
        }
    }
    Ok(route)
}

/// `ClusterInfo` (106), always fastjson's default dialect on the wire.
pub(super) fn cluster_info(body: &[u8]) -> Result<ClusterInfo, DecodeError> {
    let v = parse(body, "cluster info")?;
    let mut info = ClusterInfo::default();
    if let Some(table) = v.get("brokerAddrTable") {
        for (name, bd) in table.members() {
            info.broker_addr_table.insert(Arc::from(name.as_str()), Arc::new(broker_data(bd)?));
        }
    }
    if let Some(table) = v.get("clusterAddrTable") {
        for (cluster, names) in table.members() {
            let names = match names {
                Value::Array(items) => items.iter().filter_map(|s| text(Some(s))).map(Arc::from).collect(),
                _ => Vec::new(),
            };
            info.cluster_addr_table.insert(Arc::from(cluster.as_str()), names);
        }
    }
    Ok(info)
}

/// `TopicList` (206): the topics, sorted and deduplicated.
pub(super) fn topic_list(body: &[u8]) -> Result<Vec<String>, DecodeError> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let v = parse(body, "topic list")?;
    let mut topics: Vec<String> = array(&v, "topicList").iter().filter_map(|s| text(Some(s))).collect();
    topics.sort();
    topics.dedup();
    Ok(topics)
}

/// `KVTable` (219).
pub(super) fn kv_table(body: &[u8]) -> Result<BTreeMap<String, String>, DecodeError> {
    if body.is_empty() {
        return Ok(BTreeMap::new());
    }
    let v = parse(body, "KV table")?;
    Ok(v.get("table")
        .map(|t| t.members().iter().filter_map(|(k, val)| Some((k.clone(), text(Some(val))?))).collect())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_dialects() {
        let default = br#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":8}]}"#;
        let standard = br#"{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":8}]}"#;
        let a = topic_route(default).unwrap();
        assert_eq!(a, topic_route(standard).unwrap());
        assert_eq!(a.broker_datas[0].broker_addrs[&1], "10.0.0.2:10911");
        assert_eq!(a.queue_datas[0].write_queue_nums, 8);

        let info = cluster_info(br#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1"},"brokerName":"broker-a","cluster":"C"}},"clusterAddrTable":{"C":["broker-a"]}}"#).unwrap();
        assert_eq!(info.cluster_addr_table[&Arc::from("C")], vec![Arc::from("broker-a")]);
        assert_eq!(topic_list(br#"{"topicList":["b","a","b"]}"#).unwrap(), vec!["a", "b"]);
        assert_eq!(kv_table(br#"{"table":{"k":"v"}}"#).unwrap()["k"], "v");
        assert_eq!(topic_route(b"[1]"), Err(DecodeError::NotAnObject { what: "topic route" }));
    }

    #[test]
    fn errors_name_the_body_and_the_fault() {
        assert!(matches!(kv_table(b"{"), Err(DecodeError::Json { what: "KV table", .. })));
        let e = cluster_info(br#"{"brokerAddrTable":{"b":{"brokerAddrs":{"x":"h:1"}}}}"#).unwrap_err();
        assert_eq!(e, DecodeError::BrokerId { id: "x".into() });
        assert_eq!(e.to_string(), r#"broker id "x" is not a number"#);
    }
}
