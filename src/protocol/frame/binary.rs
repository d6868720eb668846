//! The ROCKETMQ binary header (§1.4, `RocketMQSerializable`). Every read is bounds-checked: this parses hostile input.

use bytes::{BufMut, Bytes, BytesMut};

use super::FrameError;
use crate::protocol::code::{LanguageCode, SerializeType};
use crate::protocol::command::{ExtFields, RemotingCommand};

/// code(2) language(1) version(2) opaque(4) flag(4) remarkLength(4) … extLength(4).
const FIXED_LEN: usize = 21;

fn bad(reason: &str) -> FrameError {
    FrameError::BadBinaryHeader(reason.to_string())
}

struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let end = self.pos.checked_add(n).ok_or_else(|| bad("length overflow"))?;
        let out = self.s.get(self.pos..end).ok_or_else(|| bad("truncated header"))?;
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, FrameError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, FrameError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Java `readStr`: length 0 is null; a length beyond the header length is an error.
    fn string(&mut self, len: i32, limit: usize) -> Result<Option<String>, FrameError> {
        if len == 0 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| bad("negative string length"))?;
        if len > limit {
            return Err(bad("string length exceeds the header length"));
        }
        let bytes = self.take(len)?;
        Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
    }
}

pub(super) fn decode(header: &[u8]) -> Result<RemotingCommand, FrameError> {
    let limit = header.len();
    if limit < FIXED_LEN {
        return Err(bad("shorter than the fixed part"));
    }
    let mut r = Reader { s: header, pos: 0 };
    let code = i32::from(r.i16()?);
    let language = LanguageCode::from_byte(r.u8()?);
    let version = i32::from(r.i16()?);
    let opaque = r.i32()?;
    let flag = r.i32()?;
    let remark_len = r.i32()?;
    let remark = r.string(remark_len, limit)?;
    let ext_len = r.i32()?;
    let ext_fields = if ext_len > 0 {
        let ext_len = ext_len as usize;
        if ext_len > limit {
            return Err(bad("ext length exceeds the header length"));
        }
        let block = r.take(ext_len)?;
        Some(decode_ext(block, limit)?)
    } else {
        None
    };
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: Bytes::new(),
        serialize_type: SerializeType::RocketMq,
    })
}

/// Entries `keyLen(i16) key valLen(i32) value`; a length of 0 is Java null. Java `put`s every pair into a
/// `HashMap`: a null key is a key of its own that no header field reads (dropped here), a null value erases the
/// key's earlier value, and a repeated key keeps its last value (`ExtFields::last_wins`, linear in the pairs).
fn decode_ext(block: &[u8], limit: usize) -> Result<ExtFields, FrameError> {
    let mut r = Reader { s: block, pos: 0 };
    let mut pairs = Vec::new();
    while r.pos < block.len() {
        let key_len = r.i16()?;
        let key = r.string(i32::from(key_len), limit)?;
        let val_len = r.i32()?;
        let value = r.string(val_len, limit)?;
        if let Some(k) = key {
            pairs.push((k, value));
        }
    }
    Ok(ExtFields::last_wins(pairs))
}

pub(super) fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    // Java truncates to short the same way.
    out.put_i16(cmd.code as i16);
    // Java's RemotingCommand starts with language JAVA, so that is what "unset" means.
    out.put_u8(cmd.language.unwrap_or(LanguageCode::Java).byte());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    match &cmd.remark {
        Some(r) => {
            out.put_i32(r.len() as i32);
            out.put_slice(r.as_bytes());
        }
        None => out.put_i32(0),
    }
    let ext = cmd.ext_fields.as_ref().map(|e| e.0.as_slice()).unwrap_or(&[]);
    let ext_len: usize = ext.iter().map(|(k, v)| 2 + k.len() + 4 + v.len()).sum();
    out.put_i32(ext_len as i32);
    for (k, v) in ext {
        out.put_i16(k.len() as i16);
        out.put_slice(k.as_bytes());
        out.put_i32(v.len() as i32);
        out.put_slice(v.as_bytes());
    }
}
