//! Readers and writers for the small beans several bodies share. Readers coerce like fastjson (numbers as strings,
//! missing or null fields take the Java default, `$ref` objects read as defaults); writers emit fastjson's
//! alphabetical property order.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::BodyError;
use crate::model::{BrokerData, DataVersion, QueueData, TopicConfig, TopicQueueMappingInfo};
use crate::protocol::json::{JsonWriter, Value};

/// `TopicQueueMappingInfo.scope`'s Java initial value.
pub(super) const DEFAULT_SCOPE: &str = "__global__";

/// A value where Java expects a String: scalars as text, containers as their JSON text, null as absent.
pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Array(_) | Value::Object(_) => Some(v.to_json_text()),
        _ => v.as_str().map(|s| s.into_owned()),
    }
}

pub(super) fn opt_text(obj: &Value, key: &str) -> Option<String> {
    obj.get(key).and_then(text)
}

fn shape(key: &str, v: &Value) -> BodyError {
    BodyError::Shape(format!("field {key}: cannot read {} as a number", v.to_json_text()))
}

/// Missing or null → `None`; a value fastjson could not coerce is an error, as in Java.
pub(super) fn opt_i64(obj: &Value, key: &str) -> Result<Option<i64>, BodyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| shape(key, v)),
    }
}

pub(super) fn opt_i32(obj: &Value, key: &str) -> Result<Option<i32>, BodyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i32().map(Some).ok_or_else(|| shape(key, v)),
    }
}

fn opt_bool(obj: &Value, key: &str) -> Result<Option<bool>, BodyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_bool().map(Some).ok_or_else(|| BodyError::Shape(format!("field {key}: not a boolean"))),
    }
}

/// A bean where fastjson would build one: objects only; `$ref` and null read as "all defaults".
fn bean(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| matches!(v, Value::Object(_)) && !v.is_ref())
}

pub(super) fn read_data_version(v: &Value) -> Result<DataVersion, BodyError> {
    let Some(v) = bean(Some(v)) else {
        return Ok(DataVersion::default());
    };
    Ok(DataVersion {
        counter: opt_i64(v, "counter")?.unwrap_or(0),
        state_version: opt_i64(v, "stateVersion")?.unwrap_or(0),
        timestamp: opt_i64(v, "timestamp")?.unwrap_or(0),
    })
}

pub(super) fn read_opt_data_version(v: Option<&Value>) -> Result<DataVersion, BodyError> {
    v.map_or(Ok(DataVersion::default()), read_data_version)
}

/// A `TopicConfig`; `None` when it has no `topicName` (the route is keyed by that field, not the map key).
pub(super) fn read_topic_config(v: &Value) -> Result<Option<TopicConfig>, BodyError> {
    let Some(v) = bean(Some(v)) else {
        return Ok(None);
    };
    let Some(name) = opt_text(v, "topicName") else {
        return Ok(None);
    };
    let mut tc = TopicConfig::with_defaults(name);
    if let Some(n) = opt_i32(v, "readQueueNums")? {
        tc.read_queue_nums = n;
    }
    if let Some(n) = opt_i32(v, "writeQueueNums")? {
        tc.write_queue_nums = n;
    }
    if let Some(n) = opt_i32(v, "perm")? {
        tc.perm = n;
    }
    if let Some(n) = opt_i32(v, "topicSysFlag")? {
        tc.topic_sys_flag = n;
    }
    Ok(Some(tc))
}

pub(super) fn read_mapping_info(v: &Value) -> Result<TopicQueueMappingInfo, BodyError> {
    let mut info = TopicQueueMappingInfo { scope: Some(DEFAULT_SCOPE.to_string()), ..TopicQueueMappingInfo::default() };
    let Some(v) = bean(Some(v)) else {
        return Ok(info);
    };
    info.topic = opt_text(v, "topic");
    if let Some(scope) = opt_text(v, "scope") {
        info.scope = Some(scope);
    }
    info.total_queues = opt_i32(v, "totalQueues")?.unwrap_or(0);
    info.bname = opt_text(v, "bname");
    info.epoch = opt_i64(v, "epoch")?.unwrap_or(0);
    info.dirty = opt_bool(v, "dirty")?.unwrap_or(false);
    info.curr_id_map = match v.get("currIdMap") {
        None | Some(Value::Null) => None,
        Some(m) => {
            let mut map = BTreeMap::new();
            for (k, val) in m.members() {
                if matches!(val, Value::Null) || k == "$ref" {
                    continue;
                }
                let key = Value::String(k.clone())
                    .as_i32()
                    .ok_or_else(|| BodyError::Shape(format!("currIdMap key {k:?} is not an int")))?;
                let n = val.as_i32().ok_or_else(|| shape("currIdMap", val))?;
                map.insert(key, n);
            }
            Some(map)
        }
    };
    Ok(info)
}

