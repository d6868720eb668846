//! The decoder thread: runs the handler of large REGISTER_BROKER requests off the reactors, at a lower OS priority.
//!
//! A 10k-topic registration body takes ~10 ms to decode. Decoded on a reactor, every route query behind it on that
//! reactor waits as long; with brokers re-registering continuously that is most of the read tail latency. Here the
//! same handler (`handlers::dispatch`) runs on one thread at nice 10, below the reactors, so the kernel runs reactors
//! first whenever both are ready. The reactor sends a request here only when it expects a reply (not one-way), and
//! reads nothing more from that connection until the reply comes back, so a connection's requests still reach the
//! writer in order (see `Reactor::defer`).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use crossbeam_channel::Receiver;
use thread_priority::{set_current_thread_priority, ThreadPriority, ThreadPriorityValue};
use tracing::warn;

use crate::clock::Clock;
use crate::handlers::{self, route_cache::RouteCache, Action, Ctx};
use crate::protocol::RemotingCommand;
use crate::state::{ConnId, Snapshot};
use crate::writer::command::{self, Completion, Origin, WriteCommand};
use crate::writer::ReactorLink;

/// One deferred request.
pub struct Job {
    pub conn: ConnId,
    pub peer: SocketAddr,
    pub request: RemotingCommand,
    pub received: Instant,
}

pub struct Decoder {
    pub jobs: Receiver<Job>,
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub writer: command::WriterQueue,
    /// Given back once a job is handled (the reactor took it, `decoderQueueBytes`).
    pub bytes: Arc<crate::limit::ByteBudget>,
    pub reactors: Vec<ReactorLink>,
    pub clock: Arc<dyn Clock>,
    pub started_ms: i64,
    pub acl: Option<Arc<ArcSwap<crate::acl::Acl>>>,
}

impl Decoder {
    /// Until every reactor has dropped its sender.
    pub fn run(self) {
        lower_priority();
        let no_cache = RefCell::new(RouteCache::new(0));
        while let Ok(job) = self.jobs.recv() {
            let completion = self.handle(&job, &no_cache);
            self.bytes.release(job.request.body.len());
            if let Some(c) = completion {
                self.send(job.conn, c);
            }
        }
    }

    /// The handler's verdict: a completion for the reactor now, or None when the writer will send it.
    fn handle(&self, job: &Job, no_cache: &RefCell<RouteCache>) -> Option<Completion> {
        let snapshot = self.cell.load();
        let acl = self.acl.as_ref().map(|a| a.load());
        let ctx = Ctx {
            conn: job.conn,
            peer: job.peer.ip(),
            snapshot: &snapshot,
            now_ms: self.clock.now_ms(),
            started_ms: self.started_ms,
            route_cache: no_cache,
            acl: acl.as_deref().map(|a| &**a),
        };
        let req = &job.request;
        let reply = |response: RemotingCommand| Completion::Reply {
            conn: job.conn,
            code: req.code,
            response,
            received: job.received,
        };
        let handlers::Dispatched { action, account } = handlers::dispatch_guarded(&ctx, req);
        match action {
            Action::Reply(r) => Some(reply(r)),
            Action::Refused(response, limit) => {
                Some(Completion::Refused { conn: job.conn, code: req.code, response, limit, received: job.received })
            }
            // Received when the reactor read it, so the latency metric includes the wait here.
            Action::Write(op) => {
                let origin = Origin { received: job.received, ..Origin::new(job.conn, req, job.peer.ip(), account) };
                let bytes = req.body.len();
                command::submit(&self.writer, WriteCommand { origin, op, bytes }).err().map(reply)
            }
        }
    }

    fn send(&self, conn: ConnId, c: Completion) {
        if let Some(link) = self.reactors.get(usize::from(conn.reactor)) {
            if link.inbox.send(c).is_ok() {
                let _ = link.waker.wake();
            }
        }
    }
}

/// Lowers the calling thread's priority (on Linux a nice value is per thread, so only this thread is affected).
fn lower_priority() {
    // thread-priority maps 0..=99 onto nice 19..=-20; 21 is nice 10.
    let nice_10 = ThreadPriorityValue::try_from(21u8).expect("21 is within 0..=99");
    if let Err(e) = set_current_thread_priority(ThreadPriority::Crossplatform(nice_10)) {
        warn!(error = ?e, "cannot lower the decoder thread's priority");
    }
}
