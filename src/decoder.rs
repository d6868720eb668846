//! The decoder thread: runs the handler of large REGISTER_BROKER requests off the reactors, at a lower OS priority.
//!
//! A 10k-topic registration body takes milliseconds to decode (perf/results/2026-12-06-numbers-from-comments.md).
//! Decoded on a reactor, every route query behind it on that reactor waits as long; with brokers re-registering
//! continuously that is most of the read tail latency. Here the same handler ([`crate::handlers::dispatch`]) runs on
//! one thread at nice 10, below the reactors, so the kernel runs reactors first when both are ready, and it gives way
//! every ~30 µs of decoding (`give_way`, decision 0025), so a query that arrives meanwhile does not wait for the rest
//! of this thread's slice either. The reactor sends a request here only when it expects a reply (not one-way), and
//! reads nothing more from that connection until the reply comes back, so a connection's requests still reach the
//! writer in order (see `Reactor::defer`).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use crossbeam_channel::{select, Receiver};
use thread_priority::{set_current_thread_priority, ThreadPriority, ThreadPriorityValue};
use tracing::warn;

use crate::clock::Clock;
use crate::handlers::{self, route_cache::RouteCache, Action, Ctx};
use crate::model::TopicConfig;
use crate::protocol::RemotingCommand;
use crate::state::{ConnId, Snapshot};
use crate::write_command::{self, Completion, Origin, ReactorLink, WriteCommand};

/// How long a decoded registration waits for room on the writer's queue before it is answered SYSTEM_BUSY.
const WRITER_WAIT: Duration = Duration::from_secs(10);

/// One deferred request.
pub(crate) struct Job {
    pub conn: ConnId,
    pub peer: SocketAddr,
    pub request: RemotingCommand,
    pub received: Instant,
}

pub(crate) struct Decoder {
    pub jobs: Receiver<Job>,
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub writer: write_command::WriterQueue,
    /// Given back once a job is handled (the reactor took it, `decoderQueueBytes`).
    pub bytes: Arc<crate::limit::ByteBudget>,
    pub reactors: Vec<ReactorLink>,
    pub clock: Arc<dyn Clock>,
    pub started_ms: i64,
    pub acl: Option<Arc<ArcSwap<crate::acl::Acl>>>,
    pub acl_metrics: Arc<crate::metrics::AclMetrics>,
    /// From the writer: applied bodies' topics, dropped here where their names were allocated, so they go back to
    /// this thread's allocator cache instead of through the arena's locked bins (decision 0026).
    pub spent: Receiver<Vec<TopicConfig>>,
}

impl Decoder {
    /// Until every reactor has dropped its sender.
    pub(crate) fn run(self) {
        lower_priority();
        let no_cache = RefCell::new(RouteCache::new(0));
        let mut spent = self.spent.clone();
        loop {
            select! {
                recv(self.jobs) -> job => {
                    let Ok(job) = job else { break };
                    // Whatever came back meanwhile first, so that its memory is there for this body to reuse.
                    spent.try_iter().for_each(drop);
                    let completion = self.handle(&job, &no_cache);
                    self.bytes.release(job.request.body.len());
                    if let Some(c) = completion {
                        self.send(job.conn, c);
                    }
                }
                recv(spent) -> topics => match topics {
                    Ok(topics) => drop(topics),
                    // The writer has stopped: a closed channel would be ready forever.
                    Err(_) => spent = crossbeam_channel::never(),
                },
            }
        }
    }

