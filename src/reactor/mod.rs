//! A reactor: one mio `Poll` on one (pinned) thread. It polls the listening socket all reactors share (one socket, so
//! a second server on the port fails with "address in use" as Java's does; decision 0001), accepts and deals new
//! connections round-robin, reads and decodes frames, answers reads from one snapshot load per request, forwards
//! writes to the writer, and turns the writer's outcomes into replies (woken once per writer batch).
//!
//! Owns: sockets and their buffers. Must never: mutate routing state, block (the writer channel is `try_send`;
//! full → SYSTEM_BUSY), or let one connection's error reach another (errors close that connection only).

mod accept;
pub(crate) mod admission;
pub(crate) mod conn;
mod deferral;
mod limits;
pub(crate) mod outbound;
mod refusals;
mod shared;
pub(crate) mod transport;

pub(crate) use shared::{Settings, Shared};

use std::cell::RefCell;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;
use tracing::{debug, error, warn};

use crate::handlers::route_cache::RouteCache;
use crate::handlers::{self, Action, Ctx};
use crate::limit::Limit;
use crate::metrics::ReactorMetrics;
use crate::protocol::frame::{self, FrameError};
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::state::ConnId;
use crate::write_command::{self, Completion, ConnEvent, Origin, WriteCommand, WriteOp};
use admission::ReadOutcome;
use conn::Conn;
use deferral::PARK_RETRY;

const LISTENER: Token = Token(usize::MAX - 1);
pub(crate) const WAKER: Token = Token(usize::MAX - 2);
/// How often idle connections are looked for (and the longest a poll sleeps).
const TICK: Duration = Duration::from_millis(100);

/// A request refused for a limit, with its audit line if it was a write (`refusals.rs` decides whether to write it).
type Refused = (Limit, Option<Box<crate::audit::RefusedWrite>>);

/// Bytes read from one connection per wake before others get a turn.
const READ_BUDGET: usize = 1024 * 1024;
/// At most one "connection limit reached" line per reactor this often (a reconnect storm is one burst).
const REFUSAL_LOG_INTERVAL_MS: i64 = 10_000;
/// Java answers GO_AWAY while shutting down gracefully only to clients newer than V5_3_1 (ordinal 475).
pub(crate) const GO_AWAY_AFTER_VERSION: i32 = 475;

pub(crate) struct Reactor {
    id: u16,
    poll: Poll,
    listener: TcpListener,
    conns: Slab<Conn>,
    inbox: Receiver<Completion>,
    shared: Shared,
    next_gen: u32,
    scratch: Vec<u8>,
    /// Encoded route bodies (handlers::route_cache); a RefCell because handlers run from `&self`.
    route_cache: RefCell<RouteCache>,
    /// Connections with unread input left (budget hit, or output drained after a pause).
    again: Vec<usize>,
    last_idle_check_ms: i64,
    /// Wall-clock ms read once per loop turn (idle bookkeeping, handlers): the clock is a syscall on some hosts,
    /// too dear to read per request.
    now_ms: i64,
    /// Our connections to brokers (905), by address.
    outbound: std::collections::HashMap<std::net::SocketAddr, usize>,
    next_opaque: i32,
    metrics: Arc<ReactorMetrics>,
    /// Writes handed to the writer whose reply has not come back yet.
    in_flight: usize,
    /// Broker connections that closed while a request of theirs was on the decoder thread: their close reaches the
    /// writer only after that request's reply, i.e. after the registration was applied.
    closed_while_deferred: Vec<ConnId>,
    /// Connections with a parked registration (`Conn::parked`), tried again every `PARK_RETRY`.
    parked: Vec<(usize, u32)>,
    /// Connections stopped in the middle of a big frame until the decoder's byte budget has room for it.
    held: Vec<(usize, u32)>,
    listener_closed: bool,
    /// Connections refused by `maxConnections` since the last log line, and when that line was written.
    refused_since_log: u64,
    last_refusal_log_ms: Option<i64>,
    /// Requests refused for a limit, by peer: the first in full, the rest summed up (`refusals.rs`).
    refusals: refusals::Digest,
}

