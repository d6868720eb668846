//! Routes served provisionally before their brokers re-register: a warm restart's file, replayed before the writer
//! runs, and a peer's table (`fleet::bootstrap`), imported between batches once it arrives.

use std::sync::atomic::Ordering::Relaxed;

use tracing::{info, warn};

use super::{Dirty, Writer};
use crate::feed::Change;
use crate::fleet::bootstrap::Import;
use crate::warm::Saved;

impl Writer {
    /// Warm restart: replays saved registrations as provisional brokers (no connection) and publishes. Each is
    /// registered as last heard from when it was saved (`Saved::replay_at`; `now_ms` stamps only the live entry's
    /// last-update time), so the expiry scan takes it when it would have without the restart; one whose timeout has
    /// passed already is not replayed. Returns how many were replayed and how many were not.
    pub(crate) fn warm_start(&mut self, saved: Vec<Saved>) -> (usize, usize) {
        let (replayed, gone) = self.replay(saved);
        // Restored, not changed: the feed starts with what happens after the restart.
        self.tables.take_changes();
        self.publish(&Dirty::default());
        (replayed, gone)
    }

    /// Registers `saved` as provisional brokers, skipping any broker registered meanwhile (its own registration
    /// is newer than any copy) and any whose timeout has passed. Returns (replayed, not replayed).
    fn replay(&mut self, saved: Vec<Saved>) -> (usize, usize) {
        let now = self.clock.now_ms();
        let (mut replayed, mut gone) = (0, 0);
        for s in saved {
            let Some(last) = s.replay_at(now) else {
                gone += 1;
                continue;
            };
            let reg = s.reg;
            if self.tables.is_live(&reg.cluster_name, &reg.broker_addr) {
                gone += 1;
                continue;
            }
            replayed += 1;
            let key = (reg.cluster_name.clone(), reg.broker_addr.clone());
            if self.tables.register_broker(reg, last, self.settings()).is_some() {
                self.provisional.insert(key);
            }
        }
        self.metrics.provisional_brokers.store(self.provisional.len() as u64, Relaxed);
        self.metrics.live_brokers.store(self.tables.live_broker_count() as u64, Relaxed);
        (replayed, gone)
    }

    /// A peer's table (bootstrap): its brokers replayed as a warm restart's are, and its KV entries only into a KV
    /// table that is still empty (one written here meanwhile is ours to keep), made durable before the publish.
    pub(super) fn import(&mut self, import: Import) {
        let Import { from, table } = import;
        let (replayed, skipped) = self.replay(table.brokers);
        self.tables.take_changes();
        let mut dirty = Dirty::default();
        let kv_before = self.kv.clone();
        if self.kv.is_empty() && !table.kv.is_empty() {
            for (ns, key, value) in &table.kv {
                self.kv.put(ns, key, Some(value));
            }
            dirty.kv = true;
            if self.make_durable(&dirty, &kv_before).is_err() {
                // Not served unless kept: a restart would lose what clients were told.
                self.kv = kv_before;
                dirty.kv = false;
            } else {
                let puts = table.kv.into_iter().map(|(namespace, key, _)| Change::KvPut { namespace, key });
                self.changes.extend(puts);
            }
        }
        self.publish(&dirty);
        self.append_changes();
        match replayed {
            0 => {
                warn!(peer = %from, skipped, "bootstrap: every broker of the peer's table is registered here already or gone")
            }
            _ => {
                info!(peer = %from, brokers = replayed, skipped, kv = dirty.kv, "bootstrap: serving a peer's routes provisionally")
            }
        }
    }
}
