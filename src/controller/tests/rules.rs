//! Rules Java's tests do not cover, each checked against the line of `ReplicasInfoManager` it comes from (named in
//! the test), with the values Java's code gives.

use std::collections::BTreeSet;

use super::super::event::{BrokerId, Event};
use super::super::replicas::ReplicasInfo;
use super::super::request::*;
use super::{all_alive, apply, Fixed, CLUSTER, GROUP, IP};
use crate::protocol::code::ControllerResponseCode as Code;

fn apply_id(state: &ReplicasInfo, id: BrokerId, code: &str) -> ControllerResult<ApplyBrokerIdResponse> {
    state.apply_broker_id(&ApplyBrokerId {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        applied_broker_id: id,
        register_check_code: code.into(),
    })
}

fn elect(state: &ReplicasInfo, id: BrokerId, live: &Fixed, unclean: bool) -> ControllerResult<ElectMasterResponse> {
    let req =
        ElectMaster { cluster_name: CLUSTER.into(), broker_name: GROUP.into(), broker_id: id, designate_elect: false };
    state.elect_master(&req, live, unclean)
}

fn alive(ids: &[BrokerId]) -> Fixed {
    Fixed { alive: ids.iter().copied().collect(), ..Fixed::default() }
}

/// Brokers 1 and 2 registered, 1 master (epoch 1), set {1}.
fn two_brokers() -> ReplicasInfo {
    let mut s = ReplicasInfo::new();
    let a = apply_id(&s, 1, &format!("{};1", IP[0]));
    apply(&mut s, &a);
    let b = apply_id(&s, 2, &format!("{};2", IP[1]));
    apply(&mut s, &b);
    let e = elect(&s, 1, &alive(&[1, 2]), false);
    apply(&mut s, &e);
    s
}

#[test]
fn apply_broker_id_first_must_be_one_then_taken_ids_are_refused() {
    // applyBrokerId: an unknown group accepts only FIRST_BROKER_CONTROLLER_ID; a held id only from its holder.
    let s = ReplicasInfo::new();
    let r = apply_id(&s, 2, "a:1;1");
    assert_eq!(r.code(), Code::CONTROLLER_BROKER_ID_INVALID);
    assert!(r.events.is_empty());
    let s = two_brokers();
    let taken = apply_id(&s, 2, "other:1;9");
    assert_eq!(taken.code(), Code::CONTROLLER_BROKER_ID_INVALID);
    assert_eq!(taken.remark().as_deref(), Some("Fail to apply brokerId: 2 in broker-set: broker-set-a"));
    // The same broker retrying with its own check code gets its id again.
    assert_eq!(apply_id(&s, 2, &format!("{};2", IP[1])).code(), 0);
    // The address is what precedes the first ';'.
    let free = apply_id(&s, 7, "10.0.0.7:10911;123");
    assert!(
        matches!(&free.events[..], [Event::ApplyBrokerId { broker_address, .. }] if broker_address == "10.0.0.7:10911")
    );
}

#[test]
fn next_broker_id_counts_additions() {
    // BrokerReplicaInfo.addBroker increments nextAssignBrokerId whatever id was added.
    let mut s = two_brokers();
    let r = apply_id(&s, 9, "x:1;9");
    apply(&mut s, &r);
    let next = s.get_next_broker_id(&GetNextBrokerId { cluster_name: CLUSTER.into(), broker_name: GROUP.into() });
    assert_eq!(next.response.next_broker_id, 4);
}

#[test]
fn register_reports_the_master_only_while_alive_and_updates_a_moved_address() {
    // registerBroker: master fields only if the master is alive; a new address becomes UpdateBrokerAddressEvent.
    let mut s = two_brokers();
    let req = RegisterBroker {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        broker_id: 2,
        broker_address: "moved:1".into(),
    };
    let r = s.register_broker(&req, &alive(&[2]));
    assert_eq!(r.code(), 0);
    assert_eq!(r.response.master_broker_id, None);
    assert_eq!(r.response.body.as_ref().map(|b| b.sync_state_set_epoch), Some(1));
    assert_eq!(r.events.len(), 1);
    apply(&mut s, &r);
    assert_eq!(s.replicas(GROUP).and_then(|g| g.address(Some(2))), Some("moved:1"));
    let again = s.register_broker(&req, &alive(&[1, 2]));
    assert!(again.events.is_empty());
    assert_eq!(again.response.master_broker_id, Some(1));
    let unknown = RegisterBroker { broker_id: 5, ..req };
    assert_eq!(s.register_broker(&unknown, &all_alive).code(), Code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED);
}

