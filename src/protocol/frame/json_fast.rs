//! Fast path for the usual JSON header: a flat object of integers and plain strings, with a flat `extFields`
//! object of plain strings — what every client sends on every request. It is scanned in one pass into a
//! `RemotingCommand`, allocating only the ext keys and values (and a remark, if any). It is the most frequent
//! parse of the server. Measured side by side on the whole-frame decode of a route query, it is faster than
//! serde_json with a borrowing visitor, which is faster than the lenient tree; framing and allocation common to
//! all three are about half of this scanner's time (decision 0009; the numbers:
//! perf/results/2026-12-06-numbers-from-comments.md).
//!
//! Anything unusual — an escape in a string, a number that is not a plain integer in `i32`, a number or boolean
//! where a string belongs (or the reverse), a non-string unknown member, a duplicate key, more than a few ext
//! fields, non-UTF-8, a BOM — makes this return `None`, and the lenient decoder (fastjson's rules) reads the header
//! instead, so the result is the same either way (property-tested in `frame/tests.rs`, fuzzed as a differential in
//! `fuzz/checks.rs`).

use bytes::Bytes;

use crate::protocol::code::{LanguageCode, SerializeType};
use crate::protocol::command::{ExtFields, RemotingCommand};
use crate::protocol::json::scan::Scanner;

/// Ext fields checked for duplicates by a scan; a header with more goes the lenient way (which keeps it linear).
const MAX_EXT_FIELDS: usize = 16;

/// `None`: not the usual shape; use the lenient decoder.
pub(super) fn decode(header: &[u8]) -> Option<RemotingCommand> {
    let text = std::str::from_utf8(header).ok()?;
    let mut s = Scanner::new(text);
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
    s.ws();
    s.object(|s, key| {
        let bit = match key {
            "code" => 1,
            "flag" => 2,
            "opaque" => 4,
            "version" => 8,
            "language" => 16,
            "remark" => 32,
            "extFields" => 64,
            // serializeTypeCurrentRPC and other members nobody reads: a plain string, skipped.
            _ => 0,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            0 => {
                s.string()?;
            }
            1 => cmd.code = s.int32()?,
            2 => cmd.flag = s.int32()?,
            4 => cmd.opaque = s.int32()?,
            8 => cmd.version = s.int32()?,
            16 => cmd.language = s.opt_string()?.and_then(LanguageCode::from_name),
            32 => cmd.remark = s.opt_string()?.map(str::to_owned),
            _ => cmd.ext_fields = ext(s)?,
        }
        Some(())
    })?;
    s.at_end().then_some(cmd)
}

/// `extFields`: `null`, or an object of plain strings (null values skipped) with distinct keys.
fn ext(s: &mut Scanner) -> Option<Option<ExtFields>> {
    if s.null() {
        return Some(None);
    }
    let mut keys: smallvec::SmallVec<[&str; 4]> = smallvec::SmallVec::new();
    let mut out = Vec::new();
    s.object(|s, key| {
        if keys.len() == MAX_EXT_FIELDS || keys.contains(&key) {
            return None;
        }
        keys.push(key);
        if let Some(value) = s.opt_string()? {
            out.push((key.to_owned(), value.to_owned()));
        }
        Some(())
    })?;
    Some(Some(ExtFields(out)))
}
