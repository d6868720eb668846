//! The replicated KV group's figures (`kvReplicationEnabled`), written by the KV Raft thread and shown by
//! `/metrics` only while it runs.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};

use super::metric;

#[derive(Default)]
pub struct KvRaftMetrics {
    pub enabled: AtomicBool,
    pub is_leader: AtomicBool,
    pub term: AtomicU64,
    /// The Raft leader's node id; −1 while there is none.
    pub leader: AtomicI64,
    /// The group has its starting table (the first leader's KV file, or a snapshot that has it).
    pub seeded: AtomicBool,
    /// Entries applied to this node's table.
    pub applied: AtomicU64,
    /// Keys this node held differently from the replicated table when it was seeded or given a snapshot.
    pub differing_keys: AtomicU64,
    pub snapshots_installed: AtomicU64,
    /// KV writes answered SYSTEM_ERROR because no majority committed them in time.
    pub refused: AtomicU64,
}

pub(super) fn render(o: &mut String, k: &KvRaftMetrics) {
    if !k.enabled.load(Relaxed) {
        return;
    }
    let leader = u8::from(k.is_leader.load(Relaxed));
    metric(o, "namesrv_kv_raft_is_leader", "gauge", "1 while this node leads the replicated KV group.", leader);
    metric(o, "namesrv_kv_raft_term", "gauge", "The KV group's Raft term on this node.", k.term.load(Relaxed));
    let id = k.leader.load(Relaxed);
    metric(o, "namesrv_kv_raft_leader_id", "gauge", "The KV group's leader (-1: none known).", id);
    let seeded = u8::from(k.seeded.load(Relaxed));
    metric(o, "namesrv_kv_raft_seeded", "gauge", "1 once the KV group has its starting table.", seeded);
    metric(o, "namesrv_kv_raft_applied_total", "counter", "KV changes applied here.", k.applied.load(Relaxed));
    let differing = k.differing_keys.load(Relaxed);
    let help = "Keys this node held differently from the replicated table (replaced by it).";
    metric(o, "namesrv_kv_raft_differing_keys_total", "counter", help, differing);
    let installed = k.snapshots_installed.load(Relaxed);
    metric(o, "namesrv_kv_raft_snapshots_installed_total", "counter", "KV snapshots received.", installed);
    let refused = k.refused.load(Relaxed);
    let help = "KV writes refused: no majority committed them in time.";
    metric(o, "namesrv_kv_raft_refused_total", "counter", help, refused);
}
