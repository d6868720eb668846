//! The JSON header (§1.3): fastjson default dialect out, fastjson-lenient in.

use bytes::{BufMut, Bytes, BytesMut};

use super::FrameError;
use crate::protocol::code::{LanguageCode, SerializeType};
use crate::protocol::command::{ExtFields, RemotingCommand};
use crate::protocol::json::{self, Value};

pub(super) fn decode(header: &[u8]) -> Result<RemotingCommand, FrameError> {
    match super::json_fast::decode(header) {
        Some(cmd) => Ok(cmd),
        None => decode_lenient(header),
    }
}

/// fastjson's reading of any header: a `Value` tree first (what the fast path avoids for the usual shape).
pub(super) fn decode_lenient(header: &[u8]) -> Result<RemotingCommand, FrameError> {
    let mut v = json::parse(header).map_err(|e| FrameError::BadJsonHeader(e.to_string()))?;
    let Value::Object(members) = &mut v else {
        return Err(FrameError::BadJsonHeader("header is not an object".into()));
    };
    // Taken out by value (the last `extFields` wins): its keys and values move into `ExtFields`, uncopied.
    let ext = members.iter_mut().rev().find(|(k, _)| k == "extFields").map(|(_, e)| std::mem::replace(e, Value::Null));
    let int = |key: &str| v.get(key).and_then(Value::as_i32).unwrap_or(0);
    let language = match v.get("language") {
        Some(Value::String(name)) => LanguageCode::from_name(name),
        // fastjson also takes an enum's ordinal.
        Some(Value::Number(_)) => v
            .get("language")
            .and_then(Value::as_i64)
            .and_then(|n| u8::try_from(n).ok())
            .and_then(LanguageCode::from_byte),
        _ => None,
    };
    let remark = v.get("remark").and_then(|r| r.as_str().map(|s| s.into_owned()));
    let ext_fields = match ext {
        Some(Value::Object(members)) => Some(ext_fields(members)),
        _ => None,
    };
    Ok(RemotingCommand {
        code: int("code"),
        language,
        version: int("version"),
        opaque: int("opaque"),
        flag: int("flag"),
        remark,
        ext_fields,
        body: Bytes::new(),
        serialize_type: SerializeType::Json,
    })
}

/// Values coerced to text. fastjson's `MapDeserializer.parseMap` `put`s every member into a `HashMap`, a null
/// one included: a repeated key keeps its last value, and a later null erases an earlier value
/// (`ExtFields::last_wins`, linear in the members).
fn ext_fields(members: Vec<(String, Value)>) -> ExtFields {
    let pairs = members
        .into_iter()
        .map(|(k, val)| {
            let text = match val {
                Value::Null => None,
                Value::String(s) | Value::Number(s) => Some(s),
                Value::Bool(b) => Some((if b { "true" } else { "false" }).to_string()),
                container @ (Value::Array(_) | Value::Object(_)) => Some(container.to_json_text()),
            };
            (k, text)
        })
        .collect();
    ExtFields::last_wins(pairs)
}

/// Keys in fastjson's alphabetical order; absent optionals are omitted like Java nulls. Written straight into
/// `out` (constant keys as literals): this runs once per reply.
pub(super) fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    let mut num = itoa::Buffer::new();
    out.put_slice(b"{\"code\":");
    out.put_slice(num.format(cmd.code).as_bytes());
    if let Some(ext) = &cmd.ext_fields {
        out.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in ext.0.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            json::write_quoted(out, k);
            out.put_u8(b':');
            json::write_quoted(out, v);
        }
        out.put_u8(b'}');
    }
    out.put_slice(b",\"flag\":");
    out.put_slice(num.format(cmd.flag).as_bytes());
    if let Some(lang) = cmd.language {
        out.put_slice(b",\"language\":");
        json::write_quoted(out, lang.name());
    }
    out.put_slice(b",\"opaque\":");
    out.put_slice(num.format(cmd.opaque).as_bytes());
    if let Some(remark) = &cmd.remark {
        out.put_slice(b",\"remark\":");
        json::write_quoted(out, remark);
    }
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    out.put_slice(num.format(cmd.version).as_bytes());
    out.put_u8(b'}');
}
