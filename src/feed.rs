//! The route-change feed: every change the writer applies, in order, numbered, kept in a bounded ring that the
//! HTTP endpoint streams as Server-Sent Events (`/events`, docs/operations.md).
//!
//! The writer appends once per batch, after the publish (so an event never names a route readers cannot see yet),
//! under a lock held for O(events appended), then wakes the waiting readers. Readers are tasks of the HTTP runtime:
//! they copy out `Arc`s under the same lock and render and write on their own: a slow or stuck consumer never slows
//! the writer. What it costs a consumer to fall behind is
//! its place: once the ring has moved past events it has not read, it is told so and dropped (`Read::Behind`).
//!
//! Must never: block the writer on a reader, or hold the lock while rendering or writing to a socket.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

pub(crate) use crate::model::NameSample;

/// One change, as the feed reports it. Names are the peers' input: rendering escapes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// A broker registered for the first time (`first`), or re-registered with changed topics.
    BrokerRegistered {
        cluster: String,
        broker_name: String,
        broker_id: i64,
        addr: String,
        first: bool,
        /// Topics that gained / lost a queue of this broker name, and how many kept one with changed settings.
        added: NameSample,
        removed: NameSample,
        updated: usize,
    },
    /// `cause`: `expired`, `connection_closed` or `unregistered`.
    BrokerRemoved {
        cluster: String,
        broker_name: String,
        broker_id: i64,
        addr: String,
        cause: &'static str,
    },
    /// Topics that appeared in or left the route table, by the change before it (registration, removal or admin).
    TopicsCreated(NameSample),
    TopicsDeleted(NameSample),
    WritePermWiped {
        broker_name: String,
        count: i32,
    },
    WritePermAdded {
        broker_name: String,
        count: i32,
    },
    KvPut {
        namespace: String,
        key: String,
    },
    KvDeleted {
        namespace: String,
        key: String,
    },
    /// The keys an UPDATE_NAMESRV_CONFIG applied (never the values).
    ConfigUpdated {
        keys: Vec<String>,
    },
}

/// A change with its place in the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// 1, 2, 3, … from the start of this process.
    pub seq: u64,
    pub time_ms: i64,
    pub change: Change,
}

/// What a reader gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// The next events after the reader's position (possibly none, after the wait).
    Events(Vec<Arc<Event>>),
    /// Events after the reader's position were pushed out of the ring before it read them: `missed` of them,
    /// followed by what the ring still holds.
    Behind { missed: u64, events: Vec<Arc<Event>> },
    /// The server is shutting down and the reader has everything.
    Closed,
}

/// The ring. `capacity` 0 keeps nothing (the feed is off).
pub(crate) struct Feed {
    capacity: usize,
    /// When this process started: a resume id from another process (another `boot_ms`) is not ours.
    pub boot_ms: i64,
    ring: Mutex<Ring>,
    /// Woken after every append that added events, and at close. A tokio `Notify` rather than a condvar: the
    /// readers are async tasks, and a waiting task must not hold a thread.
    grew: Notify,
}

#[derive(Default)]
struct Ring {
    events: VecDeque<Arc<Event>>,
    /// The seq of the newest event (0 before the first).
    head: u64,
    closed: bool,
}

impl Feed {
    pub(crate) fn new(capacity: usize, boot_ms: i64) -> Feed {
        Feed { capacity, boot_ms, ring: Mutex::new(Ring::default()), grew: Notify::new() }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.capacity > 0
    }

    /// The writer's side: numbers and keeps `changes`, pushing the oldest out past the capacity, and wakes readers.
    pub(crate) fn append(&self, time_ms: i64, changes: impl IntoIterator<Item = Change>) {
        if !self.is_on() {
            return;
        }
        let mut ring = self.lock();
        let before = ring.head;
        for change in changes {
            ring.head += 1;
            let event = Arc::new(Event { seq: ring.head, time_ms, change });
            if ring.events.len() == self.capacity {
                ring.events.pop_front();
            }
            ring.events.push_back(event);
        }
        let grew = ring.head != before;
        drop(ring);
        if grew {
            self.grew.notify_waiters();
        }
    }

    /// The seq of the newest event.
    pub(crate) fn head(&self) -> u64 {
        self.lock().head
    }

    /// The events after `after` (at most `max`), waiting up to `wait` for one if there are none yet.
    pub(crate) async fn next(&self, after: u64, max: usize, wait: Duration) -> Read {
        // Registered before the ring is looked at: an append between the look and the wait still wakes us.
        let woken = self.grew.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        match self.read(after, max) {
            Read::Events(e) if e.is_empty() => {
                let _ = tokio::time::timeout(wait, woken).await;
                self.read(after, max)
            }
            other => other,
        }
    }