    /// The handler's verdict: a completion for the reactor now, or None when the writer will send it.
    fn handle(&self, job: &Job, no_cache: &RefCell<RouteCache>) -> Option<Completion> {
        // Owned, so that a write can hand it to the writer (`WriteCommand::decoded_with`).
        let snapshot = self.cell.load_full();
        let acl = self.acl.as_ref().map(|a| a.load());
        let ctx = Ctx {
            conn: job.conn,
            peer: job.peer.ip(),
            snapshot: &snapshot,
            now_ms: self.clock.now_ms(),
            started_ms: self.started_ms,
            route_cache: no_cache,
            acl: acl.as_deref().map(|a| &**a),
            acl_metrics: Some(&self.acl_metrics),
            give_way,
        };
        let req = &job.request;
        let reply = |response: RemotingCommand| Completion::Reply {
            conn: job.conn,
            code: req.code,
            response,
            received: job.received,
        };
        let handlers::Dispatched { action, account, audit } = handlers::dispatch_guarded(&ctx, req);
        match action {
            Action::Reply(r) => Some(reply(r)),
            Action::Refused(response, limit) => Some(Completion::Refused {
                conn: job.conn,
                peer: job.peer.ip(),
                code: req.code,
                response,
                limit,
                audit,
                received: job.received,
            }),
            // Received when the reactor read it, so the latency metric includes the wait here.
            Action::Write(op) => {
                let origin = Origin { received: job.received, ..Origin::new(job.conn, req, job.peer.ip(), account) };
                let bytes = req.body.len();
                let command = WriteCommand { origin, op, bytes, decoded_with: Some(snapshot) };
                submit_waiting(&self.writer, Box::new(command), WRITER_WAIT).err().map(reply)
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

/// Called between pieces of a decode, about every 30 µs (decision 0025). Nice 10 alone does not keep a reactor from
/// waiting: once this thread is running, the kernel protects its slice (EEVDF) from a woken reactor, and a query
/// arriving then waits for the rest of the slice, many times the time between two calls here. A yield ends the
/// protection: a reactor that is ready runs now, and with nothing else ready this thread goes on at once. Its share of
/// the CPU is still set by its weight, so it cannot be starved by yielding.
fn give_way() {
    std::thread::yield_now();
}

/// Lowers the calling thread's priority (on Linux a nice value is per thread, so only this thread is affected).
fn lower_priority() {
    // thread-priority maps 0..=99 onto nice 19..=-20; 21 is nice 10.
    let nice_10 = ThreadPriorityValue::try_from(21u8).expect("21 is within 0..=99");
    if let Err(e) = set_current_thread_priority(ThreadPriority::Crossplatform(nice_10)) {
        warn!(error = ?e, "cannot lower the decoder thread's priority");
    }
}

/// Hands a decoded registration to the writer, waiting up to `wait` while the writer's queue is full: meanwhile the
/// decoder takes no new jobs, its own queue fills and the reactors hold the next registrations unread on their
/// connections (`Reactor::park`). A burst of registrations then waits its turn instead of being refused after it
/// was read and decoded. The poll is at 1 ms, a small fraction of a large registration's apply.
fn submit_waiting(
    writer: &write_command::WriterQueue,
    mut c: Box<WriteCommand>,
    wait: Duration,
) -> Result<(), RemotingCommand> {
    let deadline = Instant::now() + wait;
    loop {
        match write_command::try_submit(writer, c) {
            Ok(()) => return Ok(()),
            Err(write_command::Refused::Busy(back)) if Instant::now() < deadline => {
                c = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(refused) => return Err(write_command::refusal(refused)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RequestCode, ResponseCode};
    use crate::write_command::{WriteOp, WriterQueue};

    fn write(opaque: i32) -> Box<WriteCommand> {
        let req = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER, opaque);
        let conn = ConnId { reactor: 0, token: 0, gen: 1 };
        let origin = Origin::new(conn, &req, std::net::Ipv4Addr::LOCALHOST.into(), None);
        Box::new(WriteCommand {
            origin,
            op: WriteOp::WipeWritePerm { broker_name: "b".into() },
            bytes: 0,
            decoded_with: None,
        })
    }

    /// A full writer queue holds the decoded registration back until there is room, instead of refusing it; past
    /// the wait it is SYSTEM_BUSY.
    #[test]
    fn a_decoded_write_waits_for_room_on_the_writer_queue() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let writer = WriterQueue { tx, bytes: Default::default() };
        write_command::try_submit(&writer, write(1)).ok().expect("room for one");
        let busy = submit_waiting(&writer, write(2), Duration::ZERO).unwrap_err();
        assert_eq!((busy.code, busy.opaque), (ResponseCode::SYSTEM_BUSY, 2));
        std::thread::scope(|s| {
            let waiting = s.spawn(|| submit_waiting(&writer, write(3), Duration::from_secs(60)));
            assert_eq!(rx.recv().unwrap().origin.request.opaque, 1);
            let next = rx.recv_timeout(Duration::from_secs(30)).expect("the waiting write got in");
            assert_eq!(next.origin.request.opaque, 3);
            assert!(waiting.join().unwrap().is_ok());
        });
    }

    /// Decision 0026: a registration goes to the writer with the snapshot its decode read, for the writer to let go
    /// of; and the topics the writer gives back are dropped on this thread (the test still holds the sender, so
    /// they are dropped only if the decoder took them).
    #[test]
    fn a_registration_carries_the_snapshot_it_read_and_topics_given_back_are_dropped_by_the_decoder() {
        use crate::model::TopicConfig;
        use crate::state::routes::test_util::reg;
        let config = Arc::new(crate::config::Config::default());
        let first = Arc::new(crate::writer::Writer::initial_snapshot(Default::default(), config));
        let cell = Arc::new(ArcSwap::new(first.clone()));
        let (jobs_tx, jobs) = crossbeam_channel::unbounded();
        let (writer_tx, writer_rx) = crossbeam_channel::unbounded();
        let (spent_tx, spent) = crossbeam_channel::bounded(8);
        let decoder = Decoder {
            jobs,
            cell,
            writer: WriterQueue { tx: writer_tx, bytes: Default::default() },
            bytes: Default::default(),
            reactors: Vec::new(),
            clock: crate::clock::ManualClock::new(0),
            started_ms: 0,
            acl: None,
            acl_metrics: Default::default(),
            spent,
        };
        let name: Arc<str> = Arc::from("given-back");
        let given_back = vec![TopicConfig { topic_name: name.clone().into(), ..TopicConfig::with_defaults("x") }];
        spent_tx.send(given_back).unwrap();
        let job = |opaque| Job {
            conn: ConnId { reactor: 0, token: 1, gen: 1 },
            peer: "127.0.0.1:1".parse().unwrap(),
            request: crate::registration::encode_register(&reg("c", "b", 0, "b:10911", &["t1", "t2"], 1), opaque),
            received: Instant::now(),
        };
        jobs_tx.send(job(1)).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| decoder.run());
            let command = writer_rx.recv_timeout(Duration::from_secs(10)).expect("the registration reaches the writer");
            assert!(matches!(command.op, WriteOp::RegisterBroker(..)), "{:?}", command.op);
            let read = command.decoded_with.as_ref().expect("the snapshot the decode read");
            assert!(Arc::ptr_eq(read, &first));
            drop(jobs_tx);
        });
        assert_eq!(Arc::strong_count(&name), 1, "the decoder did not drop the topics given back");
        drop(spent_tx);
    }
}
