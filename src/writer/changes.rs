//! The writer's side of the change feed: which `Change`s an applied operation records, and when they reach the
//! feed.
//!
//! Apart from the apply loop so that the loop reads as routing, KV and config alone: nothing here decides what
//! happens, it only writes down what did. Changes wait in `Writer::changes` until their batch is published (an
//! event never names a route readers cannot see yet); the KV and config changes of a batch that could not be made
//! durable are dropped first, since they were rolled back. A registration's names are cloned only when it makes an
//! event. A removed broker is recorded in one place for every path that removes brokers (`log_evictions`): its
//! event, its audit line, the eviction counters and the provisional list.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::Writer;
use crate::feed::{Change, Feed};
use crate::model::NameSample;
use crate::state::routes::{EvictionCause, RegisterBroker, UnregisterBroker};

impl Writer {
    /// The change feed this writer appends to (off without it).
    pub(crate) fn with_feed(mut self, feed: Arc<Feed>) -> Writer {
        self.feed = feed;
        self
    }

    /// Read before a registration is applied: whether the feed will call its broker new (no live entry yet).
    /// `None` when the feed is off.
    pub(super) fn first_registration(&self, req: &RegisterBroker) -> Option<bool> {
        self.feed.is_on().then(|| !self.tables.is_live(&req.cluster_name, &req.broker_addr))
    }

    /// After a registration was applied: a new broker, or one whose topics changed, makes a `BrokerRegistered`
    /// (only if the registration succeeded); topics it put into or took out of the table make their own events.
    pub(super) fn note_registered(&mut self, req: &RegisterBroker, first: Option<bool>, succeeded: bool) {
        let topics = self.tables.take_changes();
        if let (Some(first), true) = (first, succeeded) {
            if first || !topics.added.is_empty() || !topics.removed.is_empty() || topics.updated > 0 {
                self.changes.push(Change::BrokerRegistered {
                    cluster: req.cluster_name.clone(),
                    broker_name: req.broker_name.clone(),
                    broker_id: req.broker_id,
                    addr: req.broker_addr.clone(),
                    first,
                    added: topics.added,
                    removed: topics.removed,
                    updated: topics.updated,
                });
            }
        }
        self.note_created_or_deleted(topics.created, topics.deleted);
    }

    /// A wiped or added write perm: the event says it all (no topic comes or goes).
    pub(super) fn note_perm_changed(&mut self, change: Change) {
        self.tables.take_changes();
        self.changes.push(change);
    }

    /// Brokers that left the tables, and why.
    pub(super) fn log_evictions(&mut self, brokers: &[UnregisterBroker], cause: EvictionCause) {
        self.metrics.evicted(cause, brokers.len());
        for b in brokers {
            self.provisional.remove(&(b.cluster_name.clone(), b.broker_addr.clone()));
        }
        self.metrics.provisional_brokers.store(self.provisional.len() as u64, Relaxed);
        let now = self.clock.now_ms();
        for b in brokers {
            self.remember_removal(crate::state::liveness::Removal {
                at_ms: now,
                cluster: b.cluster_name.as_str().into(),
                broker_name: b.broker_name.as_str().into(),
                broker_id: b.broker_id,
                addr: b.broker_addr.as_str().into(),
                cause: cause.name(),
            });
            crate::audit::removed(&b.cluster_name, &b.broker_name, b.broker_id, &b.broker_addr, cause.name());
            self.changes.push(Change::BrokerRemoved {
                cluster: b.cluster_name.clone(),
                broker_name: b.broker_name.clone(),
                broker_id: b.broker_id,
                addr: b.broker_addr.clone(),
                cause: cause.name(),
            });
        }
    }

    /// The feed's topic events for the last operation: what it put into or took out of the table.
    pub(super) fn note_topics_created_or_deleted(&mut self) {
        let topics = self.tables.take_changes();
        self.note_created_or_deleted(topics.created, topics.deleted);
    }

    fn note_created_or_deleted(&mut self, created: NameSample, deleted: NameSample) {
        if !created.is_empty() {
            self.changes.push(Change::TopicsCreated(created));
        }
        if !deleted.is_empty() {
            self.changes.push(Change::TopicsDeleted(deleted));
        }
    }

    /// The batch's KV and config changes were rolled back: they did not happen.
    pub(super) fn drop_rolled_back_changes(&mut self) {
        self.changes
            .retain(|c| !matches!(c, Change::KvPut { .. } | Change::KvDeleted { .. } | Change::ConfigUpdated { .. }));
    }

    /// After the publish: hands the batch's changes to the feed.
    pub(super) fn append_changes(&mut self) {
        if !self.changes.is_empty() {
            self.feed.append(self.clock.now_ms(), self.changes.drain(..));
        }
    }
}