impl Reactor {
    /// Fallible construction: registers the listener on `poll` (whose waker, token `WAKER`, the caller made).
    pub(crate) fn new(
        id: u16,
        poll: Poll,
        listener: std::net::TcpListener,
        inbox: Receiver<Completion>,
        shared: Shared,
        metrics: Arc<ReactorMetrics>,
    ) -> io::Result<Reactor> {
        let mut listener = TcpListener::from_std(listener);
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let now = shared.clock.now_ms();
        let route_cache = RefCell::new(RouteCache::new(shared.settings.route_cache_bytes));
        let reactor = Reactor {
            id,
            route_cache,
            poll,
            listener,
            conns: Slab::with_capacity(1024),
            inbox,
            shared,
            next_gen: 0,
            scratch: vec![0u8; 64 * 1024],
            again: Vec::new(),
            last_idle_check_ms: now,
            now_ms: now,
            outbound: std::collections::HashMap::new(),
            next_opaque: 0,
            metrics,
            in_flight: 0,
            closed_while_deferred: Vec::new(),
            parked: Vec::new(),
            held: Vec::new(),
            listener_closed: false,
            refused_since_log: 0,
            last_refusal_log_ms: None,
            refusals: refusals::Digest::default(),
        };
        Ok(reactor)
    }