/// `queueDatas` of a TopicRouteData, in order: `None` for an entry Java reads as a QueueData without a broker name (a null entry, a missing or null
/// `brokerName`); a scalar or array entry is an error, as fastjson2 refuses it.
pub(super) fn read_queue_datas(route: &Value) -> Result<Vec<Option<QueueData>>, BodyError> {
    let items = match route.get("queueDatas") {
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    let mut out = Vec::with_capacity(items.len());
    for q in items {
        let q = match q {
            Value::Null => {
                out.push(None);
                continue;
            }
            Value::Object(_) if q.is_ref() => continue,
            Value::Object(_) => q,
            other => {
                return Err(BodyError::Shape(format!("queueDatas entry {} is not an object", other.to_json_text())))
            }
        };
        let Some(name) = opt_text(q, "brokerName") else {
            out.push(None);
            continue;
        };
        // `topicSynFlag` is the pre-4.9.0 name of `topicSysFlag`.
        let sys_flag = match opt_i32(q, "topicSysFlag")? {
            Some(n) => n,
            None => opt_i32(q, "topicSynFlag")?.unwrap_or(0),
        };
        out.push(Some(QueueData {
            broker_name: Arc::from(name),
            read_queue_nums: opt_i32(q, "readQueueNums")?.unwrap_or(0),
            write_queue_nums: opt_i32(q, "writeQueueNums")?.unwrap_or(0),
            perm: opt_i32(q, "perm")?.unwrap_or(0),
            topic_sys_flag: sys_flag,
        }));
    }
    Ok(out)
}

/// `stateVersion` exists only in 5.x DataVersion.
pub(super) fn write_data_version(w: &mut JsonWriter, dv: &DataVersion, with_state: bool) {
    w.begin_object();
    w.field("counter");
    w.long(dv.counter);
    if with_state {
        w.field("stateVersion");
        w.long(dv.state_version);
    }
    w.field("timestamp");
    w.long(dv.timestamp);
    w.end_object();
}

pub(super) fn write_broker_addrs(w: &mut JsonWriter, addrs: &BTreeMap<i64, String>) {
    w.begin_object();
    for (id, addr) in addrs {
        w.int_key(*id);
        w.string(addr);
    }
    w.end_object();
}

pub(super) fn write_broker_data(w: &mut JsonWriter, bd: &BrokerData) {
    w.begin_object();
    w.field("brokerAddrs");
    write_broker_addrs(w, &bd.broker_addrs);
    w.field("brokerName");
    w.string(&bd.broker_name);
    w.field("cluster");
    w.string(&bd.cluster);
    w.field("enableActingMaster");
    w.bool(bd.enable_acting_master);
    if let Some(zone) = &bd.zone_name {
        w.field("zoneName");
        w.string(zone);
    }
    w.end_object();
}

pub(super) fn write_queue_data(w: &mut JsonWriter, q: &QueueData) {
    w.begin_object();
    w.field("brokerName");
    w.string(&q.broker_name);
    w.field("perm");
    w.int(q.perm);
    w.field("readQueueNums");
    w.int(q.read_queue_nums);
    w.field("topicSysFlag");
    w.int(q.topic_sys_flag);
    w.field("writeQueueNums");
    w.int(q.write_queue_nums);
    w.end_object();
}

pub(super) fn write_mapping_info(w: &mut JsonWriter, info: &TopicQueueMappingInfo) {
    w.begin_object();
    if let Some(bname) = &info.bname {
        w.field("bname");
        w.string(bname);
    }
    if let Some(map) = &info.curr_id_map {
        w.field("currIdMap");
        w.begin_object();
        for (k, v) in map {
            w.int_key(i64::from(*k));
            w.int(*v);
        }
        w.end_object();
    }
    w.field("dirty");
    w.bool(info.dirty);
    w.field("epoch");
    w.long(info.epoch);
    if let Some(scope) = &info.scope {
        w.field("scope");
        w.string(scope);
    }
    if let Some(topic) = &info.topic {
        w.field("topic");
        w.string(topic);
    }
    w.field("totalQueues");
    w.int(info.total_queues);
    w.end_object();
}

pub(super) fn write_string_array(w: &mut JsonWriter, items: &[impl AsRef<str>]) {
    w.begin_array();
    for s in items {
        w.string(s.as_ref());
    }
    w.end_array();
}
