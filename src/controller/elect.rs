//! Who becomes master (Java `DefaultElectPolicy`). Pure: the caller passes the group's sets and a `Liveness`.
//!
//! Rules, in order, tried first on the alive members of the SyncStateSet, then — only when unclean election is
//! enabled (the caller passes `all_replicas`) — on all alive replicas:
//! 1. the old master, if alive and no other id is designated;
//! 2. a designated id: it if alive, else nobody from this set;
//! 3. the best by `rank`: epoch desc, maxOffset desc, electionPriority asc.
//!
//! Java compares maxOffsets by `(int) (b - a)`, which orders offsets more than 2 GiB apart wrongly (and treats a
//! difference of a multiple of 2^32 as a tie); we compare them as numbers. Java breaks full ties by hash-set order,
//! which is ascending id for small ids; we break them by ascending id always.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use super::event::BrokerId;
use super::liveness::{LiveFacts, Liveness};

/// The group an election is for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Group<'a> {
    pub cluster_name: &'a str,
    pub broker_name: &'a str,
}

/// Java `ElectPolicy.elect`: the new master, or `None` when no candidate qualifies.
pub(crate) fn elect(
    live: &impl Liveness,
    group: Group<'_>,
    sync_state_set: &BTreeSet<BrokerId>,
    all_replicas: Option<&BTreeSet<BrokerId>>,
    old_master: Option<BrokerId>,
    designated: Option<BrokerId>,
) -> Option<BrokerId> {
    try_elect(live, group, sync_state_set, old_master, designated)
        .or_else(|| all_replicas.and_then(|all| try_elect(live, group, all, old_master, designated)))
}

fn try_elect(
    live: &impl Liveness,
    group: Group<'_>,
    candidates: &BTreeSet<BrokerId>,
    old_master: Option<BrokerId>,
    designated: Option<BrokerId>,
) -> Option<BrokerId> {
    let alive: Vec<BrokerId> =
        candidates.iter().copied().filter(|id| live.is_alive(group.cluster_name, group.broker_name, *id)).collect();
    if alive.is_empty() {
        return None;
    }
    if let Some(old) = old_master {
        if alive.contains(&old) && designated.is_none_or(|d| d == old) {
            return Some(old);
        }
    }
    if let Some(d) = designated {
        return alive.contains(&d).then_some(d);
    }
    alive.into_iter().min_by(|a, b| {
        let fa = live.live_facts(group.cluster_name, group.broker_name, *a);
        let fb = live.live_facts(group.cluster_name, group.broker_name, *b);
        rank((*a, fa), (*b, fb))
    })
}

/// `Less` = `a` is the better master. Candidates with known facts come before those without (Java would fail on
/// a live broker without facts; a bare predicate gives none, and then the lowest id wins).
pub(crate) fn rank(a: (BrokerId, Option<LiveFacts>), b: (BrokerId, Option<LiveFacts>)) -> Ordering {
    let by_facts = match (a.1, b.1) {
        (Some(fa), Some(fb)) => fb
            .epoch
            .cmp(&fa.epoch)
            .then(fb.max_offset.cmp(&fa.max_offset))
            .then(fa.election_priority.cmp(&fb.election_priority)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_facts.then(a.0.cmp(&b.0))
}
