//! Java `ReplicasInfoManagerTest` (controller/src/test/.../impl/manager/), scenario by scenario with its expected
//! values. The helpers mirror the Java test's `registerNewBroker`, `brokerElectMaster` and `alterNewInSyncSet`,
//! assertions included.

use std::collections::BTreeSet;

use super::super::event::BrokerId;
use super::super::heartbeat::{BrokerHeartbeat, HeartbeatTable};
use super::super::liveness::Liveness;
use super::super::replicas::ReplicasInfo;
use super::super::request::*;
use super::{all_alive, apply, CLUSTER, GROUP, IP};
use crate::protocol::code::ControllerResponseCode as Code;

fn group_replicas(state: &ReplicasInfo, name: &str) -> GroupReplicas {
    let r = state.get_sync_state_data(&[name.to_owned()], &all_alive);
    r.response.replicas_info_table.get(name).cloned().expect("group known")
}

/// Java `registerNewBroker`: next id, apply it, register.
fn register_new_broker(state: &mut ReplicasInfo, addr: &str, expect_id: BrokerId, expect_master: Option<BrokerId>) {
    let next = state.get_next_broker_id(&GetNextBrokerId { cluster_name: CLUSTER.into(), broker_name: GROUP.into() });
    assert_eq!(next.code(), 0);
    assert_eq!(next.response.next_broker_id, expect_id);
    let id = next.response.next_broker_id;
    let applied = state.apply_broker_id(&ApplyBrokerId {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        applied_broker_id: id,
        register_check_code: format!("{addr};1700000000000"),
    });
    apply(state, &applied);
    assert_eq!(applied.code(), 0);
    let group = group_replicas(state, GROUP);
    let me = group.not_in_sync_replicas.iter().find(|r| r.broker_id == id).expect("registered, not in sync");
    assert_eq!((me.broker_name.as_str(), me.broker_address.as_str()), (GROUP, addr));
    let req = RegisterBroker {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        broker_id: expect_id,
        broker_address: addr.into(),
    };
    let registered = state.register_broker(&req, &all_alive);
    apply(state, &registered);
    assert_eq!(registered.code(), 0);
    assert_eq!(registered.response.master_broker_id, expect_master);
}

/// Java `brokerElectMaster`: a broker-triggered election, checked against what the state said before.
fn broker_elect_master(
    state: &mut ReplicasInfo,
    id: BrokerId,
    addr: &str,
    first_try: bool,
    expect_elected: bool,
    live: &impl Liveness,
) {
    let before = state.get_replica_info(GROUP).response;
    let sync_before = group_replicas(state, GROUP);
    let req =
        ElectMaster { cluster_name: CLUSTER.into(), broker_name: GROUP.into(), broker_id: id, designate_elect: false };
    let result = state.elect_master(&req, live, false);
    apply(state, &result);
    let after = state.get_replica_info(GROUP).response;
    let r = &result.response;
    if first_try {
        assert_eq!(result.code(), 0);
        assert_eq!((r.master_epoch, r.sync_state_set_epoch), (Some(1), Some(1)));
        assert_eq!((r.master_address.as_deref(), r.master_broker_id), (Some(addr), Some(id)));
        assert_eq!(
            (after.master_address.as_deref(), after.master_epoch, after.master_broker_id),
            (Some(addr), Some(1), Some(id))
        );
        return;
    }
    if before.master_broker_id.is_some_and(|m| live.is_alive(CLUSTER, GROUP, m)) {
        assert_eq!(result.code(), Code::CONTROLLER_MASTER_STILL_EXIST);
        assert_eq!(
            (&r.master_address, r.master_epoch, r.master_broker_id),
            (&before.master_address, before.master_epoch, before.master_broker_id)
        );
        assert_eq!(after.master_broker_id, before.master_broker_id);
        return;
    }
    if sync_before.in_sync_replicas.iter().any(|x| x.broker_id == id && x.broker_address == addr) {
        assert_eq!(result.code(), 0);
        assert_eq!(after.master_epoch, before.master_epoch.map(|e| e + 1));
        if expect_elected {
            assert_eq!((r.master_address.as_deref(), r.master_broker_id), (Some(addr), Some(id)));
            assert_eq!((after.master_address.as_deref(), after.master_broker_id), (Some(addr), Some(id)));
        }
    } else {
        assert_eq!(result.code(), Code::CONTROLLER_ELECT_MASTER_FAILED);
    }
}

