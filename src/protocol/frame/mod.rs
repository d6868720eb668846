//! The frame codec: `length(4) | headerWord(4) | header | body`, big-endian; header JSON (type 0) or ROCKETMQ
//! binary (type 1). Incomplete input is `Ok(None)`; anything malformed is a `FrameError` and the caller closes the
//! connection (Java's `NettyDecoder` does the same).

mod binary;
mod json_fast;
mod json_header;

use bytes::{Buf, BufMut, BytesMut};

use super::code::SerializeType;
use super::command::RemotingCommand;

/// Java's default `com.rocketmq.remoting.frameMaxLength`.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Largest header accepted (ours; Java has none below the frame limit). Real headers are under a few KiB, and the
/// lenient JSON reader builds a tree of 12–60× its input: a 16 MiB header cost ~930 MiB and seconds of a reactor
/// (docs/fuzzing.md). 256 KiB bounds that at ~15 MiB.
pub(crate) const MAX_HEADER: u32 = 256 * 1024;

/// A frame that cannot be decoded. Always fatal for the connection.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame of {0} bytes exceeds the limit of {1}")]
    TooLong(u64, usize),
    #[error("frame length {0} is too short for a header word")]
    TooShort(u32),
    #[error("header length {header} exceeds frame length {frame}")]
    HeaderTooLong { header: u32, frame: u32 },
    #[error("header of {0} bytes exceeds the limit of {MAX_HEADER}")]
    HeaderTooLarge(u32),
    #[error("unknown header serialization type {0}")]
    UnknownSerializeType(u8),
    #[error("bad JSON header: {0}")]
    BadJsonHeader(String),
    #[error("bad ROCKETMQ header: {0}")]
    BadBinaryHeader(String),
}

/// The length of the frame at the front of `buf`, its 4-byte length prefix included, once that prefix is in.
pub(crate) fn frame_len(buf: &[u8]) -> Option<u64> {
    buf.first_chunk::<4>().map(|prefix| u64::from(u32::from_be_bytes(*prefix)) + 4)
}

/// Splits one frame off the front of `buf` and decodes it. `Ok(None)`: need more bytes (nothing consumed).
/// Checks the length prefix against `max_frame` before buffering the rest (`length + 4 > max_frame` is too long).
pub fn decode(buf: &mut BytesMut, max_frame: usize) -> Result<Option<RemotingCommand>, FrameError> {
    let Some(total) = frame_len(buf) else {
        return Ok(None);
    };
    let length = (total - 4) as u32;
    if total > max_frame as u64 {
        return Err(FrameError::TooLong(total, max_frame));
    }
    if length < 4 {
        return Err(FrameError::TooShort(length));
    }
    // `total` ≤ max_frame, so it fits in usize.
    let total = total as usize;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let word = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let header_len = word & 0x00FF_FFFF;
    if header_len > length - 4 {
        return Err(FrameError::HeaderTooLong { header: header_len, frame: length });
    }
    if header_len > MAX_HEADER {
        return Err(FrameError::HeaderTooLarge(header_len));
    }
    let type_byte = (word >> 24) as u8;
    let serialize_type = SerializeType::from_byte(type_byte).ok_or(FrameError::UnknownSerializeType(type_byte))?;
    // The header is read in place; only a body is split off (zero-copy), so a bodiless request — most of them —
    // costs no reference counting.
    let body_at = 8 + header_len as usize;
    let header = &buf[8..body_at];
    let mut cmd = match serialize_type {
        SerializeType::Json => json_header::decode(header)?,
        SerializeType::RocketMq => binary::decode(header)?,
    };
    if body_at < total {
        buf.advance(body_at);
        cmd.body = buf.split_to(total - body_at).freeze();
    } else {
        buf.advance(total);
    }
    cmd.serialize_type = serialize_type;
    Ok(Some(cmd))
}

/// Appends the whole frame of `cmd`, header encoded as `cmd.serialize_type`, to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    let start = out.len();
    out.put_u64(0); // length and header word, patched below
    match cmd.serialize_type {
        SerializeType::Json => json_header::encode(cmd, out),
        SerializeType::RocketMq => binary::encode(cmd, out),
    }
    let header_len = out.len() - start - 8;
    out.extend_from_slice(&cmd.body);
    let length = (out.len() - start - 4) as u32;
    let word = ((cmd.serialize_type as u32) << 24) | (header_len as u32 & 0x00FF_FFFF);
    out[start..start + 4].copy_from_slice(&length.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
}

#[cfg(test)]
mod tests;
