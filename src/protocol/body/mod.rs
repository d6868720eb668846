//! Request and response bodies (§3 of the reference). Decoders are lenient like fastjson; encoders write fastjson's
//! bytes (alphabetical bean keys, nulls omitted).
//!
//! - `register`: RegisterBrokerBody, JSON form (§3.4).
//! - `zlib`: RegisterBrokerBody, compressed form (§3.5).
//! - `beans`: shared bean readers/writers (DataVersion, BrokerData, TopicQueueMappingInfo).
//! - `responses`: the other bodies (route, cluster info, topic list, KV).

mod beans;
mod fast;
mod register;
mod responses;
mod same;
mod scan;
mod zlib;

use std::collections::BTreeMap;

use crate::model::{
    BodyMark, BrokerMemberGroup, ClusterInfo, DataVersion, QueueData, RegisterBrokerBody, TopicList, TopicRouteData,
};

use super::json::{self, Dialect, Value};

/// A body that cannot be decoded; answered with SYSTEM_ERROR and this text as remark.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    #[error("invalid JSON body: {0}")]
    Json(String),
    #[error("invalid compressed body: {0}")]
    Compressed(String),
    #[error("[LIMIT] decompressed body exceeds maxInflatedBody={0} bytes")]
    TooLarge(usize),
    #[error("invalid body: {0}")]
    Shape(String),
}

/// How many topics a decoder reads between two calls of its `give_way` (~30 µs of scanning).
const GIVE_WAY_TOPICS: usize = 256;

/// Parses a JSON body with the tolerant reader.
fn parse_json(body: &[u8]) -> Result<Value, BodyError> {
    json::parse(body).map_err(|e| BodyError::Json(e.to_string()))
}

/// First byte of a zlib stream (deflate, 32 KiB window): what `DeflaterOutputStream` always writes.
const ZLIB_MAGIC: u8 = 0x78;

/// Decodes a REGISTER_BROKER body (§3.4, §3.5). `version` is the request's: < 37 means a bare
/// `TopicConfigSerializeWrapper`, ≥ 413 reads the zlib mapping section. A body flagged uncompressed that starts with
/// a zlib header (0x78) instead of `{` is inflated anyway (5.x brokers mislabel it). Inflating stops with
/// `TooLarge` once `max_inflated` bytes are produced. An empty body is an empty table with a zero DataVersion.
pub fn decode_register_broker_body(
    body: &[u8],
    compressed: bool,
    version: i32,
    max_inflated: usize,
) -> Result<RegisterBrokerBody, BodyError> {
    decode_register_broker_body_marked(body, compressed, version, max_inflated, &|| {}).map(|(b, _)| b)
}

/// `decode_register_broker_body`, plus the body's mark when the next one can be recognised by it
/// (`same_register_body`): JSON bodies of the usual shape with a DataVersion, and zlib bodies.
///
/// `give_way` is called between pieces of the work, about every 30 µs of it: every `GIVE_WAY_TOPICS` topics read by
/// the scanner or from a zlib body, every 16 KiB inflated. The decoder thread gives way to the reactors there, so a
/// query that arrives meanwhile need not wait for the rest of its slice (decision 0025); the decoding itself never
/// waits. The rarer shapes that the serde and lenient decoders take are read in one piece.
pub fn decode_register_broker_body_marked(
    body: &[u8],
    compressed: bool,
    version: i32,
    max_inflated: usize,
    give_way: &dyn Fn(),
) -> Result<(RegisterBrokerBody, Option<BodyMark>), BodyError> {
    match body.first() {
        // Java builds a fresh body: its filter-server list is empty, not null (older brokers: no list at all).
        None => Ok((
            RegisterBrokerBody {
                filter_server_list: (version >= register::V3_0_11).then(Vec::new),
                ..RegisterBrokerBody::default()
            },
            None,
        )),
        // Sniffing both ways is harmless: '{' (0x7B) can never start a zlib stream and 0x78 never starts JSON.
        Some(&ZLIB_MAGIC) => zlib::decode_marked(body, version, max_inflated, give_way).map(|(b, m)| (b, Some(m))),
        Some(b'{') => register::decode(body, version, give_way),
        Some(_) if compressed => zlib::decode_marked(body, version, max_inflated, give_way).map(|(b, m)| (b, Some(m))),
        Some(_) => register::decode(body, version, give_way),
    }
}

