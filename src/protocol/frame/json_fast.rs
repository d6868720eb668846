//! Fast path for the usual JSON header: strict JSON of the usual shape, read by serde straight into a
//! `RemotingCommand` with no `Value` tree (a route query's header is ~130 bytes; the tree cost ~20 allocations, the
//! most expensive step of the hottest request). Anything unusual — numbers as strings or floats, a number as the
//! language, non-string ext values, nulls where a number belongs, duplicate keys, more than a few ext fields, a BOM
//! — makes this return `None`, and the lenient decoder takes over, so the result is the same either way
//! (property-tested, and fuzzed as a differential: `fuzz/checks.rs`).

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::protocol::code::{LanguageCode, SerializeType};
use crate::protocol::command::{ExtFields, RemotingCommand};

/// Ext fields checked for duplicates by a scan; a header with more goes the lenient way (which keeps it linear).
const MAX_EXT_FIELDS: usize = 16;

/// `None`: not the usual shape; use the lenient decoder.
pub(super) fn decode(header: &[u8]) -> Option<RemotingCommand> {
    let mut de = serde_json::Deserializer::from_slice(header);
    let cmd = de.deserialize_map(HeaderVisitor).ok()?;
    de.end().ok()?;
    Some(cmd)
}

/// A string, borrowed from the header when it has no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = RemotingCommand;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a header object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RemotingCommand, A::Error> {
        let mut cmd = RemotingCommand {
            code: 0,
            language: None,
            version: 0,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: None,
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        };
        let mut seen = 0u8;
        while let Some(Text(key)) = map.next_key::<Text>()? {
            let bit = match &*key {
                "code" => 1,
                "flag" => 2,
                "opaque" => 4,
                "version" => 8,
                "language" => 16,
                "remark" => 32,
                "extFields" => 64,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & bit != 0 {
                return Err(A::Error::custom("duplicate key"));
            }
            seen |= bit;
            match bit {
                1 => cmd.code = map.next_value()?,
                2 => cmd.flag = map.next_value()?,
                4 => cmd.opaque = map.next_value()?,
                8 => cmd.version = map.next_value()?,
                16 => cmd.language = map.next_value::<Option<Text>>()?.and_then(|t| LanguageCode::from_name(&t.0)),
                32 => cmd.remark = map.next_value::<Option<Text>>()?.map(|t| t.0.into_owned()),
                _ => cmd.ext_fields = map.next_value::<Option<Ext>>()?.map(|e| e.0),
            }
        }
        Ok(cmd)
    }
}

/// `extFields` with string (or null, skipped) values and distinct keys.
struct Ext(ExtFields);

impl<'de> Deserialize<'de> for Ext {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ext;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ext, A::Error> {
                let mut keys: smallvec::SmallVec<[Cow<'de, str>; 4]> = smallvec::SmallVec::new();
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(2));
                while let Some(Text(key)) = map.next_key::<Text>()? {
                    if keys.len() == MAX_EXT_FIELDS || keys.contains(&key) {
                        return Err(A::Error::custom("many or duplicate ext fields"));
                    }
                    let value = map.next_value::<Option<Text>>()?;
                    if let Some(Text(value)) = value {
                        out.push((key.clone().into_owned(), value.into_owned()));
                    }
                    keys.push(key);
                }
                Ok(Ext(ExtFields(out)))
            }
        }
        d.deserialize_map(V)
    }
}
