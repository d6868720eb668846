//! RegisterBrokerBody, compressed form (§3.5): one zlib stream holding int32-length-prefixed parts. Every length
//! and count is checked against the bytes that remain, so a lying count cannot make us allocate.

use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::beans;
use super::register::V5_0_0;
use super::{parse_json, BodyError};
use crate::model::{BodyMark, DataVersion, RegisterBrokerBody, TopicConfig};
use crate::protocol::json::{Dialect, JsonWriter, Value};

fn bad(reason: impl Into<String>) -> BodyError {
    BodyError::Compressed(reason.into())
}

/// Inflates at most `max` bytes; the output buffer never grows past `max` (zlib bombs stop early). `give_way` is
/// called after each chunk.
fn inflate(body: &[u8], max: usize, give_way: &dyn Fn()) -> Result<Vec<u8>, BodyError> {
    let mut dec = ZlibDecoder::new(body);
    let mut out: Vec<u8> = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match dec.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(bad(e.to_string())),
        };
        if n > max - out.len() {
            return Err(BodyError::TooLarge(max));
        }
        if out.capacity() - out.len() < n {
            // Grow by doubling, but never past the limit.
            let target = out.capacity().saturating_mul(2).max(out.len() + n).min(max);
            out.reserve_exact(target - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
        give_way();
    }
}

struct Cursor<'a> {
    s: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn i32(&mut self) -> Result<i32, BodyError> {
        let Some((head, rest)) = self.s.split_first_chunk::<4>() else {
            return Err(bad("truncated length"));
        };
        self.s = rest;
        Ok(i32::from_be_bytes(*head))
    }

    /// A count of items that each need at least `min_item` bytes.
    fn count(&mut self, min_item: usize) -> Result<usize, BodyError> {
        let n = usize::try_from(self.i32()?).map_err(|_| bad("negative count"))?;
        if n > self.s.len() / min_item {
            return Err(bad(format!("count {n} exceeds the remaining {} bytes", self.s.len())));
        }
        Ok(n)
    }

    fn part(&mut self) -> Result<&'a [u8], BodyError> {
        let n = usize::try_from(self.i32()?).map_err(|_| bad("negative length"))?;
        if n > self.s.len() {
            return Err(bad(format!("length {n} exceeds the remaining {} bytes", self.s.len())));
        }
        let (part, rest) = self.s.split_at(n);
        self.s = rest;
        Ok(part)
    }
}

/// The smallest topic config part that `parse_topic_config` accepts: a length and five non-empty fields,
/// `" 0 0 0 MULTI_TAG"` (16 bytes).
const MIN_TOPIC_PART: usize = 4 + 16;

/// The body and its mark: a digest of the inflated bytes after the DataVersion part (always the first part), so that the broker's next body can be recognised by inflating it only
/// (`same_dv`). A deflate stream changes from the DataVersion on, so the compressed bytes cannot be compared.
pub(super) fn decode_marked(
    body: &[u8],
    version: i32,
    max: usize,
    give_way: &dyn Fn(),
) -> Result<(RegisterBrokerBody, BodyMark), BodyError> {
    let raw = inflate(body, max, give_way)?;
    let decoded = decode_inflated(&raw, version, give_way)?;
    let dv_len = Cursor { s: &raw }.part()?.len();
    let mark = super::same::mark(&raw, DV_START, DV_LEN + dv_len).ok_or_else(|| bad("body too large to mark"))?;
    Ok((decoded, mark))
}

/// The DataVersion part, left out of the digest with its length (which changes with it): the inflated body's first
/// part. A JSON body's DataVersion never starts at 0, so the two forms' marks never mix.
const DV_START: usize = 0;
const DV_LEN: usize = 4;

/// The DataVersion of `body` (compressed) if it is the body `mark` was taken from with only its DataVersion
/// changed. Costs an inflate and a digest, not a decode.
pub(super) fn same_dv(body: &[u8], mark: &BodyMark, max: usize, give_way: &dyn Fn()) -> Option<DataVersion> {
    if mark.dv_start as usize != DV_START {
        return None;
    }
    let raw = inflate(body, max, give_way).ok()?;
    let dv = Cursor { s: &raw }.part().ok()?;
    if super::same::digest_around(&raw, DV_START, DV_LEN + dv.len()) != mark.digest {
        return None;
    }
    beans::read_data_version(&parse_json(dv).ok()?).ok()
}