/// The DataVersion of `body` if it is the body `mark` was taken from with only its DataVersion changed. A zlib body
/// (told apart as `decode_register_broker_body_marked` does) is inflated, at most `max_inflated` bytes, and compared
/// inflated; a JSON mark never matches a zlib body nor the other way round (different bytes: only a collision could).
/// `give_way` as for `decode_register_broker_body_marked` (while inflating).
pub fn same_register_body(
    body: &[u8],
    compressed: bool,
    mark: &BodyMark,
    max_inflated: usize,
    give_way: &dyn Fn(),
) -> Option<DataVersion> {
    match body.first() {
        Some(&ZLIB_MAGIC) => zlib::same_dv(body, mark, max_inflated, give_way),
        Some(b'{') | None => same::same_json(body, mark),
        Some(_) if compressed => zlib::same_dv(body, mark, max_inflated, give_way),
        Some(_) => same::same_json(body, mark),
    }
}

/// Encodes a REGISTER_BROKER body the way a broker of `version` does (JSON, or zlib when `compressed`); for tests,
/// the perf harness and the differential suite.
pub fn encode_register_broker_body(body: &RegisterBrokerBody, compressed: bool, version: i32) -> Vec<u8> {
    if compressed {
        zlib::encode(body, version)
    } else {
        register::encode(body, version)
    }
}

/// A `DataVersion` JSON body (QUERY_DATA_VERSION request).
pub(crate) fn decode_data_version(body: &[u8]) -> Result<DataVersion, BodyError> {
    let v = parse_json(body)?;
    if !matches!(v, Value::Object(_)) {
        return Err(BodyError::Shape("DataVersion is not an object".into()));
    }
    beans::read_data_version(&v)
}

/// The `queueDatas` of a `TopicRouteData` JSON body (REGISTER_TOPIC_IN_NAMESRV), in order; `None` for an entry
/// without a broker name (Java stops registering there).
pub(crate) fn decode_queue_datas(body: &[u8]) -> Result<Vec<Option<QueueData>>, BodyError> {
    let v = parse_json(body)?;
    if !matches!(v, Value::Object(_)) {
        return Err(BodyError::Shape("TopicRouteData is not an object".into()));
    }
    beans::read_queue_datas(&v)
}

pub fn encode_topic_route(route: &TopicRouteData, dialect: Dialect, out: &mut Vec<u8>) {
    responses::topic_route(route, dialect, out)
}

/// Always the default dialect.
pub(crate) fn encode_cluster_info(info: &ClusterInfo, out: &mut Vec<u8>) {
    responses::cluster_info(info, Dialect::Default, out)
}

/// ClusterInfo in a chosen dialect (the standard one is valid JSON, for the HTTP endpoint).
pub(crate) fn encode_cluster_info_with(info: &ClusterInfo, dialect: Dialect, out: &mut Vec<u8>) {
    responses::cluster_info(info, dialect, out)
}

pub(crate) fn encode_topic_list(list: &TopicList, out: &mut Vec<u8>) {
    responses::topic_list(list, out)
}

pub(crate) fn encode_data_version(dv: &DataVersion, out: &mut Vec<u8>) {
    responses::data_version(dv, out)
}

/// `{"brokerMemberGroup":{…}}`, default dialect.
pub(crate) fn encode_broker_member_group(group: &BrokerMemberGroup, out: &mut Vec<u8>) {
    responses::broker_member_group(group, out)
}

/// `KVTable`: `{"table":{…}}`.
pub(crate) fn encode_kv_table(table: &BTreeMap<String, String>, out: &mut Vec<u8>) {
    responses::kv_table(table, out)
}

/// `kvConfig.json`: `{"configTable":{namespace:{key:value}}}`.
pub(crate) fn encode_kv_config_file(config: &BTreeMap<String, BTreeMap<String, String>>, out: &mut Vec<u8>) {
    responses::kv_config_file(config, out)
}

/// Lenient like fastjson: unknown keys ignored, null values and namespaces skipped, an empty file is an empty store.
pub(crate) fn decode_kv_config_file(bytes: &[u8]) -> Result<BTreeMap<String, BTreeMap<String, String>>, BodyError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(BTreeMap::new());
    }
    let v = parse_json(bytes)?;
    if !matches!(v, Value::Object(_)) {
        return Err(BodyError::Shape("kvConfig is not an object".into()));
    }
    let mut config = BTreeMap::new();
    let Some(table) = v.get("configTable") else {
        return Ok(config);
    };
    for (namespace, entries) in table.members() {
        if !matches!(entries, Value::Object(_)) {
            continue;
        }
        let kv: BTreeMap<String, String> =
            entries.members().iter().filter_map(|(k, val)| Some((k.clone(), beans::text(val)?))).collect();
        config.insert(namespace.clone(), kv);
    }
    Ok(config)
}

#[cfg(test)]
mod tests;
