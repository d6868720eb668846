//! `RemotingCommand`: one decoded frame (header + body), ext-field access with Java's parsing rules
//! (`RemotingCommand.decodeCommandCustomHeader`), and response builders.

use bytes::Bytes;

use super::code::{LanguageCode, ResponseCode, SerializeType};

/// Bit 0 of `flag`: set on responses.
pub(crate) const FLAG_RESPONSE: i32 = 1;
/// Bit 1 of `flag`: one-way request, nothing is ever written back.
pub const FLAG_ONEWAY: i32 = 2;

/// The `version` this server puts in its responses: `MQVersion.Version.V5_5_0.ordinal()` (513), the Java namesrv release
/// we answer like.
pub(crate) const SERVER_VERSION: i32 = 513;

/// Ext fields in arrival order. Few entries per request, so a vector beats a hash map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtFields(pub Vec<(String, String)>);

/// Up to this many decoded fields, duplicates are found by comparing every pair (cheaper than hashing a handful of
/// keys); above it, by a hash set, so that a hostile header of thousands of keys costs O(keys), not O(keys²).
const PAIRWISE_UP_TO: usize = 16;

impl ExtFields {
    /// The ext fields Java's decoders leave in their `HashMap` after `put`ting every decoded pair in order: of a
    /// repeated key the last pair wins, and a `None` (Java null) value wins too — it erases the key, which a header
    /// then reads as absent. A kept key sits at its last occurrence (Java's map has no order to match). Linear in
    /// the number of pairs: this runs on a reactor, on input a peer chose, before any ACL check.
    pub(crate) fn last_wins(mut pairs: Vec<(String, Option<String>)>) -> ExtFields {
        let n = pairs.len();
        if n <= PAIRWISE_UP_TO {
            // No allocation for the usual header; a repeat there is rare, and removing it moves a few entries.
            let mut i = 0;
            while i < pairs.len() {
                if pairs[i + 1..].iter().any(|(later, _)| *later == pairs[i].0) {
                    pairs.remove(i);
                } else {
                    i += 1;
                }
            }
        } else {
            let mut seen = std::collections::HashSet::with_capacity(n);
            let keep: Vec<bool> = pairs.iter().rev().map(|(k, _)| seen.insert(k.as_str())).collect();
            drop(seen);
            let mut left = n;
            pairs.retain(|_| {
                left -= 1;
                keep[left]
            });
        }
        ExtFields(pairs.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect())
    }

