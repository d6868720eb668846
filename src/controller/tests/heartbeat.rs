//! The broker live table: Java `DefaultBrokerHeartbeatManagerTest`, then the rules of `onBrokerHeartbeat`,
//! `isBrokerActive`, `scanNotActiveBroker` and `onBrokerChannelClose` with the values Java's code gives.

use super::super::heartbeat::{BrokerHeartbeat, BrokerIdentity, HeartbeatTable, DEFAULT_HEARTBEAT_TIMEOUT_MS};
use super::super::liveness::{LiveFacts, Liveness};
use super::super::replicas::ReplicasInfo;
use super::super::request::*;
use super::apply;
use crate::conn_id::ConnId;

fn hb(id: i64, timeout: Option<i64>, epoch: i32, max_offset: i64) -> BrokerHeartbeat {
    BrokerHeartbeat {
        cluster_name: "cluster1".into(),
        broker_addr: "127.0.0.1:7000".into(),
        broker_name: "broker1".into(),
        broker_id: Some(id),
        epoch: Some(epoch),
        max_offset: Some(max_offset),
        confirm_offset: Some(-1),
        heartbeat_timeout_mills: timeout,
        election_priority: Some(0),
    }
}

fn identity(id: i64) -> BrokerIdentity {
    BrokerIdentity { cluster_name: "cluster1".into(), broker_name: "broker1".into(), broker_id: id }
}

fn conn(token: u32) -> ConnId {
    ConnId { reactor: 0, token, gen: 0 }
}

/// broker1 of cluster1 with each id in `ids` applied, and no master elected yet.
fn group_of(ids: std::ops::RangeInclusive<i64>) -> ReplicasInfo {
    let mut state = ReplicasInfo::new();
    for id in ids {
        let r = state.apply_broker_id(&ApplyBrokerId {
            cluster_name: "cluster1".into(),
            broker_name: "broker1".into(),
            applied_broker_id: id,
            register_check_code: format!("a{id};0"),
        });
        apply(&mut state, &r);
    }
    state
}

#[test]
fn detect_broker_alive_then_inactive() {
    // Java testDetectBrokerAlive: a 3000 ms timeout, and the scan reports the broker once it is past it.
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(1, Some(3000), 1, 1), None, 10_000);
    assert!(t.at(13_000).is_alive("cluster1", "broker1", 1), "alive up to last + timeout inclusive");
    assert!(t.scan(13_000).is_empty());
    assert!(!t.at(13_001).is_alive("cluster1", "broker1", 1));
    assert_eq!(t.scan(13_001), vec![identity(1)]);
    assert!(t.is_empty());
}

#[test]
fn missing_fields_take_javas_defaults() {
    let mut t = HeartbeatTable::new();
    let bare = BrokerHeartbeat { cluster_name: "cluster1".into(), broker_name: "broker1".into(), ..Default::default() };
    t.on_heartbeat(&bare, None, 0);
    let info = t.get(&identity(-1)).expect("keyed by id -1");
    assert_eq!(info.heartbeat_timeout_ms, DEFAULT_HEARTBEAT_TIMEOUT_MS);
    assert_eq!((info.epoch, info.max_offset, info.election_priority), (-1, -1, i32::MAX));
}

#[test]
fn epoch_and_offset_only_move_forward() {
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(1, None, 2, 100), None, 0);
    t.on_heartbeat(&hb(1, None, 1, 500), None, 1); // older epoch: ignored
    t.on_heartbeat(&hb(1, None, 2, 50), None, 2); // same epoch, lower offset: ignored
    let facts = t.at(2).live_facts("cluster1", "broker1", 1);
    assert_eq!(facts, Some(LiveFacts { epoch: 2, max_offset: 100, election_priority: 0 }));
    t.on_heartbeat(&hb(1, None, 2, 150), None, 3);
    assert_eq!(t.get(&identity(1)).map(|i| (i.max_offset, i.confirm_offset, i.last_update_ms)), Some((150, -1, 3)));
}

#[test]
fn a_closed_connection_removes_its_brokers_only() {
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(1, None, 1, 1), Some(conn(1)), 0);
    t.on_heartbeat(&hb(2, None, 1, 1), Some(conn(2)), 0);
    assert_eq!(t.on_connection_closed(conn(1)), vec![identity(1)]);
    assert!(t.on_connection_closed(conn(9)).is_empty());
    assert_eq!(t.len(), 1);
}

