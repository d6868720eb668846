//! RegisterBrokerBody, JSON form (§3.4): `{"filterServerList":[…],"topicConfigSerializeWrapper":{…}}`.
//!
//! One JSON body has three decoders, tried in this order by `decode` (the only caller of all three; it serves the
//! reactors, the decoder thread and the writer, through `decode_register_broker_body_marked`). Each exists for
//! bodies the one before it refuses; none may read a body differently from another (`tests_scan.rs`, `tests.rs`,
//! and the `register_body` fuzz target's differential, docs/fuzzing.md).
//!
//! - `scan` (decisions 0019, 0020): exactly what Java 4.9 and 5.x brokers write — known keys once, plain integers,
//!   strings without escapes, empty `attributes` and mapping maps. It is there for speed on the path every cold
//!   load and every changed registration takes: it reads the same body faster than serde, and took a measurable
//!   share off the server's CPU and time in a cold load (`perf/results/2026-12-03-body-scanner.md`). Folding it
//!   into `fast` gives that back.
//! - `fast` (serde): strict JSON of the usual shape, but any key set (unknown keys skipped), escapes, nulls, and
//!   topics with `attributes`, which a 5.x topic given a message type has (`updateTopic -a +message.type=FIFO`):
//!   one such topic sends its broker's whole body here. It is there because it is the fast path that still gives
//!   the body its mark (decision 0012): folded into `lenient`, such a broker's unchanged re-registration every 30 s
//!   would be decoded and applied in full instead of recognised, and each decode would build a `Value` tree
//!   (many times the body in memory: docs/fuzzing.md, finding 4) where serde builds none.
//! - `lenient` (`decode_lenient`): every shape fastjson accepts — bare keys, numbers as strings, `$ref`, duplicate
//!   keys, beans as arrays, static-topic mappings, bodies that are not UTF-8, and the bare wrapper of brokers before
//!   V3_0_11. It is there for correctness: these are bodies Java accepts, so refusing them would break brokers
//!   that register with Java today. It gives no mark, so such bodies are never recognised.

use super::beans;
use super::{parse_json, BodyError};
use crate::model::{BodyMark, RegisterBrokerBody, TopicConfig};
use crate::protocol::json::{Dialect, JsonWriter, Value};

/// `MQVersion` V3_0_11: older brokers send a bare `TopicConfigSerializeWrapper`.
pub(super) const V3_0_11: i32 = 37;
/// `MQVersion` V5_0_0: the 5.x body shape and the zlib mapping section.
pub(super) const V5_0_0: i32 = 413;

/// The body and, when a fast decoder (`scan`, then `fast`) took it, its mark (`same`).
pub(super) fn decode(
    body: &[u8],
    version: i32,
    give_way: &dyn Fn(),
) -> Result<(RegisterBrokerBody, Option<BodyMark>), BodyError> {
    if version >= V3_0_11 {
        let scanned = super::scan::decode_with(body, super::scan::Topics::AsWrittenFirst, give_way);
        if let Some(fast) = scanned.or_else(|| super::fast::decode(body)) {
            return Ok(fast);
        }
    }
    Ok((decode_lenient(body, version)?, None))
}

/// Every shape fastjson accepts.
pub(super) fn decode_lenient(body: &[u8], version: i32) -> Result<RegisterBrokerBody, BodyError> {
    let v = parse_json(body)?;
    if !matches!(v, Value::Object(_)) {
        return Err(BodyError::Shape("RegisterBrokerBody is not an object".into()));
    }
    let mut out = RegisterBrokerBody::default();
    let wrapper = if version < V3_0_11 {
        Some(&v)
    } else {
        // Java's `RegisterBrokerBody.filterServerList` starts as an empty list (which removes the broker's filter
        // servers); only an explicit null leaves them alone.
        out.filter_server_list = match v.get("filterServerList") {
            None => Some(Vec::new()),
            Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(items.iter().filter_map(beans::text).collect()),
            Some(other) if other.is_ref() => Some(Vec::new()),
            Some(_) => return Err(BodyError::Shape("filterServerList is not an array".into())),
        };
        v.get("topicConfigSerializeWrapper")
    };
    let Some(wrapper) = wrapper.filter(|w| matches!(w, Value::Object(_))) else {
        return Ok(out);
    };
    out.data_version = beans::read_opt_data_version(wrapper.get("dataVersion"))?;
    if let Some(table) = wrapper.get("topicConfigTable") {
        for (_, tc) in table.members() {
            if let Some(tc) = beans::read_topic_config(tc)? {
                out.topic_configs.push(tc);
            }
        }
    }
    if let Some(infos) = wrapper.get("topicQueueMappingInfoMap") {
        for (topic, info) in infos.members() {
            if topic == "$ref" || matches!(info, Value::Null) {
                continue;
            }
            out.mapping_infos.push((topic.clone(), beans::read_mapping_info(info)?));
        }
    }
    Ok(out)
}

/// What a broker of `version` sends: 5.x shape from V5_0_0 on, the 4.9 shape (no stateVersion, attributes or
/// mapping keys) below.
pub(super) fn encode(body: &RegisterBrokerBody, version: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + body.topic_configs.len() * 160);
    let mut w = JsonWriter::new(&mut out, Dialect::Default);
    let five = version >= V5_0_0;
    if version < V3_0_11 {
        write_wrapper(&mut w, body, five);
        return out;
    }
    w.begin_object();
    // `None` (leave the broker's filter servers alone) is an explicit null: Java reads a missing key as an empty
    // list, which removes them.
    w.field("filterServerList");
    match &body.filter_server_list {
        Some(list) => beans::write_string_array(&mut w, list),
        None => w.null(),
    }
    w.field("topicConfigSerializeWrapper");
    write_wrapper(&mut w, body, five);
    w.end_object();
    out
}

fn write_wrapper(w: &mut JsonWriter, body: &RegisterBrokerBody, five: bool) {
    w.begin_object();
    w.field("dataVersion");
    beans::write_data_version(w, &body.data_version, five);
    if five {
        w.field("mappingDataVersion");
        let mapping = crate::model::DataVersion { timestamp: body.data_version.timestamp, ..Default::default() };
        beans::write_data_version(w, &mapping, true);
    }
    w.field("topicConfigTable");
    w.begin_object();
    for tc in &body.topic_configs {
        w.key(&tc.topic_name);
        write_topic_config(w, tc, five);
    }
    w.end_object();
    if five {
        w.field("topicQueueMappingDetailMap");
        w.begin_object();
        w.end_object();
        w.field("topicQueueMappingInfoMap");
        w.begin_object();
        for (topic, info) in &body.mapping_infos {
            w.key(topic);
            beans::write_mapping_info(w, info);
        }
        w.end_object();
    }
    w.end_object();
}

fn write_topic_config(w: &mut JsonWriter, tc: &TopicConfig, five: bool) {
    w.begin_object();
    if five {
        w.field("attributes");
        w.begin_object();
        w.end_object();
    }
    w.field("order");
    w.bool(false);
    w.field("perm");
    w.int(tc.perm);
    w.field("readQueueNums");
    w.int(tc.read_queue_nums);
    w.field("topicFilterType");
    w.string("SINGLE_TAG");
    w.field("topicName");
    w.string(&tc.topic_name);
    w.field("topicSysFlag");
    w.int(tc.topic_sys_flag);
    w.field("writeQueueNums");
    w.int(tc.write_queue_nums);
    w.end_object();
}
