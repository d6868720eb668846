//! The quickest path for a usual REGISTER_BROKER body: the one-pass scanner (`json::scan`) over exactly the JSON a
//! broker writes, tried before the serde fast path (`fast`; decision 0019). serde spent ~260 ns on each topic of a
//! 10k-topic body, mostly matching field names through its visitor machinery and skipping the fields a route does
//! not need; this reads the same bytes in ~160 ns.
//!
//! It takes only a narrow shape: the keys a broker writes (each at most once), integers without fraction or
//! exponent, strings without escapes or control characters, `attributes` and the mapping maps empty. Anything else —
//! an unknown key, a null where a number belongs, an escape, a static-topic mapping — returns `None` and the serde
//! path decides, then the lenient decoder. What this accepts, the lenient decoder reads the same (property-tested,
//! and fuzzed: docs/fuzzing.md).

use std::sync::Arc;

use crate::model::{BodyMark, DataVersion, RegisterBrokerBody, TopicConfig};
use crate::protocol::json::scan::Scanner;

/// `None`: not the narrow shape; try the next decoder. With the body, its mark when it has a DataVersion.
pub(super) fn decode(body: &[u8]) -> Option<(RegisterBrokerBody, Option<BodyMark>)> {
    // One UTF-8 check of the whole body, instead of one per string.
    let mut s = Scanner::new(std::str::from_utf8(body).ok()?);
    // Java's `filterServerList` starts as an empty list: a body without the key removes the filter servers.
    let mut out = RegisterBrokerBody { filter_server_list: Some(Vec::new()), ..Default::default() };
    let mut dv_span = None;
    let mut seen = Seen::default();
    s.ws();
    s.object(|s, key| match key {
        "filterServerList" => {
            seen.once(0)?;
            // null: leave the broker's filter servers alone, as the other decoders read it.
            out.filter_server_list = if s.null() { None } else { Some(strings(s)?) };
            Some(())
        }
        "topicConfigSerializeWrapper" => {
            seen.once(1)?;
            wrapper(s, &mut out, &mut dv_span)
        }
        _ => None,
    })?;
    if !s.at_end() {
        return None;
    }
    let mark = match dv_span {
        Some((start, end)) => Some(super::same::mark(body, start, end)?),
        None => None,
    };
    Some((out, mark))
}

/// Which keys of one object were read: a repeated key goes to the other decoders, which read duplicates as
/// fastjson does.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn once(&mut self, bit: u8) -> Option<()> {
        let mask = 1u8 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

fn strings(s: &mut Scanner) -> Option<Vec<String>> {
    let mut out = Vec::new();
    s.array(|s| {
        out.push(s.string()?.to_owned());
        Some(())
    })?;
    Some(out)
}

/// A DataVersion bean: its three numbers, each at most once.
fn data_version(s: &mut Scanner) -> Option<DataVersion> {
    let mut dv = DataVersion::default();
    let mut seen = Seen::default();
    s.object(|s, key| {
        let (bit, field) = match key {
            "counter" => (0, &mut dv.counter),
            "stateVersion" => (1, &mut dv.state_version),
            "timestamp" => (2, &mut dv.timestamp),
            _ => return None,
        };
        seen.once(bit)?;
        *field = s.int()?;
        Some(())
    })?;
    Some(dv)
}

/// The TopicConfigSerializeWrapper; `dv_span` gets where its `dataVersion` value sits (`same`).
fn wrapper(s: &mut Scanner, out: &mut RegisterBrokerBody, dv_span: &mut Option<(usize, usize)>) -> Option<()> {
    let mut seen = Seen::default();
    s.object(|s, key| match key {
        "dataVersion" => {
            seen.once(0)?;
            let start = s.at();
            out.data_version = data_version(s)?;
            *dv_span = Some((start, s.at()));
            Some(())
        }
        "mappingDataVersion" => {
            seen.once(1)?;
            data_version(s).map(drop)
        }
        "topicConfigTable" => {
            seen.once(2)?;
            // ~100 bytes a topic in the shortest (4.9) form: room for all without a regrowth.
            out.topic_configs.reserve(s.left() / 100);
            s.object(|s, _| topic_config(s, &mut out.topic_configs))
        }
        "topicQueueMappingDetailMap" => {
            seen.once(3)?;
            s.empty_object()
        }
        "topicQueueMappingInfoMap" => {
            seen.once(4)?;
            s.empty_object()
        }
        _ => None,
    })
}

/// One TopicConfig, kept when it names its topic (routes are keyed by `topicName`, not by the table's key).
fn topic_config(s: &mut Scanner, out: &mut Vec<TopicConfig>) -> Option<()> {
    // Java's defaults for what the body leaves out; the name is set last, so no placeholder is allocated.
    let (mut read, mut write, mut perm, mut flag) = TopicConfig::DEFAULTS;
    let mut name = None;
    let mut seen = Seen::default();
    s.object(|s, key| match key {
        "attributes" => {
            seen.once(0)?;
            s.empty_object()
        }
        "order" => {
            seen.once(1)?;
            s.boolean().map(drop)
        }
        "perm" => {
            seen.once(2)?;
            perm = s.int32()?;
            Some(())
        }
        "readQueueNums" => {
            seen.once(3)?;
            read = s.int32()?;
            Some(())
        }
        "topicFilterType" => {
            seen.once(4)?;
            s.string().map(drop)
        }
        "topicName" => {
            seen.once(5)?;
            name = Some(s.string()?);
            Some(())
        }
        "topicSysFlag" => {
            seen.once(6)?;
            flag = s.int32()?;
            Some(())
        }
        "writeQueueNums" => {
            seen.once(7)?;
            write = s.int32()?;
            Some(())
        }
        _ => None,
    })?;
    if let Some(name) = name {
        let topic_name = Arc::from(name);
        out.push(TopicConfig {
            topic_name,
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_sys_flag: flag,
        });
    }
    Some(())
}