/// Java `alterNewInSyncSet` (every replica alive).
fn alter_new_in_sync_set(state: &mut ReplicasInfo, master: BrokerId, master_epoch: i32, set: &[BrokerId], epoch: i32) {
    let set: BTreeSet<BrokerId> = set.iter().copied().collect();
    let req = AlterSyncStateSet {
        broker_name: GROUP.into(),
        master_broker_id: master,
        master_epoch,
        new_sync_state_set: SyncStateSet { sync_state_set: set.clone(), sync_state_set_epoch: epoch },
    };
    let result = state.alter_sync_state_set(&req, &all_alive);
    apply(state, &result);
    let body = state.get_replica_info(GROUP).response.body.expect("body");
    assert_eq!(body.sync_state_set, set);
    assert_eq!(body.sync_state_set_epoch, epoch + 1);
}

/// Java `mockMetaData`: three brokers, 1 master, all in sync.
fn mock_meta_data() -> ReplicasInfo {
    let mut s = ReplicasInfo::new();
    register_new_broker(&mut s, IP[0], 1, None);
    register_new_broker(&mut s, IP[1], 2, None);
    register_new_broker(&mut s, IP[2], 3, None);
    broker_elect_master(&mut s, 1, IP[0], true, true, &all_alive);
    broker_elect_master(&mut s, 2, IP[1], false, false, &all_alive);
    broker_elect_master(&mut s, 3, IP[2], false, false, &all_alive);
    alter_new_in_sync_set(&mut s, 1, 1, &[1, 2, 3], 1);
    s
}

/// Java's heartbeat arguments: (addr, id, timeout, epoch, maxOffset, confirmOffset, priority), at time 0.
fn heartbeats(rows: &[(&str, BrokerId, i64, i32, i64, i64, i32)]) -> HeartbeatTable {
    let mut t = HeartbeatTable::new();
    for &(addr, id, timeout, epoch, max_offset, confirm_offset, priority) in rows {
        let hb = BrokerHeartbeat {
            cluster_name: CLUSTER.into(),
            broker_addr: addr.into(),
            broker_name: GROUP.into(),
            broker_id: Some(id),
            epoch: Some(epoch),
            max_offset: Some(max_offset),
            confirm_offset: Some(confirm_offset),
            heartbeat_timeout_mills: Some(timeout),
            election_priority: Some(priority),
        };
        t.on_heartbeat(&hb, None, 0);
    }
    t
}

fn controller_trigger() -> ElectMaster {
    ElectMaster {
        cluster_name: String::new(),
        broker_name: GROUP.into(),
        broker_id: ANY_BROKER,
        designate_elect: false,
    }
}

fn admin_trigger(id: BrokerId) -> ElectMaster {
    ElectMaster { cluster_name: CLUSTER.into(), broker_name: GROUP.into(), broker_id: id, designate_elect: true }
}

#[test]
fn register_broker_success() {
    // Java testRegisterBrokerSuccess
    let s = mock_meta_data();
    let g = group_replicas(&s, GROUP);
    assert_eq!((g.master_broker_id, g.master_address.as_deref()), (Some(1), Some(IP[0])));
    assert_eq!((g.master_epoch, g.sync_state_set_epoch), (1, 2));
    assert_eq!((g.in_sync_replicas.len(), g.not_in_sync_replicas.len()), (3, 0));
}

#[test]
fn register_with_master_exist_resp() {
    // Java testRegisterWithMasterExistResp
    let mut s = ReplicasInfo::new();
    register_new_broker(&mut s, IP[0], 1, None);
    register_new_broker(&mut s, IP[1], 2, None);
    broker_elect_master(&mut s, 1, IP[0], true, true, &all_alive);
    broker_elect_master(&mut s, 2, IP[1], false, false, &all_alive);
    register_new_broker(&mut s, IP[2], 3, Some(1));
    broker_elect_master(&mut s, 3, IP[2], false, false, &all_alive);
    let g = group_replicas(&s, GROUP);
    assert_eq!((g.master_broker_id, g.master_address.as_deref()), (Some(1), Some(IP[0])));
    assert_eq!((g.master_epoch, g.sync_state_set_epoch), (1, 1));
    assert_eq!((g.in_sync_replicas.len(), g.not_in_sync_replicas.len()), (1, 2));
}

