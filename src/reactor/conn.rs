//! One client connection: its socket, input and output buffers, and the bookkeeping the reactor needs.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use bytes::BytesMut;
use mio::net::TcpStream;
use tracing::warn;

use super::admission::{may_read, Admission, ReadLimits, ReadOutcome};
use super::transport::{self, Transport};
use crate::protocol::frame;

pub(crate) struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub gen: u32,
    pub input: BytesMut,
    pub output: BytesMut,
    /// Last whole frame read, or reply written, for the idle timeout: progress, not bytes, so that a peer trickling
    /// a byte now and then is not kept for ever (decision 0032).
    pub last_active_ms: i64,
    /// Frames decoded so far (wrapping): the once-a-second tick tells a frame still arriving from a new one by it.
    pub frames_done: u32,
    /// The frame at the front of `input` was first seen unfinished at this tick, with `frames_done` then: the frame
    /// deadline runs from there (`Reactor::close_idle`).
    pub partial_since: Option<(u32, i64)>,
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
    limits_logged: u16,
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
            frames_done: 0,
            partial_since: None,
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
        let bit = 1u16 << (limit as u8);
        let first = self.limits_logged & bit == 0;
        self.limits_logged |= bit;
        first
    }

    /// Reads until WouldBlock (mio is edge-triggered) — or a short read, if `short_read_ends` — appending plaintext
    /// to `input`, at most `max_bytes`; returns the bytes read too. Stops early (`Held`) at the start of a frame of
    /// more than `SMALL_FRAME` bytes the decoder's queue has no room for (`may_read`), on either transport.
    pub(crate) fn fill(&mut self, scratch: &mut [u8], limits: &ReadLimits) -> (ReadOutcome, usize) {
        if let Transport::Sniff(_) = self.transport {
            // One read decides the transport: more, before it is decided, would be read without admission.
            let (outcome, n) = self.fill_plain(scratch, limits, true);
            if let Err(reason) = self.transport.sniffed(&mut self.input) {
                warn!(peer = %self.peer, %reason, "closing the connection");
                self.input = BytesMut::new();
                return (ReadOutcome::Closed, n);
            }
            let short = limits.short_read_ends && n < scratch.len();
            if !matches!(outcome, ReadOutcome::Open) || n == 0 || short || matches!(self.transport, Transport::Sniff(_))
            {
                return (outcome, n);
            }
            let (outcome, more) = self.fill(scratch, limits);
            return (outcome, n + more);
        }
        if let Transport::Tls(tls) = &mut self.transport {
            let mut tls = transport::TlsRead { tls, stream: &mut self.stream, peer: self.peer };
            return tls.fill(&mut self.input, &mut self.admission, scratch, limits);
        }
        self.fill_plain(scratch, limits, false)
    }

    /// Gives back the input buffer once empty, if it held a frame bigger than `SMALL_FRAME` (admitted into a buffer
    /// of its own size, which must not outlive the admission).
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

    /// Whether `input` starts with a whole frame (its length prefix is satisfied), i.e. decoding has something to do.
    pub(crate) fn whole_frame_buffered(&self) -> bool {
        frame::frame_len(&self.input).is_some_and(|total| self.input.len() as u64 >= total)
    }

    /// The bytes taken for the frame just decoded from `input`, handed on with it (0 if none were).
    pub(crate) fn take_admission(&mut self) -> usize {
        match std::mem::take(&mut self.admission) {
            Admission::Taken { bytes } => bytes,
            Admission::None | Admission::Waiting => 0,
        }
    }

    /// `once`: return after one successful read (a connection whose transport is not decided yet).
    fn fill_plain(&mut self, scratch: &mut [u8], limits: &ReadLimits, once: bool) -> (ReadOutcome, usize) {
        let mut total = 0;
        loop {
            if total >= limits.max_bytes {
                return (ReadOutcome::Open, total);
            }
            if let Some(stop) = may_read(&mut self.input, &mut self.admission, limits) {
                return (stop, total);
            }
            match self.stream.read(scratch) {
                Ok(0) => return (ReadOutcome::Closed, total),
                Ok(n) => {
                    self.input.extend_from_slice(&scratch[..n]);
                    total += n;
                    if once || (limits.short_read_ends && n < scratch.len()) {
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
