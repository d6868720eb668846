//! Request and response bodies (§3 of the reference). Decoders are lenient like fastjson; encoders write fastjson's
//! bytes (alphabetical bean keys, nulls omitted).

use std::collections::BTreeMap;

use crate::model::{
    BrokerMemberGroup, ClusterInfo, DataVersion, QueueData, RegisterBrokerBody, TopicList,
    TopicRouteData,
};

use super::json::Dialect;

/// A body that cannot be decoded; answered with SYSTEM_ERROR and this text as remark.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    #[error("invalid JSON body: {0}")]
    Json(String),
    #[error("invalid compressed body: {0}")]
    Compressed(String),
    #[error("decompressed body exceeds {0} bytes")]
    TooLarge(usize),
    #[error("invalid body: {0}")]
    Shape(String),
}

/// Decodes a REGISTER_BROKER body (§3.4, §3.5). `version` is the request's: < 37 means a bare
/// `TopicConfigSerializeWrapper`, ≥ 413 reads the zlib mapping section. A body flagged uncompressed that starts with
/// a zlib header (0x78) instead of `{` is inflated anyway (5.x brokers mislabel it). Inflating stops with
/// `TooLarge` once `max_inflated` bytes are produced. An empty body is an empty table with a zero DataVersion.
pub fn decode_register_broker_body(
    _body: &[u8],
    _compressed: bool,
    _version: i32,
    _max_inflated: usize,
) -> Result<RegisterBrokerBody, BodyError> {
    unimplemented!()
}

/// Encodes a REGISTER_BROKER body the way a broker of `version` does (JSON, or zlib when `compressed`); for tests,
/// the perf harness and the differential suite.
pub fn encode_register_broker_body(
    _body: &RegisterBrokerBody,
    _compressed: bool,
    _version: i32,
) -> Vec<u8> {
    unimplemented!()
}

/// A `DataVersion` JSON body (QUERY_DATA_VERSION request).
pub fn decode_data_version(_body: &[u8]) -> Result<DataVersion, BodyError> {
    unimplemented!()
}

/// The `queueDatas` of a `TopicRouteData` JSON body (REGISTER_TOPIC_IN_NAMESRV).
pub fn decode_queue_datas(_body: &[u8]) -> Result<Vec<QueueData>, BodyError> {
    unimplemented!()
}

pub fn encode_topic_route(_route: &TopicRouteData, _dialect: Dialect, _out: &mut Vec<u8>) {
    unimplemented!()
}

/// Always the default dialect.
pub fn encode_cluster_info(_info: &ClusterInfo, _out: &mut Vec<u8>) {
    unimplemented!()
}

pub fn encode_topic_list(_list: &TopicList, _out: &mut Vec<u8>) {
    unimplemented!()
}

pub fn encode_data_version(_dv: &DataVersion, _out: &mut Vec<u8>) {
    unimplemented!()
}

/// `{"brokerMemberGroup":{…}}`, default dialect.
pub fn encode_broker_member_group(_group: &BrokerMemberGroup, _out: &mut Vec<u8>) {
    unimplemented!()
}

/// `KVTable`: `{"table":{…}}`.
pub fn encode_kv_table(_table: &BTreeMap<String, String>, _out: &mut Vec<u8>) {
    unimplemented!()
}

/// `kvConfig.json`: `{"configTable":{namespace:{key:value}}}`.
pub fn encode_kv_config_file(
    _config: &BTreeMap<String, BTreeMap<String, String>>,
    _out: &mut Vec<u8>,
) {
    unimplemented!()
}

pub fn decode_kv_config_file(
    _bytes: &[u8],
) -> Result<BTreeMap<String, BTreeMap<String, String>>, BodyError> {
    unimplemented!()
}
