//! One client connection: its socket, input and output buffers, and the bookkeeping the reactor needs.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use bytes::BytesMut;
use mio::net::TcpStream;
use tracing::warn;

use super::transport::{self, ReadOutcome, Transport};
use crate::protocol::frame;

pub(crate) struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub gen: u32,
    pub input: BytesMut,
    pub output: BytesMut,
    /// Last read or write, for the idle timeout (Java's ALL_IDLE).
    pub last_active_ms: i64,
    /// This connection sent REGISTER_BROKER, so its close may evict a broker.
    pub broker: bool,
    /// WRITABLE interest is registered (only while output is pending).
    pub want_write: bool,
    /// Set on connections this server opened to a broker (905 notifications).
    pub outbound: Option<Outbound>,
    /// Plain, TLS, or (inbound, before the first byte) not decided yet.
    pub transport: Transport,
    /// Since when more than `maxPendingWriteBytes` of replies wait for this peer (we do not read it meanwhile).
    pub paused_since_ms: Option<i64>,
    /// Decoding stopped with complete frames left in `input` because too much output was queued; resumed by
    /// `flush` once it drains (no readable event may come: the peer already sent them).
    pub stalled: bool,
    /// A request of this connection is on the decoder thread: nothing more is read or decoded until its reply is
    /// back, so the connection's requests reach the writer in order.
    pub deferred: bool,
    /// A large registration waiting for room on the decoder's queue (`Reactor::retry_parked`): like `deferred`,
    /// nothing more is read meanwhile, so the peer is held back by TCP instead of being refused.
    pub parked: Option<Parked>,
    /// A frame of more than `BIG_FRAME` bytes was decoded from `input` (`release_input`).
    pub big_frame: bool,
    /// Room on the decoder's queue for the big frame being read, taken before it is read so that the bodies held in
    /// memory at once stay bounded (decision 0027).
    pub admission: Admission,
    /// In `Reactor::held`: stopped in the middle of a big frame until `admission` can be taken.
    pub held: bool,
    /// Limits this peer went over that were already logged (bit = `Limit as u8`): one log line per connection.
    limits_logged: u8,
}

/// A request read in full whose handling waits for room on the decoder's queue.
pub(crate) struct Parked {
    pub cmd: crate::protocol::RemotingCommand,
    pub received: std::time::Instant,
}

/// State of a connection we opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outbound {
    /// The TCP handshake finished.
    pub connected: bool,
    /// Queued notifications not written by then are dropped (Java's one-way timeout).
    pub deadline: Option<std::time::Instant>,
}

/// Room on the decoder's queue (`decoderQueueBytes`) taken for a big frame before the rest of it is read (decision
/// 0027): a burst of big registrations then waits in the kernel's socket buffers instead of in fresh memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Admission {
    /// No big frame is being read, or it is read without admission (TLS).
    #[default]
    None,
    /// The big frame at the front of `input` found no room yet: the rest of it is not read.
    Waiting,
    /// `bytes` are taken for the big frame being read, since `at_ms`.
    Taken { bytes: usize, at_ms: i64 },
    /// Taken for longer than `ADMISSION_LIMIT_MS` and given back (`Reactor::close_idle`): the rest of the frame is
    /// read without it, so that a peer sending slowly cannot hold the room others need.
    Revoked,
}

/// How long a big frame may hold its admission while it arrives: a 1.5 MB body takes milliseconds on a LAN, ~1 s
/// at 10 Mbit/s.
pub(crate) const ADMISSION_LIMIT_MS: i64 = 1000;

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
    pub now_ms: i64,
    /// Counts the frames that had to wait for room, once each.
    pub waited: &'a std::sync::atomic::AtomicU64,
}

/// A decoded frame's body shares `input`'s allocation, and after it is dropped the emptied `input` still holds all
/// of it: a broker sends its topic table every 30 s (~1.5 MB for 10k topics), so every broker connection would keep
/// a buffer of its body's size between registrations (300 brokers: ~450 MB). Input that held a frame bigger than
/// this is given back once empty; smaller frames keep the buffer for the next request.
pub(crate) const BIG_FRAME: usize = 256 * 1024;

