//! The end of a batch: publishing the next snapshot, then handing the batch's replies and notifications to the
//! reactors. Apart from the apply loop because it decides nothing about state; it makes what the batch applied
//! visible, in the order invariant 1 needs (publish before any reply), and sends applied bodies back to the thread
//! that decoded them.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use tracing::{debug, warn};

use super::{Dirty, Writer};
use crate::model::TopicConfig;
use crate::state::routes::MinBrokerIdNotice;
use crate::state::Snapshot;
use crate::write_command::Completion;

impl Writer {
    /// Builds and stores the next snapshot if routes, KV or config changed. One writer: no rcu retry needed.
    pub(super) fn publish(&mut self, dirty: &Dirty) {
        let routes_gen = self.tables.generation();
        if routes_gen == self.published_routes && !dirty.kv && !dirty.config && !dirty.signers {
            return;
        }
        self.published_routes = routes_gen;
        self.generation += 1;
        let prev = self.cell.load();
        let kv = if dirty.kv { Arc::new(self.kv.clone()) } else { prev.kv.clone() };
        let config = if dirty.config { self.config.clone() } else { prev.config.clone() };
        let started = Instant::now();
        let mut next = Snapshot::new(self.generation, self.tables.view(), kv, config);
        next.inner_signed = self.signers.by_addr.clone();
        drop(prev);
        self.cell.store(Arc::new(next));
        self.metrics.publishes.fetch_add(1, Relaxed);
        self.metrics.publish_latency.observe(started.elapsed());
    }

    /// Sends an applied body's topics to the decoder thread that decoded them, to be dropped there (decision 0026):
    /// their names were allocated on that thread, and freed there they go back to its allocator's cache for the next
    /// body, instead of through the arena's locked bins that a free on another thread takes. Dropped here when the
    /// decoder is behind (the channel is small) or absent.
    pub(super) fn give_back(&self, topics: Vec<TopicConfig>) {
        if let (Some(to), false) = (&self.spent, topics.is_empty()) {
            let _ = to.try_send(topics);
        }
    }

    pub(super) fn push(&mut self, reactor: u16, c: Completion) {
        if let Some(out) = self.outbox.get_mut(reactor as usize) {
            out.push(c);
        }
    }

    /// Hands each reactor its completions and wakes it once.
    pub(super) fn flush(&mut self) {
        for (i, out) in self.outbox.iter_mut().enumerate() {
            if out.is_empty() {
                continue;
            }
            let link = &self.reactors[i];
            for c in out.drain(..) {
                let _ = link.inbox.send(c);
            }
            if let Err(e) = link.waker.wake() {
                warn!(reactor = i, error = %e, "cannot wake reactor");
            }
        }
    }

    /// Hands each 905 to the reactor that owns connections to its target (by address hash, so one broker's
    /// notifications keep their order on one connection).
    pub(super) fn send_notices(&mut self, notices: Vec<MinBrokerIdNotice>) {
        for n in notices {
            debug!(target_addr = %n.target, min_broker_id = n.min_broker_id, "NOTIFY_MIN_BROKER_ID_CHANGE");
            let reactor = (ahash_of(&n.target) % self.reactors.len().max(1) as u64) as u16;
            self.push(reactor, Completion::Notify(n));
        }
    }
}

fn ahash_of(s: &str) -> u64 {
    ahash::RandomState::with_seeds(1, 2, 3, 4).hash_one(s)
}
