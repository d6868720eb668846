//! Fast path for the usual REGISTER_BROKER body: strict JSON of the usual shape, decoded by serde straight into
//! our types, without building a `Value` tree (a 10k-topic body is decoded on a reactor, in front of queries).
//! Anything unusual — bare keys, numbers as strings, `$ref`, duplicate keys, beans written as arrays, static-topic
//! mappings — makes this return `None` and the lenient decoder takes over, so the result is the same either way
//! (property-tested, and fuzzed as a differential: docs/fuzzing.md).

use std::fmt;
use std::marker::PhantomData;

use std::borrow::Cow;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::model::{BodyMark, DataVersion, RegisterBrokerBody, TopicConfig};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    /// Missing: Java's initial empty list; null: `None`.
    #[serde(default = "empty_list")]
    filter_server_list: Option<Vec<String>>,
    #[serde(borrow)]
    topic_config_serialize_wrapper: Option<Obj<Wrapper<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wrapper<'a> {
    /// Kept raw: its place in the body is the mark (`same`).
    #[serde(borrow)]
    data_version: Option<&'a RawValue>,
    #[serde(borrow)]
    topic_config_table: Option<Ordered<Obj<Tc<'a>>>>,
    topic_queue_mapping_info_map: Option<Ordered<IgnoredAny>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dv {
    counter: Option<i64>,
    state_version: Option<i64>,
    timestamp: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tc<'a> {
    /// Borrowed from the body unless it has escapes: one allocation per topic instead of two.
    #[serde(borrow)]
    topic_name: Option<Cow<'a, str>>,
    read_queue_nums: Option<i32>,
    write_queue_nums: Option<i32>,
    perm: Option<i32>,
    topic_sys_flag: Option<i32>,
}

/// A JSON object's values in body order (the lenient decoder keeps that order too); the keys are not used (a
/// route is keyed by `topicName`), so they are checked but not kept.
struct Ordered<V>(Vec<V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V_<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((_, value)) = map.next_entry::<Cow<'de, str>, V>()? {
                    out.push(value);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

/// A bean that must be written as a JSON object. serde's derived structs also accept an array (the fields in order);
/// fastjson and the lenient decoder take no bean from one, so such a body must go the lenient way.
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V_<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

fn empty_list() -> Option<Vec<String>> {
    Some(Vec::new())
}

/// `None`: not the usual shape; use the lenient decoder. With the body, its mark when it has a DataVersion.
pub(super) fn decode(body: &[u8]) -> Option<(RegisterBrokerBody, Option<BodyMark>)> {
    // One UTF-8 check of the whole body (a fast pass over ASCII) instead of one per string: a 10k-topic body has
    // ~110k short strings, and checking each on its own took ~15 % of the decode. A body that is not UTF-8 goes
    // the lenient way, which reads it as Java does (lossily).
    let text = std::str::from_utf8(body).ok()?;
    let Obj(parsed): Obj<Body> = serde_json::from_str(text).ok()?;
    let mut out = RegisterBrokerBody { filter_server_list: parsed.filter_server_list, ..Default::default() };
    let Some(Obj(wrapper)) = parsed.topic_config_serialize_wrapper else {
        return Some((out, None));
    };
    if wrapper.topic_queue_mapping_info_map.is_some_and(|m| !m.0.is_empty()) {
        return None;
    }
    let mut mark = None;
    if let Some(raw) = wrapper.data_version {
        let Obj(dv): Obj<Dv> = serde_json::from_str(raw.get()).ok()?;
        out.data_version = DataVersion {
            counter: dv.counter.unwrap_or(0),
            state_version: dv.state_version.unwrap_or(0),
            timestamp: dv.timestamp.unwrap_or(0),
        };
        // The raw value borrows from `body`: its address tells where it sits.
        let start = (raw.get().as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
        mark = super::same::mark(body, start, start + raw.get().len());
    }
    let topics = wrapper.topic_config_table.map(|t| t.0).unwrap_or_default();
    out.topic_configs.reserve_exact(topics.len());
    for Obj(tc) in topics {
        let Some(name) = tc.topic_name else { continue };
        let mut c = TopicConfig::with_defaults(&*name);
        c.read_queue_nums = tc.read_queue_nums.unwrap_or(c.read_queue_nums);
        c.write_queue_nums = tc.write_queue_nums.unwrap_or(c.write_queue_nums);
        c.perm = tc.perm.unwrap_or(c.perm);
        c.topic_sys_flag = tc.topic_sys_flag.unwrap_or(c.topic_sys_flag);
        out.topic_configs.push(c);
    }
    Some((out, mark))
}