#[test]
fn unknown_groups_get_javas_codes() {
    let s = ReplicasInfo::new();
    assert_eq!(s.get_replica_info("nope").code(), Code::CONTROLLER_BROKER_METADATA_NOT_EXIST);
    assert_eq!(elect(&s, 1, &alive(&[1]), false).code(), Code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED);
    let alter = AlterSyncStateSet {
        broker_name: GROUP.into(),
        master_broker_id: 1,
        master_epoch: 1,
        new_sync_state_set: SyncStateSet { sync_state_set: BTreeSet::from([1]), sync_state_set_epoch: 1 },
    };
    assert_eq!(s.alter_sync_state_set(&alter, &all_alive).code(), Code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED);
    assert!(s.get_sync_state_data(&["nope".into()], &all_alive).response.replicas_info_table.is_empty());
}

#[test]
fn alter_sync_state_set_checks_in_javas_order() {
    // alterSyncStateSet: unchanged, master, master epoch, set epoch, each replica (exists, alive), master kept.
    let s = two_brokers();
    let req = |master: BrokerId, master_epoch: i32, set: &[BrokerId], epoch: i32| AlterSyncStateSet {
        broker_name: GROUP.into(),
        master_broker_id: master,
        master_epoch,
        new_sync_state_set: SyncStateSet { sync_state_set: set.iter().copied().collect(), sync_state_set_epoch: epoch },
    };
    let code = |r: AlterSyncStateSet, live: &Fixed| s.alter_sync_state_set(&r, live).code();
    let both = alive(&[1, 2]);
    assert_eq!(code(req(2, 0, &[1], 0), &both), Code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED);
    assert_eq!(code(req(2, 0, &[1, 2], 0), &both), Code::CONTROLLER_INVALID_MASTER);
    assert_eq!(code(req(1, 0, &[1, 2], 0), &both), Code::CONTROLLER_FENCED_MASTER_EPOCH);
    assert_eq!(code(req(1, 1, &[1, 2], 0), &both), Code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH);
    assert_eq!(code(req(1, 1, &[1, 3], 1), &both), Code::CONTROLLER_INVALID_REPLICAS);
    assert_eq!(code(req(1, 1, &[1, 2], 1), &alive(&[1])), Code::CONTROLLER_BROKER_NOT_ALIVE);
    assert_eq!(code(req(1, 1, &[2], 1), &both), Code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED);
    let ok = s.alter_sync_state_set(&req(1, 1, &[1, 2], 1), &both);
    assert_eq!((ok.code(), ok.response.new_sync_state_set_epoch), (0, 2));
}

#[test]
fn unclean_election_falls_back_to_any_alive_replica() {
    // electMaster passes all replicas to the policy only with enableElectUncleanMaster.
    let s = two_brokers();
    assert_eq!(elect(&s, -1, &alive(&[2]), false).code(), Code::CONTROLLER_MASTER_NOT_AVAILABLE);
    let r = elect(&s, -1, &alive(&[2]), true);
    assert_eq!((r.code(), r.response.master_broker_id, r.response.master_epoch), (0, Some(2), Some(2)));
    let group = r.response.body.and_then(|b| b.broker_member_group).expect("member group");
    assert_eq!(group.broker_addrs.len(), 2);
}

#[test]
fn broker_triggered_election_that_finds_nobody_replicates_nothing() {
    // electMaster: only a controller-triggered (-1) failure appends ElectMasterEvent(false).
    let s = two_brokers();
    let r = elect(&s, 2, &alive(&[2]), false);
    assert_eq!(r.code(), Code::CONTROLLER_ELECT_MASTER_FAILED);
    assert!(r.events.is_empty());
}

#[test]
fn cleaning_a_living_broker_forgets_the_whole_group() {
    // cleanBrokerData: with isCleanLivingBroker the ids are never parsed, so the event has none: the whole group.
    let mut s = two_brokers();
    let req = CleanBrokerData {
        cluster_name: Some(CLUSTER.into()),
        broker_name: GROUP.into(),
        broker_controller_ids_to_clean: Some("2".into()),
        is_clean_living_broker: true,
    };
    let r = s.clean_broker_data(&req, &all_alive);
    apply(&mut s, &r);
    assert!(!s.is_registered(GROUP) && s.replicas(GROUP).is_none());
}

#[test]
fn cleaning_ids_keeps_the_rest_and_rejects_bad_text() {
    let mut s = two_brokers();
    let req = |ids: &str| CleanBrokerData {
        cluster_name: Some(CLUSTER.into()),
        broker_name: GROUP.into(),
        broker_controller_ids_to_clean: Some(ids.into()),
        is_clean_living_broker: false,
    };
    let bad = s.clean_broker_data(&req("1;x"), &alive(&[]));
    assert_eq!(bad.code(), Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert_eq!(
        bad.remark().as_deref(),
        Some("Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \"x\"")
    );
    let living = s.clean_broker_data(&req("2"), &alive(&[2]));
    assert_eq!(living.remark().as_deref(), Some("Broker [broker-set-a,  2] is still alive, clean up failure"));
    let r = s.clean_broker_data(&req("2"), &alive(&[1]));
    apply(&mut s, &r);
    assert_eq!(s.replicas(GROUP).map(|g| g.replicas.len()), Some(1));
    assert!(s.is_registered(GROUP));
}