    /// Linear in the fields: a handler reads a few named fields of a request (and nothing reads every field by
    /// name), so a scan beats hashing.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets one field (a response or request we build). Linear: used for the few fields we write, never by a
    /// decoder (those collect every pair, then `last_wins`).
    pub(crate) fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One request or response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemotingCommand {
    pub code: i32,
    /// `None` for an unknown language name or byte (Java decodes those to null).
    pub language: Option<LanguageCode>,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    /// `None` = no `extFields` key at all; `Some(empty)` = `"extFields":{}` (a response with a custom header).
    pub ext_fields: Option<ExtFields>,
    pub body: Bytes,
    /// The header encoding this command arrived in, or will be sent in.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A request as a Java client builds it (tests, the admin CLI, outbound 905).
    pub fn request(code: i32, opaque: i32) -> RemotingCommand {
        RemotingCommand {
            code,
            language: Some(LanguageCode::Java),
            version: SERVER_VERSION,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: None,
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// The response to `req`: opaque echoed, response bit set, our version and language, the request's encoding.
    pub fn response_to(req: &RemotingCommand, code: i32, remark: Option<String>) -> RemotingCommand {
        RemotingCommand {
            code,
            language: Some(LanguageCode::Java),
            version: SERVER_VERSION,
            opaque: req.opaque,
            flag: FLAG_RESPONSE,
            remark,
            ext_fields: None,
            body: Bytes::new(),
            serialize_type: req.serialize_type,
        }
    }

    pub fn with_ext(mut self, key: &str, value: impl Into<String>) -> Self {
        self.ext_fields.get_or_insert_with(ExtFields::default).insert(key, value);
        self
    }

    /// Marks a response that has a custom header object, so it carries `"extFields":{}` even when empty.
    pub(crate) fn with_empty_ext(mut self) -> Self {
        self.ext_fields.get_or_insert_with(ExtFields::default);
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Raw ext value (Java `String` field).
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.as_ref().and_then(|e| e.get(key))
    }

    /// Java `Long.parseLong` of an ext field; missing or unparsable → `None` (Java logs and leaves the field null).
    pub fn ext_i64(&self, key: &str) -> Option<i64> {
        self.ext(key).and_then(parse_java_long)
    }

    /// Java `Integer.parseInt`; missing or unparsable → `None`.
    pub(crate) fn ext_i32(&self, key: &str) -> Option<i32> {
        self.ext(key).and_then(|v| parse_java_long(v).and_then(|n| i32::try_from(n).ok()))
    }

    /// Java `Boolean` field: `None` when absent, otherwise `Boolean.parseBoolean` (only "true", any case, is true).
    pub(crate) fn ext_opt_bool(&self, key: &str) -> Option<bool> {
        self.ext(key).map(|v| v.eq_ignore_ascii_case("true"))
    }

    /// Java `boolean` field: absent → false.
    pub(crate) fn ext_bool(&self, key: &str) -> bool {
        self.ext_opt_bool(key).unwrap_or(false)
    }
}

/// `Long.parseLong`: optional sign, decimal digits only, no surrounding blanks.
fn parse_java_long(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The replies every part of the server builds: handlers, the writer's completions, the reactors' refusals.
/// A response with a code and optional remark.
pub(crate) fn reply(req: &RemotingCommand, code: i32, remark: Option<String>) -> RemotingCommand {
    RemotingCommand::response_to(req, code, remark)
}

/// SUCCESS with no remark.
pub(crate) fn success(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SUCCESS, None)
}

/// SYSTEM_ERROR with a remark.
pub(crate) fn system_error(req: &RemotingCommand, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(remark.into()))
}

/// Java's remark for a full executor queue.
pub(crate) const OVERLOAD_REMARK: &str = "[OVERLOAD]system busy, start flow control for a while";

/// SYSTEM_BUSY with Java's `[OVERLOAD]` remark: a queue (the writer's, the decoder's) is full.
pub(crate) fn system_busy(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_BUSY, Some(OVERLOAD_REMARK.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &str, value: &str) -> RemotingCommand {
        RemotingCommand::request(103, 1).with_ext(key, value)
    }

    #[test]
    fn ext_numbers_follow_java_parsing() {
        assert_eq!(with("n", "42").ext_i64("n"), Some(42));
        assert_eq!(with("n", "-7").ext_i64("n"), Some(-7));
        assert_eq!(with("n", "+7").ext_i64("n"), Some(7));
        assert_eq!(with("n", " 7").ext_i64("n"), None);
        assert_eq!(with("n", "7.0").ext_i64("n"), None);
        assert_eq!(with("n", "").ext_i64("n"), None);
        assert_eq!(with("n", "3000000000").ext_i32("n"), None);
        assert_eq!(with("n", "1").ext_i64("other"), None);
    }

    #[test]
    fn ext_booleans_follow_java_parsing() {
        assert_eq!(with("b", "TRUE").ext_opt_bool("b"), Some(true));
        assert_eq!(with("b", "yes").ext_opt_bool("b"), Some(false));
        assert_eq!(with("b", "true").ext_opt_bool("x"), None);
        assert!(!with("b", "true").ext_bool("x"));
    }

    #[test]
    fn response_echoes_opaque_and_encoding() {
        let mut req = RemotingCommand::request(105, 77);
        req.serialize_type = SerializeType::RocketMq;
        let resp = RemotingCommand::response_to(&req, 17, Some("x".into()));
        assert_eq!(resp.opaque, 77);
        assert!(resp.is_response());
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert_eq!(resp.ext_fields, None);
        assert_eq!(resp.with_empty_ext().ext_fields, Some(ExtFields::default()));
    }
}