#[test]
fn register_with_old_master_inactive() {
    // Java testRegisterWithOldMasterInactive: only broker 3 alive, it is elected.
    let mut s = mock_meta_data();
    broker_elect_master(&mut s, 3, IP[2], false, true, &|_: &str, _: &str, id: BrokerId| id == 3);
    let g = group_replicas(&s, GROUP);
    assert_eq!((g.master_broker_id, g.master_address.as_deref()), (Some(3), Some(IP[2])));
    assert_eq!((g.master_epoch, g.sync_state_set_epoch), (2, 3));
    assert_eq!((g.in_sync_replicas.len(), g.not_in_sync_replicas.len()), (1, 2));
}

#[test]
fn elect_master_old_master_still_alive() {
    // Java testElectMasterOldMasterStillAlive
    let s = mock_meta_data();
    let t = heartbeats(&[
        (IP[0], 1, 10_000_000_000, 1, 1, -1, 0),
        (IP[1], 2, 10_000_000_000, 1, 2, -1, 0),
        (IP[2], 3, 10_000_000_000, 1, 3, -1, 0),
    ]);
    let r = s.elect_master(&controller_trigger(), &t.at(0), false);
    assert_eq!(r.code(), Code::CONTROLLER_MASTER_STILL_EXIST);
}

#[test]
fn elect_master_prefer_higher_epoch() {
    // Java testElectMasterPreferHigherEpoch: broker 1 timed out; 2 has epoch 1, 3 only epoch 0.
    let s = mock_meta_data();
    let t = heartbeats(&[
        (IP[0], 1, -10_000, 1, 3, -1, 0),
        (IP[1], 2, 10_000_000_000, 1, 2, -1, 0),
        (IP[2], 3, 10_000_000_000, 0, 3, -1, 0),
    ]);
    let r = s.elect_master(&controller_trigger(), &t.at(0), false).response;
    assert_eq!((r.master_address.as_deref(), r.master_broker_id, r.master_epoch), (Some(IP[1]), Some(2), Some(2)));
}

#[test]
fn elect_master_prefer_higher_offset_when_epoch_equals() {
    // Java testElectMasterPreferHigherOffsetWhenEpochEquals
    let s = mock_meta_data();
    let t = heartbeats(&[
        (IP[0], 1, -10_000, 1, 3, -1, 0),
        (IP[1], 2, 10_000_000_000, 1, 2, -1, 0),
        (IP[2], 3, 10_000_000_000, 1, 3, -1, 0),
    ]);
    let r = s.elect_master(&controller_trigger(), &t.at(0), false).response;
    assert_eq!((r.master_address.as_deref(), r.master_broker_id, r.master_epoch), (Some(IP[2]), Some(3), Some(2)));
}

#[test]
fn elect_master_prefer_higher_priority_when_epoch_and_offset_equal() {
    // Java testElectMasterPreferHigherPriorityWhenEpochAndOffsetEquals: lower number, higher priority.
    let s = mock_meta_data();
    let t = heartbeats(&[
        (IP[0], 1, -10_000, 1, 3, -1, 3),
        (IP[1], 2, 10_000_000_000, 1, 3, -1, 2),
        (IP[2], 3, 10_000_000_000, 1, 3, -1, 1),
    ]);
    let r = s.elect_master(&controller_trigger(), &t.at(0), false).response;
    assert_eq!((r.master_address.as_deref(), r.master_broker_id, r.master_epoch), (Some(IP[2]), Some(3), Some(2)));
}