    /// The events after `after` (at most `max`), without waiting.
    pub(crate) fn read(&self, after: u64, max: usize) -> Read {
        let ring = self.lock();
        let oldest = ring.events.front().map_or(ring.head + 1, |e| e.seq);
        let start = after.max(oldest - 1);
        let events: Vec<Arc<Event>> =
            ring.events.iter().skip((start + 1 - oldest) as usize).take(max).cloned().collect();
        // `after` > head: an id from before a restart or made up; nothing was missed that we could know of.
        if after + 1 < oldest && after < ring.head {
            return Read::Behind { missed: oldest - 1 - after, events };
        }
        // Closed: what is left is still delivered, then the end.
        if ring.closed && events.is_empty() {
            return Read::Closed;
        }
        Read::Events(events)
    }

    /// The last `n` events' position: a reader starting there gets them first.
    pub(crate) fn replay_from(&self, n: u64) -> u64 {
        let ring = self.lock();
        let oldest = ring.events.front().map_or(ring.head + 1, |e| e.seq);
        ring.head.saturating_sub(n).max(oldest - 1)
    }

    /// Ends every stream (shutdown).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.grew.notify_waiters();
    }

    fn lock(&self) -> MutexGuard<'_, Ring> {
        // Nothing under the lock can panic half-way through an update that matters; a poisoned ring is still whole.
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str) -> Change {
        Change::KvPut { namespace: "ns".into(), key: key.into() }
    }

    fn seqs(r: &Read) -> Vec<u64> {
        match r {
            Read::Events(e) | Read::Behind { events: e, .. } => e.iter().map(|e| e.seq).collect(),
            Read::Closed => vec![],
        }
    }

    #[test]
    fn readers_get_what_follows_their_position_in_order() {
        let f = Feed::new(8, 1);
        f.append(10, [kv("a"), kv("b"), kv("c")]);
        assert_eq!(seqs(&f.read(0, 100)), [1, 2, 3]);
        assert_eq!(seqs(&f.read(1, 100)), [2, 3]);
        assert_eq!(seqs(&f.read(1, 1)), [2]);
        assert_eq!(f.read(3, 100), Read::Events(vec![]));
        assert_eq!(f.replay_from(2), 1);
        assert_eq!(f.replay_from(100), 0);
    }

    #[test]
    fn a_reader_the_ring_moved_past_is_told_how_many_it_missed() {
        let f = Feed::new(3, 1);
        f.append(10, (0..5).map(|i| kv(&i.to_string())));
        // Holds 3, 4, 5.
        assert_eq!(seqs(&f.read(2, 100)), [3, 4, 5]);
        assert!(matches!(f.read(2, 100), Read::Events(_)));
        match f.read(0, 100) {
            Read::Behind { missed, events } => {
                assert_eq!(missed, 2);
                assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
            }
            other => panic!("expected Behind, got {other:?}"),
        }
        assert_eq!(seqs(&f.read(1, 100)), [3, 4, 5]);
        assert_eq!(f.replay_from(100), 2);
        // A position beyond the head (another process's id): nothing missed that we know of.
        assert_eq!(f.read(99, 100), Read::Events(vec![]));
    }

    /// Polls `fut` once: its output if it is done, `None` if it is waiting.
    async fn poll_once(fut: &mut std::pin::Pin<Box<impl std::future::Future<Output = Read>>>) -> Option<Read> {
        tokio::select! {
            biased;
            r = fut.as_mut() => Some(r),
            _ = std::future::ready(()) => None,
        }
    }

    /// Every reader waiting when events are appended is woken, not just one; and every one at close. Each reader is
    /// known to be waiting (polled once, pending: registered with `grew`) before the append, and is polled once
    /// after it: only the wake-up can have made it ready, since its 60 s wait cannot be over. Nothing here waits
    /// on a timer.
    #[test]
    fn every_waiting_reader_wakes_on_append_and_on_close() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let f = Feed::new(4, 1);
            let mut readers = [(); 2].map(|_| Box::pin(f.next(0, 10, Duration::from_secs(60))));
            for r in &mut readers {
                assert_eq!(poll_once(r).await, None, "a reader did not wait for the first event");
            }
            f.append(1, [kv("x")]);
            for (i, r) in readers.iter_mut().enumerate() {
                let got =
                    poll_once(r).await.unwrap_or_else(|| panic!("waiting reader {i} was not woken by the append"));
                assert_eq!(seqs(&got), [1]);
            }
            let mut readers = [(); 2].map(|_| Box::pin(f.next(1, 10, Duration::from_secs(60))));
            for r in &mut readers {
                assert_eq!(poll_once(r).await, None, "a reader did not wait for the next event");
            }
            f.close();
            for (i, r) in readers.iter_mut().enumerate() {
                let got = poll_once(r).await.unwrap_or_else(|| panic!("waiting reader {i} was not woken by the close"));
                assert_eq!(got, Read::Closed);
            }
        });
    }

    #[test]
    fn an_off_feed_keeps_nothing() {
        let f = Feed::new(0, 1);
        f.append(1, [kv("x")]);
        assert_eq!(f.head(), 0);
        assert_eq!(f.read(0, 10), Read::Events(vec![]));
    }
}
