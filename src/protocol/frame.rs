//! The frame codec: `length(4) | headerWord(4) | header | body`, big-endian; header JSON (type 0) or ROCKETMQ
//! binary (type 1). Incomplete input is `Ok(None)`; anything malformed is a `FrameError` and the caller closes the
//! connection (Java's `NettyDecoder` does the same).

use bytes::BytesMut;

use super::command::RemotingCommand;

/// Java's default `com.rocketmq.remoting.frameMaxLength`.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// A frame that cannot be decoded. Always fatal for the connection.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame of {0} bytes exceeds the limit of {1}")]
    TooLong(u64, usize),
    #[error("frame length {0} is too short for a header word")]
    TooShort(u32),
    #[error("header length {header} exceeds frame length {frame}")]
    HeaderTooLong { header: u32, frame: u32 },
    #[error("unknown header serialization type {0}")]
    UnknownSerializeType(u8),
    #[error("bad JSON header: {0}")]
    BadJsonHeader(String),
    #[error("bad ROCKETMQ header: {0}")]
    BadBinaryHeader(String),
}

/// Splits one frame off the front of `buf` and decodes it. `Ok(None)`: need more bytes (nothing consumed).
/// Checks the length prefix against `max_frame` before buffering the rest (`length + 4 > max_frame` is too long).
pub fn decode(buf: &mut BytesMut, max_frame: usize) -> Result<Option<RemotingCommand>, FrameError> {
    let _ = (buf, max_frame);
    unimplemented!("protocol::frame::decode")
}

/// Appends the whole frame of `cmd`, header encoded as `cmd.serialize_type`, to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    let _ = (cmd, out);
    unimplemented!("protocol::frame::encode")
}
