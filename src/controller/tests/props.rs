//! Properties over random request sequences (random liveness at each step), run the way the replicated node runs
//! them: the leader validates, the events go through serde (the log), and `apply` changes the state.
//! - a fresh node applying the log, or a snapshot of a prefix and then the rest, reaches the leader's state;
//! - while a group stays registered its epochs never go down;
//! - the master is in its SyncStateSet (unless a clean removed it since its election: Java keeps such a master);
//! - an id, once held, keeps its register check code while it exists, and a SUCCESS for `APPLY_BROKER_ID` means
//!   the asker holds the id;
//! - a successful election or alteration answers what the state then holds.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::super::event::{BrokerId, Event};
use super::super::replicas::ReplicasInfo;
use super::super::request::*;
use super::Fixed;

const GROUPS: [&str; 2] = ["g0", "g1"];
const CLEAN_TEXT: [Option<&str>; 6] = [None, Some("1"), Some("2;3"), Some("1;2;3;4"), Some(";"), Some("x")];

#[derive(Clone, Debug)]
enum Op {
    /// What a starting broker does: get the next id, then apply for it.
    Join {
        group: usize,
        broker: u8,
    },
    ApplyId {
        group: usize,
        id: BrokerId,
        broker: u8,
    },
    Register {
        group: usize,
        id: BrokerId,
        addr: u8,
    },
    Elect {
        group: usize,
        id: BrokerId,
        designate: bool,
        unclean: bool,
    },
    /// From the current master with the current epochs, unless `fence` spoils one of them.
    Alter {
        group: usize,
        set: BTreeSet<BrokerId>,
        fence: u8,
    },
    Clean {
        group: usize,
        text: usize,
        living: bool,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    let group = 0..GROUPS.len();
    prop_oneof![
        3 => (group.clone(), 0u8..5).prop_map(|(group, broker)| Op::Join { group, broker }),
        1 => (group.clone(), 0i64..6, 0u8..5).prop_map(|(group, id, broker)| Op::ApplyId { group, id, broker }),
        2 => (group.clone(), 0i64..6, 0u8..3).prop_map(|(group, id, addr)| Op::Register { group, id, addr }),
        3 => (group.clone(), prop_oneof![Just(-1i64), 0i64..6], any::<bool>(), any::<bool>())
            .prop_map(|(group, id, designate, unclean)| Op::Elect { group, id, designate, unclean }),
        3 => (group.clone(), proptest::collection::btree_set(1i64..6, 0..5), 0u8..6)
            .prop_map(|(group, set, fence)| Op::Alter { group, set, fence }),
        1 => (group, 0..CLEAN_TEXT.len(), any::<bool>()).prop_map(|(group, text, living)| Op::Clean { group, text, living }),
    ]
}

fn check_code(broker: u8) -> String {
    format!("10.0.0.{broker}:10911;{broker}")
}

/// Run one request on the leader. Returns the events and, for an accepted `APPLY_BROKER_ID`, who got which id.
fn run(state: &ReplicasInfo, op: &Op, live: &Fixed) -> (Vec<Event>, Option<(usize, BrokerId, String)>) {
    let (cluster, name) = ("c".to_owned(), |g: usize| GROUPS[g].to_owned());
    match *op {
        Op::Join { group, broker } | Op::ApplyId { group, broker, .. } => {
            let id = match *op {
                Op::ApplyId { id, .. } => id,
                _ => {
                    let req = GetNextBrokerId { cluster_name: cluster.clone(), broker_name: name(group) };
                    state.get_next_broker_id(&req).response.next_broker_id
                }
            };
            let req = ApplyBrokerId {
                cluster_name: cluster,
                broker_name: name(group),
                applied_broker_id: id,
                register_check_code: check_code(broker),
            };
            let r = state.apply_broker_id(&req);
            let granted = (r.code() == 0).then(|| (group, id, check_code(broker)));
            (r.events, granted)
        }
        Op::Register { group, id, addr } => {
            let req = RegisterBroker {
                cluster_name: cluster,
                broker_name: name(group),
                broker_id: id,
                broker_address: format!("moved-{addr}"),
            };
            (state.register_broker(&req, live).events, None)
        }
        Op::Elect { group, id, designate, unclean } => {
            let req = ElectMaster {
                cluster_name: cluster,
                broker_name: name(group),
                broker_id: id,
                designate_elect: designate,
            };
            let r = state.elect_master(&req, live, unclean);
            if r.code() == 0 {
                let mut after = state.clone();
                r.events.iter().for_each(|e| after.apply(e));
                let (_, sync) = after.group(&name(group)).expect("still registered");
                assert_eq!(
                    (r.response.master_broker_id, r.response.master_epoch),
                    (sync.master_broker_id, Some(sync.master_epoch))
                );
            }
            (r.events, None)
        }
        Op::Alter { group, ref set, fence } => {
            let sync = state.sync_state(&name(group));
            let master = sync.and_then(|s| s.master_broker_id).unwrap_or(1);
            let master_epoch = sync.map_or(0, |s| s.master_epoch) + i32::from(fence == 1);
            let epoch = sync.map_or(0, |s| s.sync_state_set_epoch) - i32::from(fence == 2);
            let mut set = set.clone();
            if fence != 3 {
                set.insert(master);
            }
            let req = AlterSyncStateSet {
                broker_name: name(group),
                master_broker_id: master,
                master_epoch,
                new_sync_state_set: SyncStateSet { sync_state_set: set, sync_state_set_epoch: epoch },
            };
            let r = state.alter_sync_state_set(&req, live);
            if r.code() == 0 {
                assert_eq!(r.response.new_sync_state_set_epoch, epoch + 1);
            }
            (r.events, None)
        }
        Op::Clean { group, text, living } => {
            let req = CleanBrokerData {
                cluster_name: Some(cluster),
                broker_name: name(group),
                broker_controller_ids_to_clean: CLEAN_TEXT[text].map(str::to_owned),
                is_clean_living_broker: living,
            };
            (state.clean_broker_data(&req, live).events, None)
        }
    }
}

fn codes(state: &ReplicasInfo, group: &str) -> BTreeMap<BrokerId, String> {
    state
        .replicas(group)
        .map_or_else(BTreeMap::new, |g| g.replicas.iter().map(|(id, r)| (*id, r.register_check_code.clone())).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_log_rebuilds_the_leaders_state_and_keeps_the_invariants(
        steps in proptest::collection::vec((arb_op(), proptest::collection::btree_set(0i64..6, 0..6)), 1..60),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut leader = ReplicasInfo::new();
        let mut log: Vec<Event> = Vec::new();
        // Groups whose master may have been cleaned out of the set since it was elected.
        let mut cleaned_since_election: BTreeSet<String> = BTreeSet::new();
        for (op, alive) in &steps {
            let live = Fixed { alive: alive.clone(), facts: BTreeMap::new() };
            let before = leader.clone();
            let (events, granted) = run(&leader, op, &live);
            for event in events {
                let bytes = serde_json::to_vec(&event).expect("serialize");
                let back: Event = serde_json::from_slice(&bytes).expect("deserialize");
                prop_assert_eq!(&back, &event);
                match &event {
                    Event::CleanBrokerData { broker_name, .. } => { cleaned_since_election.insert(broker_name.clone()); }
                    Event::ElectMaster { broker_name, new_master: Some(_) } => { cleaned_since_election.remove(broker_name); }
                    _ => {}
                }
                leader.apply(&back);
                log.push(back);
            }
            for name in GROUPS {
                if let (Some((_, b)), Some((_, a))) = (before.group(name), leader.group(name)) {
                    prop_assert!(a.master_epoch >= b.master_epoch, "master epoch went down in {}", name);
                    prop_assert!(a.sync_state_set_epoch >= b.sync_state_set_epoch, "set epoch went down in {}", name);
                }
                if let Some((_, sync)) = leader.group(name) {
                    if let (Some(m), false) = (sync.master_broker_id, cleaned_since_election.contains(name)) {
                        prop_assert!(sync.sync_state_set.contains(&m), "master {} not in {:?}", m, sync.sync_state_set);
                    }
                }
                let (old, new) = (codes(&before, name), codes(&leader, name));
                for (id, code) in &old {
                    if let Some(now) = new.get(id) {
                        prop_assert_eq!(now, code, "id {} of {} changed hands", id, name);
                    }
                }
            }
            if let Some((group, id, code)) = granted {
                prop_assert_eq!(codes(&leader, GROUPS[group]).get(&id).cloned(), Some(code));
            }
        }

        let mut follower = ReplicasInfo::new();
        log.iter().for_each(|e| follower.apply(e));
        prop_assert_eq!(&follower, &leader);

        // A snapshot taken after any prefix of the log, then the rest of the log, gives the same state.
        let k = if log.is_empty() { 0 } else { cut.index(log.len() + 1) };
        let mut prefix = ReplicasInfo::new();
        log[..k].iter().for_each(|e| prefix.apply(e));
        let snapshot = serde_json::to_vec(&prefix).expect("snapshot");
        let mut restored: ReplicasInfo = serde_json::from_slice(&snapshot).expect("restore");
        log[k..].iter().for_each(|e| restored.apply(e));
        prop_assert_eq!(&restored, &leader);
    }
}