fn decode_inflated(raw: &[u8], version: i32, give_way: &dyn Fn()) -> Result<RegisterBrokerBody, BodyError> {
    let mut c = Cursor { s: raw };
    let dv = parse_json(c.part()?)?;
    let mut out = RegisterBrokerBody { data_version: beans::read_data_version(&dv)?, ..Default::default() };
    // Checked against the smallest possible part, not 4 bytes: the count sizes a reservation of ~40-byte
    // `TopicConfig`s, which a 4-byte minimum let a lying count inflate to 10x the inflated body.
    let topics = c.count(MIN_TOPIC_PART)?;
    out.topic_configs.reserve(topics);
    for i in 1..=topics {
        out.topic_configs.push(parse_topic_config(c.part()?)?);
        if i % super::GIVE_WAY_TOPICS == 0 {
            give_way();
        }
    }
    let filter = parse_json(c.part()?)?;
    out.filter_server_list = match filter {
        Value::Array(items) => Some(items.iter().filter_map(beans::text).collect()),
        Value::Null => None,
        _ => return Err(bad("filterServerList is not an array")),
    };
    // Lenient: a 5.x request version with a 4.9-layout body (no mapping section) still decodes.
    if version >= V5_0_0 && !c.s.is_empty() {
        let infos = c.count(4)?;
        for _ in 0..infos {
            let info = beans::read_mapping_info(&parse_json(c.part()?)?)?;
            // Java keys the section by the info's own topic; an info without one cannot be routed.
            if let Some(topic) = info.topic.clone() {
                out.mapping_infos.push((topic, info));
            }
        }
    }
    Ok(out)
}

/// `Integer.parseInt`: optional sign and decimal digits only.
fn java_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `TopicConfig.decode`: `name read write perm filterType [attributesJSON]`; topicSysFlag is not carried.
fn parse_topic_config(bytes: &[u8]) -> Result<TopicConfig, BodyError> {
    let text = String::from_utf8_lossy(bytes);
    let parts: Vec<&str> = text.split(' ').collect();
    // Java's String.split drops trailing empty strings.
    let used = parts.iter().rposition(|p| !p.is_empty()).map_or(0, |i| i + 1);
    if used < 5 {
        return Err(bad(format!("topic config {text:?} has fewer than 5 fields")));
    }
    let int = |i: usize| java_int(parts[i]).ok_or_else(|| bad(format!("topic config {text:?}: bad number")));
    if !matches!(parts[4], "SINGLE_TAG" | "MULTI_TAG") {
        return Err(bad(format!("topic config {text:?}: unknown filter type")));
    }
    Ok(TopicConfig {
        topic_name: parts[0].into(),
        read_queue_nums: int(1)?,
        write_queue_nums: int(2)?,
        perm: int(3)?,
        topic_sys_flag: 0,
    })
}

fn put_part(raw: &mut Vec<u8>, bytes: &[u8]) {
    raw.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    raw.extend_from_slice(bytes);
}

fn json(f: impl FnOnce(&mut JsonWriter)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut JsonWriter::new(&mut out, Dialect::Default));
    out
}

/// `RegisterBrokerBody.encode(true)` of a broker of `version` (4.9 layout below V5_0_0).
pub(super) fn encode(body: &RegisterBrokerBody, version: i32) -> Vec<u8> {
    let five = version >= V5_0_0;
    let mut raw = Vec::with_capacity(64 + body.topic_configs.len() * 48);
    let dv: &DataVersion = &body.data_version;
    put_part(&mut raw, &json(|w| beans::write_data_version(w, dv, five)));
    raw.extend_from_slice(&(body.topic_configs.len() as i32).to_be_bytes());
    for tc in &body.topic_configs {
        let mut text =
            format!("{} {} {} {} SINGLE_TAG", tc.topic_name, tc.read_queue_nums, tc.write_queue_nums, tc.perm);
        if five {
            text.push_str(" {}");
        }
        put_part(&mut raw, text.as_bytes());
    }
    let filters: &[String] = body.filter_server_list.as_deref().unwrap_or(&[]);
    put_part(&mut raw, &json(|w| beans::write_string_array(w, filters)));
    if five {
        raw.extend_from_slice(&(body.mapping_infos.len() as i32).to_be_bytes());
        for (_, info) in &body.mapping_infos {
            put_part(&mut raw, &json(|w| beans::write_mapping_info(w, info)));
        }
    }
    let mut enc = ZlibEncoder::new(Vec::with_capacity(raw.len() / 2 + 64), Compression::best());
    // Writing into a Vec cannot fail.
    enc.write_all(&raw).expect("in-memory write");
    enc.finish().expect("in-memory write")
}