    /// The infallible loop: runs until shutdown; every error inside closes one connection at most.
    pub(crate) fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        while !self.shared.shutdown.load(Ordering::Acquire) {
            let timeout = match (self.again.is_empty(), self.parked.is_empty() && self.held.is_empty()) {
                (false, _) => Duration::ZERO,
                (true, false) => PARK_RETRY,
                (true, true) => TICK,
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    error!(reactor = self.id, error = %e, "poll failed");
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            self.now_ms = self.shared.clock.now_ms();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept_all(),
                    WAKER => {}
                    Token(key) => {
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            // A peer's close may have come with this event: then read on until it shows.
                            self.on_readable(key, !(event.is_read_closed() || event.is_error()));
                        }
                        if event.is_writable() && self.finish_connect(key) {
                            self.flush(key);
                        }
                    }
                }
            }
            self.retry_parked();
            self.retry_held();
            for key in std::mem::take(&mut self.again) {
                self.on_readable(key, false);
            }
            self.drain_inbox();
            self.expire_outbound();
            self.close_idle();
            if self.shared.draining.load(Ordering::Acquire) {
                self.drain_step();
            }
        }
        for key in self.conns.iter().map(|(k, _)| k).collect::<Vec<_>>() {
            self.close(key, "server shutdown");
        }
    }

    /// While draining: no new connections; report whether anything is still owed to a client.
    fn drain_step(&mut self) {
        if !self.listener_closed {
            let _ = self.poll.registry().deregister(&mut self.listener);
            self.listener_closed = true;
        }
        let owed = self.in_flight > 0
            || !self.parked.is_empty()
            || self.conns.iter().any(|(_, c)| c.outbound.is_none() && c.pending_output());
        self.metrics.drained.store(!owed, Ordering::Release);
    }

    fn conn_id(&self, key: usize, gen: u32) -> ConnId {
        ConnId { reactor: self.id, token: key as u32, gen }
    }

    /// Reads what the peer sent and handles it; `short_read_ends` lets a short read end the read (see `Conn::fill`):
    /// only for a readiness event that did not report the peer's close.
    fn on_readable(&mut self, key: usize, short_read_ends: bool) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.deferred || conn.parked.is_some() {
            // Read again when the deferred request's reply comes back (`drain_inbox`), or the parked one is handed
            // over (`retry_parked`).
            return;
        }
        if conn.output.len() > self.shared.settings.max_pending_write {
            // Not read from until it reads its replies (`flush` resumes it). Try a write: this event may be the peer
            // resetting, which only a failed write reveals, and the connection must not linger until idle.
            self.flush(key);
            return;
        }
        // Frames left over from a pass paused for a slow reader are handled before more is read, so unread input
        // stays bounded as well; the socket is read on the next turn (`again`).
        let backlog = conn.whole_frame_buffered();
        let limits = admission::ReadLimits {
            max_bytes: READ_BUDGET,
            short_read_ends,
            room: &self.shared.decoder_bytes,
            max_frame: self.shared.settings.max_frame,
            waited: &self.metrics.held,
        };
        let (outcome, n) = if backlog { (ReadOutcome::Open, 0) } else { conn.fill(&mut self.scratch, &limits) };
        if matches!(outcome, ReadOutcome::Held) && !conn.held {
            // Tried again every `PARK_RETRY`: the room comes from the decoder, not from this socket.
            conn.held = true;
            self.held.push((key, conn.gen));
        }
        if n >= READ_BUDGET || backlog || matches!(outcome, ReadOutcome::Decode) {
            self.again.push(key);
        }
        // Held, `input` starts with a big frame not yet whole: nothing to decode, and `frame::decode` would grow the
        // held buffer to the frame's size (decision 0027).
        let decoded = if matches!(outcome, ReadOutcome::Held) { Ok(()) } else { self.decode_and_handle(key) };
        if let Err(reason) = decoded {
            if let Some(c) = self.conns.get(key) {
                warn!(reactor = self.id, peer = %c.peer, %reason, "broken frame, closing the connection");
                self.metrics.broken_frames.fetch_add(1, Ordering::Relaxed);
            }
            self.close(key, &reason.to_string());
            return;
        }
        match outcome {
            ReadOutcome::Open | ReadOutcome::Held | ReadOutcome::Decode => self.flush(key),
            ReadOutcome::Closed => {
                self.flush(key);
                self.close(key, "peer closed");
            }
        }
    }

    /// Decodes every complete frame and handles it. `Err` = a broken frame: the caller closes the connection.
    /// Replies answered here leave together when the pass ends (`flush`), so they are timed together: one clock
    /// read per pass, not per request.
    fn decode_and_handle(&mut self, key: usize) -> Result<(), FrameError> {
        let started = std::time::Instant::now();
        let mut answered: smallvec::SmallVec<[(i32, i32); 32]> = smallvec::SmallVec::new();
        let result = self.decode_frames(key, started, &mut answered);
        if !answered.is_empty() {
            let took = started.elapsed();
            for (code, response) in answered {
                self.metrics.request(code, response, took);
            }
        }
        result
    }

    fn decode_frames(
        &mut self,
        key: usize,
        started: std::time::Instant,
        answered: &mut smallvec::SmallVec<[(i32, i32); 32]>,
    ) -> Result<(), FrameError> {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return Ok(());
            };
            if conn.output.len() > self.shared.settings.max_pending_write {
                // The peer does not read: its other frames wait until `flush` resumes it. Checked per frame, as one
                // read budget of small requests with large replies (topic lists) would otherwise queue gigabytes.
                conn.stalled = true;
                return Ok(());
            }
            let cmd = match frame::decode(&mut conn.input, self.shared.settings.max_frame) {
                Ok(Some(cmd)) => cmd,
                Ok(None) => {
                    conn.release_input();
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let admitted = conn.take_admission();
            // Progress for the idle timeout and the frame deadline: whole frames, not bytes (decision 0032).
            conn.last_active_ms = self.now_ms;
            conn.frames_done = conn.frames_done.wrapping_add(1);
            // A frame read into a buffer of its own size (admitted) gives the buffer back with its room.
            conn.big_frame |= admitted > 0;
            if !cmd.is_response() {
                conn.broker |= cmd.code == RequestCode::REGISTER_BROKER;
                conn.big_frame |= cmd.body.len() > conn::BIG_FRAME;
            }
            let id = ConnId { reactor: self.id, token: key as u32, gen: conn.gen };
            let peer = conn.peer;
            let route = self.route(&cmd);
            if route != Route::Decoder {
                // The room this frame took on the decoder's queue when its length arrived is the decoder's to give
                // back for a registration handed to it (when done with the body); handled here, it is given back now
                // (see docs/decisions/0027-big-frames-admitted-before-they-are-read.md).
                self.shared.decoder_bytes.release(admitted);
            }
            let answer = match route {
                // We send no requests on inbound connections; Java logs and drops unmatched responses.
                Route::Drop => continue,
                Route::GoAway => {
                    Some(RemotingCommand::response_to(&cmd, ResponseCode::GO_AWAY, Some("please go away".into())))
                }
                Route::Decoder => {
                    if self.defer(key, id, peer, &cmd, started, admitted).is_err() {
                        self.metrics.parked.fetch_add(1, Ordering::Relaxed);
                        self.park(key, cmd, started);
                    }
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.release_input();
                    }
                    return Ok(());
                }
                Route::Here => {
                    let (answer, over) = self.handle(id, peer, &cmd);
                    if let (Some((limit, audit)), Some(resp)) = (over, &answer) {
                        self.over_limit(peer.ip(), limit, resp, audit);
                    }
                    answer
                }
            };
            if answer.is_none() && !cmd.is_oneway() {
                self.in_flight += 1;
            }
            match &answer {
                Some(resp) => answered.push((cmd.code, resp.code)),
                // A one-way write gets no completion; count it when handed over.
                None if cmd.is_oneway() => answered.push((cmd.code, ResponseCode::SUCCESS)),
                None => {}
            }
            if let Some(resp) = answer {
                if !cmd.is_oneway() {
                    if let Some(conn) = self.conns.get_mut(key) {
                        frame::encode(&resp, &mut conn.output);
                    }
                }
            }
        }
    }

    /// Where a decoded frame goes.
    fn route(&self, cmd: &RemotingCommand) -> Route {
        if cmd.is_response() {
            Route::Drop
        } else if self.shared.settings.go_away
            && self.shared.draining.load(Ordering::Relaxed)
            && cmd.version > GO_AWAY_AFTER_VERSION
        {
            Route::GoAway
        } else if self.should_defer(cmd) {
            Route::Decoder
        } else {
            Route::Here
        }
    }

    /// Runs the handler with one snapshot load; returns an immediate reply (with the limit it enforces, if any),
    /// or forwards a write.
    fn handle(
        &self,
        id: ConnId,
        peer: std::net::SocketAddr,
        cmd: &RemotingCommand,
    ) -> (Option<RemotingCommand>, Option<Refused>) {
        let snapshot = self.shared.cell.load();
        let acl = self.shared.acl.as_ref().map(|a| a.load());
        let ctx = Ctx {
            conn: id,
            peer: peer.ip(),
            snapshot: &snapshot,
            now_ms: self.now_ms,
            started_ms: self.shared.settings.started_ms,
            route_cache: &self.route_cache,
            acl: acl.as_deref().map(|a| &**a),
            acl_metrics: Some(&self.shared.acl_metrics),
            // A reactor defers every large registration to the decoder; what it decodes itself is short.
            give_way: || {},
        };
        let handlers::Dispatched { action, account, audit } = handlers::dispatch_guarded(&ctx, cmd);
        drop(snapshot);
        let reply = match action {
            Action::Reply(r) => Some(r),
            Action::Refused(r, limit) => return (Some(r), Some((limit, audit))),
            Action::Write(op @ (WriteOp::PutKv { .. } | WriteOp::DeleteKv { .. }))
                if self.shared.kv_writes.is_some() =>
            {
                let origin = Origin::new(id, cmd, peer.ip(), account);
                let command = Box::new(WriteCommand { origin, op, bytes: 0, decoded_with: None });
                let queue = self.shared.kv_writes.as_ref().expect("checked by the guard");
                match queue.try_send(command) {
                    Ok(()) => None,
                    Err(tokio::sync::mpsc::error::TrySendError::Full(c)) => {
                        self.metrics.busy_rejections.fetch_add(1, Ordering::Relaxed);
                        Some(crate::protocol::command::system_busy(&c.origin.request))
                    }
                    Err(tokio::sync::mpsc::error::TrySendError::Closed(c)) => {
                        Some(crate::protocol::command::system_error(&c.origin.request, "KV replication has stopped"))
                    }
                }
            }
            Action::Write(op) => {
                let origin = Origin::new(id, cmd, peer.ip(), account);
                match write_command::submit(
                    &self.shared.writer,
                    WriteCommand { origin, op, bytes: cmd.body.len(), decoded_with: None },
                ) {
                    Ok(()) => None,
                    Err(refusal) => {
                        if refusal.code == ResponseCode::SYSTEM_BUSY {
                            self.metrics.busy_rejections.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(refusal)
                    }
                }
            }
        };
        (reply, None)
    }

    fn flush(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        match conn.flush() {
            Ok(n) => {
                if n > 0 {
                    conn.last_active_ms = self.now_ms;
                }
            }
            Err(e) => {
                let reason = format!("write failed: {e}");
                self.close(key, &reason);
                return;
            }
        }
        let pending = conn.pending_output();
        if pending != conn.want_write {
            let interest = if pending { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if let Err(e) = self.poll.registry().reregister(&mut conn.stream, Token(key), interest) {
                let reason = format!("reregister failed: {e}");
                self.close(key, &reason);
                return;
            }
            conn.want_write = pending;
        }
        self.track_pause(key);
    }

    fn drain_inbox(&mut self) {
        let mut touched: Vec<usize> = Vec::new();
        let mut touched_read: Vec<usize> = Vec::new();
        while let Ok(c) = self.inbox.try_recv() {
            match c {
                Completion::Done { conn, request, outcome, received } => {
                    let response = handlers::complete(&request, outcome, &self.shared.cell.load());
                    self.reply(conn, &response, request.code, received, &mut touched, &mut touched_read);
                }
                Completion::Reply { conn, response, code, received } => {
                    self.reply(conn, &response, code, received, &mut touched, &mut touched_read);
                }
                Completion::Refused { conn, peer, response, code, limit, audit, received } => {
                    // Logged before the reply goes, as on the reactor's own refusals.
                    self.over_limit(peer, limit, &response, audit);
                    self.reply(conn, &response, code, received, &mut touched, &mut touched_read);
                }
                Completion::Adopt { stream, peer } => {
                    // Bytes may have arrived before registration; edge-triggered readiness would not report them.
                    touched_read.extend(self.adopt(stream, peer));
                }
                Completion::Notify(notice) => self.notify(&notice),
                Completion::Close { conn } => {
                    let key = conn.token as usize;
                    if self.conns.get(key).is_some_and(|c| c.gen == conn.gen) {
                        self.close(key, "broker expired");
                    }
                }
            }
        }
        touched.dedup();
        for key in touched {
            self.flush(key);
        }
        for key in touched_read {
            self.on_readable(key, false);
        }
    }

    /// Queues a reply from the writer or the decoder; resumes a connection that waited for it, or passes on the
    /// close of one that went away meanwhile.
    fn reply(
        &mut self,
        conn: ConnId,
        response: &RemotingCommand,
        code: i32,
        received: std::time::Instant,
        touched: &mut Vec<usize>,
        touched_read: &mut Vec<usize>,
    ) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.metrics.request(code, response.code, received.elapsed());
        let key = conn.token as usize;
        if let Some(c) = self.conns.get_mut(key).filter(|c| c.gen == conn.gen) {
            frame::encode(response, &mut c.output);
            touched.push(key);
            if c.deferred {
                c.deferred = false;
                touched_read.push(key);
            }
        } else if let Some(i) = self.closed_while_deferred.iter().position(|c| *c == conn) {
            self.closed_while_deferred.swap_remove(i);
            let _ = self.shared.events.send(ConnEvent::Closed(conn));
        }
    }

    /// Closes one connection; if it ever registered a broker, the writer hears of it (connection close is a write).
    fn close(&mut self, key: usize, reason: &str) {
        if !self.conns.contains(key) {
            return;
        }
        let mut conn = self.conns.remove(key);
        self.shared.decoder_bytes.release(conn.take_admission());
        if conn.outbound.is_some() {
            self.outbound.remove(&conn.peer);
        } else {
            self.metrics.connections_open.fetch_sub(1, Ordering::Relaxed);
            self.shared.open_connections.fetch_sub(1, Ordering::AcqRel);
        }
        let _ = self.poll.registry().deregister(&mut conn.stream);
        debug!(reactor = self.id, peer = %conn.peer, reason, "connection closed");
        // At shutdown the brokers did not go away, the server did: their routes stay for the warm-restart save.
        if conn.broker && !self.shared.shutdown.load(Ordering::Acquire) {
            let id = self.conn_id(key, conn.gen);
            if conn.deferred {
                self.closed_while_deferred.push(id);
            } else {
                let _ = self.shared.events.send(ConnEvent::Closed(id));
            }
        }
    }
}

/// Where `decode_frames` sends a decoded frame (`Reactor::route`): a response is dropped, a request while draining
/// with GO_AWAY on is answered so, a large registration goes to the decoder thread, the rest is handled here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Drop,
    GoAway,
    Decoder,
    Here,
}

#[cfg(test)]
mod tests;