#[test]
fn losing_the_master_starts_an_election_that_picks_the_best_replica() {
    // ControllerManager.onBrokerInactive: only a lost master triggers elect_master(ANY_BROKER).
    let mut state = group_of(1..=2);
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(1, None, 1, 10), Some(conn(1)), 0);
    t.on_heartbeat(&hb(2, None, 1, 10), Some(conn(2)), 0);
    let first = ElectMaster {
        cluster_name: "cluster1".into(),
        broker_name: "broker1".into(),
        broker_id: 1,
        designate_elect: false,
    };
    let r = state.elect_master(&first, &t.at(0), false);
    apply(&mut state, &r);
    let alter = AlterSyncStateSet {
        broker_name: "broker1".into(),
        master_broker_id: 1,
        master_epoch: 1,
        new_sync_state_set: SyncStateSet { sync_state_set: [1, 2].into(), sync_state_set_epoch: 1 },
    };
    let r = state.alter_sync_state_set(&alter, &t.at(0));
    apply(&mut state, &r);
    let lost = t.on_connection_closed(conn(2));
    assert!(!state.lost_master(&lost[0].broker_name, lost[0].broker_id), "a slave's loss elects nobody");
    t.on_heartbeat(&hb(2, None, 1, 10), Some(conn(2)), 0);
    assert_eq!(state.scan_need_reelect(&t.at(0)), Vec::<String>::new());
    let lost = t.on_connection_closed(conn(1));
    assert!(state.lost_master(&lost[0].broker_name, lost[0].broker_id));
    assert_eq!(state.scan_need_reelect(&t.at(0)), vec!["broker1".to_owned()]);
    let any = ElectMaster { broker_id: ANY_BROKER, ..first };
    let r = state.elect_master(&any, &t.at(0), false);
    assert_eq!((r.code(), r.response.master_broker_id, r.response.master_epoch), (0, Some(2), Some(2)));
}

/// broker1 with ids 1 and 2, master 1, SyncStateSet {1, 2}: the group a new leader inherits from the log.
fn group_with_master_1() -> ReplicasInfo {
    let mut state = group_of(1..=2);
    let first = ElectMaster {
        cluster_name: "cluster1".into(),
        broker_name: "broker1".into(),
        broker_id: 1,
        designate_elect: false,
    };
    let r = state.elect_master(&first, &super::all_alive, false);
    apply(&mut state, &r);
    let alter = AlterSyncStateSet {
        broker_name: "broker1".into(),
        master_broker_id: 1,
        master_epoch: 1,
        new_sync_state_set: SyncStateSet { sync_state_set: [1, 2].into(), sync_state_set_epoch: 1 },
    };
    let r = state.alter_sync_state_set(&alter, &super::all_alive);
    apply(&mut state, &r);
    assert_eq!(state.get_replica_info("broker1").response.master_broker_id, Some(1));
    state
}

/// When this node became leader in the tests below.
const LEADING_SINCE: i64 = 100_000;

#[test]
fn a_new_leader_does_not_depose_a_master_it_has_not_heard_from_yet() {
    // The Jepsen `split` of seed 48: a node restarted, led 0.2 s later, heard the slave but not yet the master, and
    // its first scan elected the slave although the master was alive.
    let state = group_with_master_1();
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(2, None, 1, 10), None, LEADING_SINCE + 100);
    let now = LEADING_SINCE + 4_900;
    assert_eq!(state.scan_need_reelect(&t.at_leading_since(now, LEADING_SINCE)), Vec::<String>::new());
    // Java's rule, still what elections read: no entry, not alive, and the scan would elect.
    assert!(!t.at_leading_since(now, LEADING_SINCE).is_alive("cluster1", "broker1", 1));
    assert_eq!(state.scan_need_reelect(&t.at(now)), vec!["broker1".to_owned()]);
}

#[test]
fn a_master_still_unheard_after_the_groups_heartbeat_timeout_is_replaced() {
    // The slave declares 30 s, so the master is given 30 s (not the default 10 s) from the leader's start, up to
    // and including the bound, as `is_alive` is.
    let state = group_with_master_1();
    let mut t = HeartbeatTable::new();
    for now in (LEADING_SINCE..=LEADING_SINCE + 30_000).step_by(1_000) {
        t.on_heartbeat(&hb(2, Some(30_000), 1, 10), None, now);
        let spared = state.scan_need_reelect(&t.at_leading_since(now, LEADING_SINCE));
        assert_eq!(spared, Vec::<String>::new(), "{} ms into the leadership", now - LEADING_SINCE);
    }
    let now = LEADING_SINCE + 30_001;
    assert_eq!(state.scan_need_reelect(&t.at_leading_since(now, LEADING_SINCE)), vec!["broker1".to_owned()]);
}

#[test]
fn a_master_whose_entry_expired_is_replaced_at_once_even_by_a_new_leader() {
    // The master heartbeated this node, then went silent past its 3 s: it had its full timeout, no grace.
    let state = group_with_master_1();
    let mut t = HeartbeatTable::new();
    t.on_heartbeat(&hb(1, Some(3_000), 1, 10), None, LEADING_SINCE - 2_000);
    t.on_heartbeat(&hb(2, None, 1, 10), None, LEADING_SINCE + 900);
    let now = LEADING_SINCE + 1_001;
    assert_eq!(state.scan_need_reelect(&t.at_leading_since(now, LEADING_SINCE)), vec!["broker1".to_owned()]);
}
