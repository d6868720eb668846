//! The quickest path for a usual REGISTER_BROKER body: the one-pass scanner (`json::scan`) over exactly the JSON a
//! broker writes, tried before the serde fast path (`fast`; decision 0019). serde spends most of a topic matching
//! field names through its visitor machinery and skipping the fields a route does not need; this reads the same
//! bytes in about half the time, most topics by comparing fastjson's layout in place (`topic_config_as_written`,
//! decision 0020; the numbers: perf/results/2026-12-06-numbers-from-comments.md).
//!
//! It takes only a narrow shape: the keys a broker writes (each at most once), integers without fraction or
//! exponent, strings without escapes or control characters, `attributes` and the mapping maps empty. Anything else —
//! an unknown key, a null where a number belongs, an escape, a static-topic mapping — returns `None` and the serde
//! path decides, then the lenient decoder. What this accepts, the lenient decoder reads the same (property-tested,
//! and fuzzed: docs/fuzzing.md).

use crate::model::{BodyMark, DataVersion, RegisterBrokerBody, TopicConfig, TopicKey};
use crate::protocol::json::scan::Scanner;

/// `None`: not the narrow shape; try the next decoder. With the body, its mark when it has a DataVersion.
#[cfg(test)]
pub(super) fn decode(body: &[u8]) -> Option<(RegisterBrokerBody, Option<BodyMark>)> {
    decode_with(body, Topics::AsWrittenFirst, &|| {})
}

/// How topics are read. Decoding always tries the reading of the exact layout first; tests pin one reading, to
/// show that both give the same body and that the exact layout is what brokers write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Topics {
    AsWrittenFirst,
    #[cfg(test)]
    AsWrittenOnly,
    #[cfg(test)]
    General,
}

/// `give_way` is called every `GIVE_WAY_TOPICS` topics (`decode_register_broker_body_marked`).
pub(super) fn decode_with(
    body: &[u8],
    topics: Topics,
    give_way: &dyn Fn(),
) -> Option<(RegisterBrokerBody, Option<BodyMark>)> {
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
            wrapper(s, &mut out, &mut dv_span, topics, give_way)
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
fn wrapper(
    s: &mut Scanner,
    out: &mut RegisterBrokerBody,
    dv_span: &mut Option<(usize, usize)>,
    topics: Topics,
    give_way: &dyn Fn(),
) -> Option<()> {
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
            let mut read = 0;
            s.object(|s, _| {
                read += 1;
                if read % super::GIVE_WAY_TOPICS == 0 {
                    give_way();
                }
                read_topic(s, &mut out.topic_configs, topics)
            })
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

#[inline]
fn read_topic(s: &mut Scanner, out: &mut Vec<TopicConfig>, topics: Topics) -> Option<()> {
    match topics {
        Topics::AsWrittenFirst => match s.attempt(topic_config_as_written) {
            Some(tc) => {
                out.push(tc);
                Some(())
            }
            None => topic_config(s, out),
        },
        #[cfg(test)]
        Topics::AsWrittenOnly => {
            out.push(topic_config_as_written(s)?);
            Some(())
        }
        #[cfg(test)]
        Topics::General => topic_config(s, out),
    }
}

/// One TopicConfig exactly as fastjson writes it — keys in its (alphabetical) order, no whitespace, `attributes`
/// empty and only from 5.x, `order` a boolean, the filter type one of Java's two — read by comparing each key with
/// the bytes in place instead of cutting out a string and matching it: the keys were half of a topic's time.
/// `None` for anything else, and `topic_config` reads it; both give the same topic for what this takes (every key
/// here is one `topic_config` reads, once each, with the same reader for its value).
#[inline]
fn topic_config_as_written(s: &mut Scanner) -> Option<TopicConfig> {
    s.eat(b'{')?;
    s.word("\"attributes\":{},");
    let _ = s.word("\"order\":false,") || s.word("\"order\":true,");
    let perm = int_member(s, "\"perm\":")?;
    let read_queue_nums = int_member(s, "\"readQueueNums\":")?;
    if !(s.word("\"topicFilterType\":\"SINGLE_TAG\",") || s.word("\"topicFilterType\":\"MULTI_TAG\",")) {
        return None;
    }
    s.expect_word("\"topicName\":")?;
    let topic_name = TopicKey::from(s.string()?);
    s.eat(b',')?;
    let topic_sys_flag = int_member(s, "\"topicSysFlag\":")?;
    s.expect_word("\"writeQueueNums\":")?;
    let write_queue_nums = s.int32()?;
    s.eat(b'}')?;
    Some(TopicConfig { topic_name, read_queue_nums, write_queue_nums, perm, topic_sys_flag })
}

/// `key` (with its quotes and colon), an `i32`, and the comma after it.
#[inline]
fn int_member(s: &mut Scanner, key: &str) -> Option<i32> {
    s.expect_word(key)?;
    let v = s.int32()?;
    s.eat(b',')?;
    Some(v)
}

/// One TopicConfig, kept when it names its topic (routes are keyed by `topicName`, not by the table's key).
fn topic_config(s: &mut Scanner, out: &mut Vec<TopicConfig>) -> Option<()> {
    // Java's defaults for what the body leaves out; the name is set last, so no placeholder is allocated.
    let (mut read, mut write) = (TopicConfig::DEFAULT_READ_QUEUE_NUMS, TopicConfig::DEFAULT_WRITE_QUEUE_NUMS);
    let (mut perm, mut flag) = (TopicConfig::DEFAULT_PERM, TopicConfig::DEFAULT_TOPIC_SYS_FLAG);
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
        out.push(TopicConfig {
            topic_name: TopicKey::from(name),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_sys_flag: flag,
        });
    }
    Some(())
}