#[test]
fn elect_master() {
    // Java testElectMaster
    let mut s = mock_meta_data();
    let not_1 = |_: &str, _: &str, id: BrokerId| id != 1;
    let r = s.elect_master(&controller_trigger(), &not_1, false);
    let resp = r.response.clone();
    assert_eq!(resp.master_epoch, Some(2));
    assert_ne!(resp.master_broker_id, Some(1));
    assert_ne!(resp.master_address.as_deref(), Some(IP[0]));
    apply(&mut s, &r);
    let master = resp.master_broker_id.expect("elected");
    alter_new_in_sync_set(&mut s, master, 2, &[1, 2, 3], resp.sync_state_set_epoch.expect("epoch"));
    // The admin designates broker 1, which is not alive.
    assert_eq!(s.elect_master(&admin_trigger(1), &not_1, false).code(), Code::CONTROLLER_ELECT_MASTER_FAILED);
    // The admin designates the living master itself.
    assert_eq!(s.elect_master(&admin_trigger(master), &all_alive, false).code(), Code::CONTROLLER_MASTER_STILL_EXIST);
    // The admin designates broker 1 while the master is down.
    let not_master = move |_: &str, _: &str, id: BrokerId| id != master;
    let r3 = s.elect_master(&admin_trigger(1), &not_master, false);
    assert_eq!(r3.code(), 0);
    let r3 = r3.response;
    assert_eq!((r3.master_broker_id, r3.master_address.as_deref(), r3.master_epoch), (Some(1), Some(IP[0]), Some(3)));
}

#[test]
fn all_replicas_shutdown_and_restart() {
    // Java testAllReplicasShutdownAndRestart: the set is {1}, 1 is down: nobody can be elected, and the result
    // still records that the master is gone.
    let mut s = mock_meta_data();
    alter_new_in_sync_set(&mut s, 1, 1, &[1], 2);
    let r = s.elect_master(&controller_trigger(), &|_: &str, _: &str, id: BrokerId| id != 1, false);
    assert_eq!(r.code(), Code::CONTROLLER_MASTER_NOT_AVAILABLE);
    assert_eq!(r.events.len(), 1);
    assert!(matches!(&r.events[0], super::super::Event::ElectMaster { new_master: None, .. }));
    apply(&mut s, &r);
    let info = s.get_replica_info(GROUP).response;
    assert_eq!(info.master_address, None);
    assert_eq!(info.master_epoch, Some(2));
}

#[test]
fn clean_broker_data() {
    // Java testCleanBrokerData
    let s = mock_meta_data();
    let clean = |cluster: Option<&str>, name: &str, ids: Option<&str>, living: bool| CleanBrokerData {
        cluster_name: cluster.map(str::to_owned),
        broker_name: name.into(),
        broker_controller_ids_to_clean: ids.map(str::to_owned),
        is_clean_living_broker: living,
    };
    let dead = |_: &str, _: &str, _: BrokerId| false;
    let r1 = s.clean_broker_data(&clean(Some(CLUSTER), GROUP, Some("1"), false), &all_alive);
    assert_eq!(r1.code(), Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    let r2 = s.clean_broker_data(&clean(Some(CLUSTER), GROUP, None, false), &all_alive);
    assert_eq!(r2.code(), Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert_eq!(r2.remark().as_deref(), Some("Broker broker-set-a is still alive, clean up failure"));
    assert_eq!(s.clean_broker_data(&clean(Some(CLUSTER), GROUP, Some("1"), false), &dead).code(), 0);
    assert_eq!(s.clean_broker_data(&clean(Some(CLUSTER), GROUP, Some("1;2;3"), false), &dead).code(), 0);
    let r5 = s.clean_broker_data(&clean(Some(CLUSTER), "broker12", Some("1;2;3"), true), &dead);
    assert_eq!(r5.code(), Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert_eq!(r5.remark().as_deref(), Some("Broker broker12 is not existed,clean broker data failure."));
    let has_cluster = |cluster: &str, _: &str, _: BrokerId| !cluster.is_empty();
    let r6 = s.clean_broker_data(&clean(None, "broker12", Some("1;2;3"), true), &has_cluster);
    assert_eq!(r6.code(), Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert_eq!(s.clean_broker_data(&clean(None, GROUP, Some("1;2;3"), true), &dead).code(), 0);
}

#[test]
fn serialize_round_trip() {
    // Java testSerialize: a snapshot restores the same tables (ours: serde, JSON here).
    let s = mock_meta_data();
    let bytes = serde_json::to_vec(&s).expect("serialize");
    let back: ReplicasInfo = serde_json::from_slice(&bytes).expect("deserialize");
    assert_eq!(back, s);
}