impl Conn {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr, gen: u32, now_ms: i64) -> Conn {
        Conn {
            stream,
            peer,
            gen,
            // Grown on first read: an idle connection holds no input buffer (10k idle peers cost ~1 KiB each).
            input: BytesMut::new(),
            output: BytesMut::new(),
            last_active_ms: now_ms,
            broker: false,
            want_write: false,
            outbound: None,
            transport: Transport::Plain,
            paused_since_ms: None,
            stalled: false,
            deferred: false,
            parked: None,
            big_frame: false,
            admission: Admission::None,
            held: false,
            limits_logged: 0,
        }
    }

    /// Replies or TLS records are waiting to be written.
    pub(crate) fn pending_output(&self) -> bool {
        !self.output.is_empty() || self.transport.wants_write()
    }

    /// True the first time this connection goes over `limit`: log then, count always.
    pub(crate) fn first_time_over(&mut self, limit: crate::limit::Limit) -> bool {
        let bit = 1u8 << (limit as u8);
        let first = self.limits_logged & bit == 0;
        self.limits_logged |= bit;
        first
    }

    /// Reads until WouldBlock (mio is edge-triggered) — or a short read, if `short_read_ends` — appending plaintext
    /// to `input`, at most `max_bytes`; returns the bytes read too. Stops early (`Held`) at the start of a big frame
    /// the decoder's queue has no room for (`may_read`).
    pub(crate) fn fill(&mut self, scratch: &mut [u8], limits: &ReadLimits) -> (ReadOutcome, usize) {
        if let Transport::Tls(tls) = &mut self.transport {
            return transport::fill_tls(tls, &mut self.stream, &mut self.input, self.peer, limits.max_bytes);
        }
        let (outcome, n) = self.fill_plain(scratch, limits);
        if let Err(reason) = self.transport.sniffed(&mut self.input) {
            warn!(peer = %self.peer, %reason, "closing the connection");
            self.input.clear();
            return (ReadOutcome::Closed, n);
        }
        (outcome, n)
    }

    /// Gives back the input buffer once empty, if it held a frame bigger than `BIG_FRAME`.
    pub(crate) fn release_input(&mut self) {
        if self.big_frame && self.input.is_empty() {
            self.input = BytesMut::new();
            self.big_frame = false;
        }
    }

    /// Writes pending output until done or WouldBlock. `Err` means the connection is broken.
    pub(crate) fn flush(&mut self) -> io::Result<usize> {
        match &mut self.transport {
            Transport::Tls(tls) => transport::flush_tls(tls, &mut self.stream, &mut self.output),
            _ => self.flush_plain(),
        }
    }

    /// Whether more may be read: not while `input` ends in the start of a big frame that has no admission and
    /// cannot take one (`Held`), nor while whole frames come before such a frame (`Decode`: once they are decoded,
    /// it is at the front and takes its admission). Once admitted, the frame gets a buffer of its exact size,
    /// allocated then: growing the first read's buffer in place extends it into address space never touched, so
    /// every body would fault in fresh pages, where a new allocation reuses the memory of bodies already decoded
    /// (decision 0027).
    fn may_read(&mut self, limits: &ReadLimits) -> Option<ReadOutcome> {
        if matches!(self.admission, Admission::Taken { .. } | Admission::Revoked) {
            return None;
        }
        // The frame `input` ends in: after the whole frames a pipelining client sent before it, if any.
        let mut at = 0;
        let total = loop {
            let total = frame::frame_len(&self.input[at..])?;
            if total > limits.max_frame as u64 || ((self.input.len() - at) as u64) < total {
                break total;
            }
            at += total as usize;
        };
        if total <= BIG_FRAME as u64 || total > limits.max_frame as u64 {
            return None;
        }
        if at > 0 {
            return Some(ReadOutcome::Decode);
        }
        // `total` ≤ max_frame, so it fits in usize.
        let total = total as usize;
        if !limits.room.try_take(total) {
            if self.admission == Admission::None {
                limits.waited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.admission = Admission::Waiting;
            }
            return Some(ReadOutcome::Held);
        }
        self.admission = Admission::Taken { bytes: total, at_ms: limits.now_ms };
        let mut whole = BytesMut::with_capacity(total);
        whole.extend_from_slice(&self.input);
        self.input = whole;
        None
    }

    /// Whether `input` starts with a whole frame (its length prefix is satisfied), i.e. decoding has something to do.
    pub(crate) fn whole_frame_buffered(&self) -> bool {
        frame::frame_len(&self.input).is_some_and(|total| self.input.len() as u64 >= total)
    }

    /// The bytes taken for the frame just decoded from `input`, handed on with it (0 if none were).
    pub(crate) fn take_admission(&mut self) -> usize {
        match std::mem::take(&mut self.admission) {
            Admission::Taken { bytes, .. } => bytes,
            Admission::None | Admission::Waiting | Admission::Revoked => 0,
        }
    }

    fn fill_plain(&mut self, scratch: &mut [u8], limits: &ReadLimits) -> (ReadOutcome, usize) {
        let mut total = 0;
        loop {
            if total >= limits.max_bytes {
                return (ReadOutcome::Open, total);
            }
            if let Some(stop) = self.may_read(limits) {
                return (stop, total);
            }
            match self.stream.read(scratch) {
                Ok(0) => return (ReadOutcome::Closed, total),
                Ok(n) => {
                    self.input.extend_from_slice(&scratch[..n]);
                    total += n;
                    if limits.short_read_ends && n < scratch.len() {
                        // A short read emptied the socket; with edge-triggered epoll, bytes (or a close) arriving
                        // later raise a new event, so the read that would only say WouldBlock is skipped: one
                        // syscall per wake-up less (tokio does the same). Not when the event already reported the
                        // peer's close, which only a read of 0 shows.
                        return (ReadOutcome::Open, total);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (ReadOutcome::Open, total),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return (ReadOutcome::Closed, total),
            }
        }
    }

    fn flush_plain(&mut self) -> io::Result<usize> {
        let mut total = 0;
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    let _ = self.output.split_to(n);
                    total += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if self.output.is_empty() && self.output.capacity() > 1024 * 1024 {
            // Give back the memory of a burst of big replies.
            self.output = BytesMut::new();
        }
        Ok(total)
    }
}
