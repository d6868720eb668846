//! Admission (decisions 0027, 0032): what a read pass may take into a connection's input buffer, on either
//! transport. A frame of more than `SMALL_FRAME` bytes takes its room on the decoder's queue before more of it is
//! read; without room, reading stops and TCP holds the sender back.

use bytes::BytesMut;

use crate::protocol::frame;

/// What a read pass found.
pub(crate) enum ReadOutcome {
    /// Drained to WouldBlock; the connection is open.
    Open,
    /// The peer closed its side, or the socket failed.
    Closed,
    /// Stopped in the middle of a big frame the decoder's byte budget has no room for yet (`Reactor::held`).
    Held,
    /// Stopped at the start of a big frame behind whole frames: those are decoded first, and the socket is read
    /// again on the same loop turn (`Reactor::again`), the big frame then at the front to take its admission.
    Decode,
}

/// Room on the decoder's queue (`decoderQueueBytes`) taken for a frame of more than `SMALL_FRAME` bytes before the
/// rest of it is read (decision 0027): a burst of big registrations then waits in the kernel's socket buffers instead
/// of in fresh memory. The room and the frame's buffer live together: both go when the frame is decoded, or when the
/// connection closes, the frame deadline included (decision 0032).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Admission {
    /// No frame of more than `SMALL_FRAME` bytes is being read.
    #[default]
    None,
    /// The frame at the front of `input` found no room yet: the rest of it is not read.
    Waiting,
    /// `bytes` are taken for the frame being read.
    Taken { bytes: usize },
}

/// Frames up to this long are read without admission, into the connection's own buffer: every route query and
/// heartbeat. A longer frame takes its room first, so a half-sent frame holds at most this much outside the budget
/// (plus the buffer's slack), whatever it announced (decision 0032).
pub(crate) const SMALL_FRAME: usize = 64 * 1024;

/// How much one `Conn::fill` may read, and what it needs to admit a big frame.
pub(crate) struct ReadLimits<'a> {
    /// Bytes at most, so that one flooding peer cannot monopolise the reactor.
    pub max_bytes: usize,
    /// A short read ends the call (see `Conn::fill`).
    pub short_read_ends: bool,
    /// The decoder's byte budget (`decoderQueueBytes`), where a big frame takes its room.
    pub room: &'a crate::limit::ByteBudget,
    /// A longer frame is refused by `frame::decode` once its prefix is in: nothing is taken or reserved for it.
    pub max_frame: usize,
    /// Counts the frames that had to wait for room, once each.
    pub waited: &'a std::sync::atomic::AtomicU64,
}

/// Whether more may be read into `input` (plaintext, on either transport): not while it ends in the start of a frame
/// of more than `SMALL_FRAME` bytes that has no admission and cannot take one (`Held`), nor while whole frames come
/// before such a frame (`Decode`: once they are decoded, it is at the front and takes its admission). Once admitted,
/// the frame gets a buffer of its exact size, allocated then: growing the first read's buffer in place extends it
/// into address space never touched, so every body would fault in fresh pages, where a new allocation reuses the
/// memory of bodies already decoded (decision 0027). So a frame holds at most one read (`SMALL_FRAME`) outside the
/// budget (decision 0032).
pub(crate) fn may_read(input: &mut BytesMut, admission: &mut Admission, limits: &ReadLimits) -> Option<ReadOutcome> {
    if matches!(admission, Admission::Taken { .. }) {
        return None;
    }
    // The frame `input` ends in: after the whole frames a pipelining client sent before it, if any.
    let mut at = 0;
    let total = loop {
        let total = frame::frame_len(&input[at..])?;
        if total > limits.max_frame as u64 || ((input.len() - at) as u64) < total {
            break total;
        }
        at += total as usize;
    };
    if total <= SMALL_FRAME as u64 || total > limits.max_frame as u64 {
        return None;
    }
    if at > 0 {
        return Some(ReadOutcome::Decode);
    }
    // `total` ≤ max_frame, so it fits in usize.
    let total = total as usize;
    if !limits.room.try_take(total) {
        if *admission == Admission::None {
            limits.waited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *admission = Admission::Waiting;
        }
        return Some(ReadOutcome::Held);
    }
    *admission = Admission::Taken { bytes: total };
    let mut whole = BytesMut::with_capacity(total);
    whole.extend_from_slice(input);
    *input = whole;
    None
}
