//! The election policy against a plain restatement of Java `DefaultElectPolicy.tryElect`:
//! - candidates are the alive ones; none alive → nobody;
//! - the old master wins if alive and no other id is designated;
//! - a designated id wins if alive, else nobody;
//! - otherwise sort by Java's comparator: epoch descending, then maxOffset descending, then electionPriority
//!   ascending (ties: ascending id, Java's hash-set order for small ids) and take the first.
//!
//! The SyncStateSet is tried first and all replicas only when unclean election is on.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::super::elect::{elect, Group};
use super::super::event::BrokerId;
use super::super::liveness::LiveFacts;
use super::Fixed;

const G: Group<'static> = Group { cluster_name: "c", broker_name: "b" };

fn reference(
    live: &Fixed,
    set: &BTreeSet<BrokerId>,
    old: Option<BrokerId>,
    designated: Option<BrokerId>,
) -> Option<BrokerId> {
    let mut alive: Vec<BrokerId> = set.iter().copied().filter(|id| live.alive.contains(id)).collect();
    if alive.is_empty() {
        return None;
    }
    if let Some(old) = old.filter(|o| alive.contains(o)) {
        if designated.is_none() || designated == Some(old) {
            return Some(old);
        }
    }
    if let Some(d) = designated {
        return alive.contains(&d).then_some(d);
    }
    alive.sort_by_key(|id| {
        let f = live.facts[id];
        (Reverse(f.epoch), Reverse(f.max_offset), f.election_priority, *id)
    });
    alive.first().copied()
}

fn arb_facts() -> impl Strategy<Value = LiveFacts> {
    let offset = prop_oneof![0i64..4, Just(3_000_000_000i64), Just(1i64 << 32), Just(i64::MAX)];
    let priority = prop_oneof![-2i32..3, Just(i32::MAX), Just(i32::MIN)];
    (0i32..3, offset, priority).prop_map(|(epoch, max_offset, election_priority)| LiveFacts {
        epoch,
        max_offset,
        election_priority,
    })
}

proptest! {
    #[test]
    fn elect_matches_javas_rules(
        facts in proptest::collection::btree_map(0i64..8, arb_facts(), 0..8),
        alive in proptest::collection::btree_set(0i64..8, 0..8),
        sync in proptest::collection::btree_set(0i64..8, 0..8),
        old in proptest::option::of(0i64..8),
        designated in proptest::option::of(0i64..8),
        unclean in any::<bool>(),
    ) {
        // Every alive broker has heartbeated, so it has facts (as with the real live table).
        let facts: BTreeMap<BrokerId, LiveFacts> = alive.iter()
            .map(|id| (*id, facts.get(id).copied().unwrap_or(LiveFacts { epoch: 0, max_offset: 0, election_priority: 0 })))
            .collect();
        let live = Fixed { alive, facts };
        let all: BTreeSet<BrokerId> = (0..8).collect();
        let expected = reference(&live, &sync, old, designated)
            .or_else(|| if unclean { reference(&live, &all, old, designated) } else { None });
        prop_assert_eq!(elect(&live, G, &sync, unclean.then_some(&all), old, designated), expected);
    }

    #[test]
    fn without_facts_the_lowest_alive_id_wins(alive in proptest::collection::btree_set(0i64..8, 1..8)) {
        // Java's `elect random` branch picks the hash set's first element: the lowest id for small ids.
        let live = |_: &str, _: &str, id: BrokerId| alive.contains(&id);
        let all: BTreeSet<BrokerId> = (0..8).collect();
        prop_assert_eq!(elect(&live, G, &all, None, None, None), alive.first().copied());
    }
}

#[test]
fn offsets_more_than_two_gib_apart_order_by_value() {
    // Java's `(int) (o2.maxOffset - o1.maxOffset)` would call 3e9 behind 0 (the int wraps negative); a replica
    // 3 GB ahead must win.
    let facts = |max_offset| LiveFacts { epoch: 1, max_offset, election_priority: 0 };
    let live = Fixed { alive: [1, 2].into(), facts: [(1, facts(0)), (2, facts(3_000_000_000))].into() };
    assert_eq!(elect(&live, G, &[1, 2].into(), None, None, None), Some(2));
}
