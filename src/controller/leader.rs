//! What the leader runs for each request (Java `ReplicasInfoManager`'s request methods): check it against the
//! state and the local liveness, in Java's order and with Java's codes, and say which events to replicate. Nothing
//! here mutates: the events change the state only when `ReplicasInfo::apply` runs them from the log, on the leader
//! as on every other node.

use std::collections::BTreeSet;

use super::elect::{elect, Group};
use super::error::ControllerError as E;
use super::event::{BrokerId, Event};
use super::liveness::Liveness;
use super::replicas::{ReplicasInfo, FIRST_BROKER_CONTROLLER_ID};
use super::request::*;

impl ReplicasInfo {
    /// 1001 CONTROLLER_ALTER_SYNC_STATE_SET.
    pub(crate) fn alter_sync_state_set(
        &self,
        req: &AlterSyncStateSet,
        live: &impl Liveness,
    ) -> ControllerResult<AlterSyncStateSetResponse> {
        let refuse = |e| ControllerResult::refused(AlterSyncStateSetResponse::default(), e);
        let Some((replicas, sync)) = self.group(&req.broker_name) else {
            return refuse(E::AlterUnknownGroup);
        };
        let proposed = &req.new_sync_state_set;
        if proposed.sync_state_set == sync.sync_state_set {
            return refuse(E::SyncStateSetUnchanged);
        }
        if sync.master_broker_id != Some(req.master_broker_id) {
            return refuse(E::NotMaster { current: sync.master_broker_id, requested: req.master_broker_id });
        }
        if req.master_epoch != sync.master_epoch {
            return refuse(E::FencedMasterEpoch { current: sync.master_epoch, requested: req.master_epoch });
        }
        if proposed.sync_state_set_epoch != sync.sync_state_set_epoch {
            let (current, requested) = (sync.sync_state_set_epoch, proposed.sync_state_set_epoch);
            return refuse(E::FencedSyncStateSetEpoch { current, requested });
        }
        for id in &proposed.sync_state_set {
            if !replicas.replicas.contains_key(id) {
                return refuse(E::ReplicaNotRegistered(*id));
            }
            if !live.is_alive(&replicas.cluster_name, &replicas.broker_name, *id) {
                return refuse(E::ReplicaNotAlive(*id));
            }
        }
        if !sync.master_broker_id.is_some_and(|m| proposed.sync_state_set.contains(&m)) {
            return refuse(E::MasterLeftOut(sync.master_broker_id));
        }
        let epoch = sync.sync_state_set_epoch + 1;
        let set = proposed.sync_state_set.clone();
        let response = AlterSyncStateSetResponse {
            new_sync_state_set_epoch: epoch,
            body: Some(SyncStateSet { sync_state_set: set.clone(), sync_state_set_epoch: epoch }),
        };
        let event = Event::AlterSyncStateSet { broker_name: req.broker_name.clone(), new_sync_state_set: set };
        ControllerResult::ok(response, vec![event])
    }

    /// 1002 CONTROLLER_ELECT_MASTER (also what the controller itself sends when a master dies, with `ANY_BROKER`).
    pub(crate) fn elect_master(
        &self,
        req: &ElectMaster,
        live: &impl Liveness,
        enable_elect_unclean_master: bool,
    ) -> ControllerResult<ElectMasterResponse> {
        let Some((replicas, sync)) = self.group(&req.broker_name) else {
            return ControllerResult::refused(ElectMasterResponse::default(), E::ElectUnknownGroup);
        };
        let old_master = sync.master_broker_id;
        // A group's first election takes the asker, unchecked: nobody has data yet, so anyone will do.
        let mut new_master = sync.is_first_time_for_elect().then_some(req.broker_id);
        if new_master.is_none_or(|m| m == ANY_BROKER) {
            let designated = req.designate_elect.then_some(req.broker_id);
            #[cfg(not(feature = "fault-elect-outside-isr"))]
            let all: Option<BTreeSet<BrokerId>> =
                enable_elect_unclean_master.then(|| replicas.replicas.keys().copied().collect());
            // Deliberately broken build (docs/reliability.md, "Broken builds the checker caught"): every replica is
            // a candidate when the SyncStateSet has nobody alive, as if unclean election were always on.
            #[cfg(feature = "fault-elect-outside-isr")]
            let all: Option<BTreeSet<BrokerId>> = {
                let _ = enable_elect_unclean_master;
                Some(replicas.replicas.keys().copied().collect())
            };
            let group = Group { cluster_name: &replicas.cluster_name, broker_name: &replicas.broker_name };
            new_master = elect(live, group, &sync.sync_state_set, all.as_ref(), old_master, designated);
        }
        match new_master {
            Some(master) if Some(master) == old_master => {
                let response = ElectMasterResponse {
                    master_broker_id: Some(master),
                    master_address: replicas.address(Some(master)).map(str::to_owned),
                    master_epoch: Some(sync.master_epoch),
                    sync_state_set_epoch: Some(sync.sync_state_set_epoch),
                    body: Some(ElectMasterBody {
                        broker_member_group: None,
                        sync_state_set: sync.sync_state_set.clone(),
                    }),
                };
                let error = E::MasterStillExist { master, broker_name: replicas.broker_name.clone() };
                ControllerResult::refused(response, error)
            }
            Some(master) => {
                let member_group = BrokerMemberGroup {
                    cluster: replicas.cluster_name.clone(),
                    broker_name: replicas.broker_name.clone(),
                    broker_addrs: replicas.addresses(),
                };
                let response = ElectMasterResponse {
                    master_broker_id: Some(master),
                    master_address: replicas.address(Some(master)).map(str::to_owned),
                    master_epoch: Some(sync.master_epoch + 1),
                    sync_state_set_epoch: Some(sync.sync_state_set_epoch + 1),
                    body: Some(ElectMasterBody {
                        broker_member_group: Some(member_group),
                        sync_state_set: BTreeSet::from([master]),
                    }),
                };
                let event = Event::ElectMaster { broker_name: req.broker_name.clone(), new_master: Some(master) };
                ControllerResult::ok(response, vec![event])
            }
            // Controller-triggered: record that the master is gone, so brokers stop following it.
            None if req.broker_id == ANY_BROKER => ControllerResult {
                response: ElectMasterResponse::default(),
                events: vec![Event::ElectMaster { broker_name: req.broker_name.clone(), new_master: None }],
                error: Some(E::MasterNotAvailable),
            },
            None => ControllerResult::refused(ElectMasterResponse::default(), E::ElectMasterFailed),
        }
    }

    /// 1012 CONTROLLER_GET_NEXT_BROKER_ID (a read: no events).
    pub(crate) fn get_next_broker_id(&self, req: &GetNextBrokerId) -> ControllerResult<NextBrokerIdResponse> {
        // Java reads the replicas table alone: a group whose sync state was cleaned still counts its ids.
        let next = self.replicas(&req.broker_name).map_or(FIRST_BROKER_CONTROLLER_ID, |r| r.next_assign_broker_id);
        let response = NextBrokerIdResponse {
            cluster_name: req.cluster_name.clone(),
            broker_name: req.broker_name.clone(),
            next_broker_id: next,
        };
        ControllerResult::ok(response, Vec::new())
    }

    /// 1013 CONTROLLER_APPLY_BROKER_ID.
    pub(crate) fn apply_broker_id(&self, req: &ApplyBrokerId) -> ControllerResult<ApplyBrokerIdResponse> {
        let response =
            ApplyBrokerIdResponse { cluster_name: req.cluster_name.clone(), broker_name: req.broker_name.clone() };
        let id = req.applied_broker_id;
        let event = Event::ApplyBrokerId {
            cluster_name: req.cluster_name.clone(),
            broker_name: req.broker_name.clone(),
            broker_address: java_split(&req.register_check_code).first().copied().unwrap_or_default().to_owned(),
            new_broker_id: id,
            register_check_code: req.register_check_code.clone(),
        };
        let Some(replicas) = self.replicas(&req.broker_name) else {
            if id == FIRST_BROKER_CONTROLLER_ID {
                return ControllerResult::ok(response, vec![event]);
            }
            return ControllerResult::refused(
                response,
                E::FirstIdNotOne { broker_name: req.broker_name.clone(), broker_id: id },
            );
        };
        // Free, or already this broker's (same check code): a broker retrying after a crash gets its id again.
        match replicas.replicas.get(&id) {
            Some(taken) if taken.register_check_code != req.register_check_code => ControllerResult::refused(
                response,
                E::BrokerIdTaken { broker_id: id, broker_name: req.broker_name.clone() },
            ),
            _ => ControllerResult::ok(response, vec![event]),
        }
    }

    /// 1003 CONTROLLER_REGISTER_BROKER.
    pub(crate) fn register_broker(
        &self,
        req: &RegisterBroker,
        live: &impl Liveness,
    ) -> ControllerResult<RegisterBrokerResponse> {
        let mut response = RegisterBrokerResponse {
            cluster_name: req.cluster_name.clone(),
            broker_name: req.broker_name.clone(),
            ..Default::default()
        };
        let Some((replicas, sync)) = self.group(&req.broker_name) else {
            return ControllerResult::refused(
                response,
                E::RegisterUnknownGroup { broker_name: req.broker_name.clone() },
            );
        };
        let Some(known) = replicas.replicas.get(&req.broker_id) else {
            let error = E::RegisterUnknownId { broker_id: req.broker_id, broker_name: req.broker_name.clone() };
            return ControllerResult::refused(response, error);
        };
        // Java asks liveness with the request's cluster name, not the stored one.
        if let Some(master) = sync.master_broker_id.filter(|m| live.is_alive(&req.cluster_name, &req.broker_name, *m)) {
            response.master_broker_id = Some(master);
            response.master_address = replicas.address(Some(master)).map(str::to_owned);
            response.master_epoch = Some(sync.master_epoch);
            response.sync_state_set_epoch = Some(sync.sync_state_set_epoch);
        }
        response.body = Some(SyncStateSet {
            sync_state_set: sync.sync_state_set.clone(),
            sync_state_set_epoch: sync.sync_state_set_epoch,
        });
        let mut events = Vec::new();
        if known.address != req.broker_address {
            events.push(Event::UpdateBrokerAddress {
                cluster_name: req.cluster_name.clone(),
                broker_name: req.broker_name.clone(),
                broker_address: req.broker_address.clone(),
                broker_id: req.broker_id,
            });
        }
        ControllerResult::ok(response, events)
    }

    /// 1004 CONTROLLER_GET_REPLICA_INFO.
    pub(crate) fn get_replica_info(&self, broker_name: &str) -> ControllerResult<ReplicaInfoResponse> {
        let Some((replicas, sync)) = self.group(broker_name) else {
            return ControllerResult::refused(ReplicaInfoResponse::default(), E::MetadataNotExist);
        };
        let response = ReplicaInfoResponse {
            master_broker_id: sync.master_broker_id,
            master_address: replicas.address(sync.master_broker_id).map(str::to_owned),
            master_epoch: Some(sync.master_epoch),
            body: Some(SyncStateSet {
                sync_state_set: sync.sync_state_set.clone(),
                sync_state_set_epoch: sync.sync_state_set_epoch,
            }),
        };
        ControllerResult::ok(response, Vec::new())
    }

    /// 1006 CONTROLLER_GET_SYNC_STATE_DATA: every known group among `broker_names`, replicas split by in-sync.
    pub(crate) fn get_sync_state_data(
        &self,
        broker_names: &[String],
        live: &impl Liveness,
    ) -> ControllerResult<BrokerReplicasInfo> {
        let mut out = BrokerReplicasInfo::default();
        for name in broker_names {
            let Some((replicas, sync)) = self.group(name) else { continue };
            let (mut in_sync, mut not_in_sync) = (Vec::new(), Vec::new());
            for (id, replica) in &replicas.replicas {
                let identity = ReplicaIdentity {
                    broker_name: name.clone(),
                    broker_id: *id,
                    broker_address: replica.address.clone(),
                    alive: live.is_alive(&replicas.cluster_name, name, *id),
                };
                if sync.sync_state_set.contains(id) { &mut in_sync } else { &mut not_in_sync }.push(identity);
            }
            let group = GroupReplicas {
                master_broker_id: sync.master_broker_id,
                master_address: replicas.address(sync.master_broker_id).map(str::to_owned),
                master_epoch: sync.master_epoch,
                sync_state_set_epoch: sync.sync_state_set_epoch,
                in_sync_replicas: in_sync,
                not_in_sync_replicas: not_in_sync,
            };
            out.replicas_info_table.insert(name.clone(), group);
        }
        ControllerResult::ok(out, Vec::new())
    }

    /// 1011 CLEAN_BROKER_DATA.
    pub(crate) fn clean_broker_data(&self, req: &CleanBrokerData, live: &impl Liveness) -> ControllerResult<()> {
        let name = &req.broker_name;
        let ids_text = req.broker_controller_ids_to_clean.as_deref().filter(|s| !s.trim().is_empty());
        let mut ids = BTreeSet::new();
        if !req.is_clean_living_broker {
            let has_master = self.sync_state(name).is_some_and(|s| s.master_broker_id.is_some());
            let Some(text) = ids_text else {
                if has_master {
                    return ControllerResult::refused((), E::CleanGroupWithMaster { broker_name: name.clone() });
                }
                return self.clean_event(name, ids);
            };
            for part in java_split(text) {
                match part.parse::<BrokerId>() {
                    Ok(id) => ids.insert(id),
                    Err(_) => {
                        let detail = format!("java.lang.NumberFormatException: For input string: \"{part}\"");
                        return ControllerResult::refused((), E::CleanIdsUnparsable { detail });
                    }
                };
            }
            let cluster = req.cluster_name.as_deref().unwrap_or_default();
            if let Some(alive) = ids.iter().find(|id| live.is_alive(cluster, name, **id)) {
                return ControllerResult::refused(
                    (),
                    E::CleanLivingBroker { broker_name: name.clone(), broker_id: *alive },
                );
            }
        }
        self.clean_event(name, ids)
    }

    /// The clean event once the checks passed; an empty id set forgets the whole group.
    fn clean_event(&self, broker_name: &str, ids: BTreeSet<BrokerId>) -> ControllerResult<()> {
        if !self.is_registered(broker_name) {
            return ControllerResult::refused((), E::CleanUnknownGroup { broker_name: broker_name.to_owned() });
        }
        ControllerResult::ok(
            (),
            vec![Event::CleanBrokerData { broker_name: broker_name.to_owned(), broker_ids_to_clean: ids }],
        )
    }

    /// Whether a broker the live table just lost was its group's master (Java `onBrokerInactive`): only then does
    /// the leader start an election (`elect_master` with `ANY_BROKER`).
    pub(crate) fn lost_master(&self, broker_name: &str, broker_id: BrokerId) -> bool {
        self.group(broker_name).is_some_and(|(_, sync)| sync.master_broker_id == Some(broker_id))
    }

    /// The groups whose master is gone while another replica is alive (Java `scanNeedReelectBrokerSets`): the
    /// leader re-runs their election every `scanInactiveMasterInterval`, so a lost trigger is not lost for good.
    /// "Gone" is `Liveness::is_gone`, so a new leader's live table can spare a master it has not heard from yet
    /// (`HeartbeatTable::at_leading_since`); Java takes every master that is not alive.
    pub(crate) fn scan_need_reelect(&self, live: &impl Liveness) -> Vec<String> {
        self.sync_states()
            .filter(|sync| {
                let Some(master) = sync.master_broker_id else { return false };
                let (cluster, name) = (&sync.cluster_name, &sync.broker_name);
                // Java would throw on a group whose replicas were cleaned; such a group has nobody to elect.
                let ids =
                    self.replicas(name).map(|r| r.replicas.keys().copied().collect::<Vec<_>>()).unwrap_or_default();
                live.is_gone(cluster, name, master) && ids.iter().any(|id| live.is_alive(cluster, name, *id))
            })
            .map(|sync| sync.broker_name.clone())
            .collect()
    }
}

/// Java `String.split(";")`: no separator gives the whole string; trailing empty parts are dropped.
fn java_split(s: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = s.split(';').collect();
    if parts.len() > 1 {
        while parts.last() == Some(&"") {
            parts.pop();
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::java_split;

    #[test]
    fn split_drops_trailing_empties_like_java() {
        assert_eq!(java_split("1;2;"), vec!["1", "2"]);
        assert_eq!(java_split("1;;2"), vec!["1", "", "2"]);
        assert_eq!(java_split(";"), Vec::<&str>::new());
        assert_eq!(java_split(""), vec![""]);
        assert_eq!(java_split("127.0.0.1:10911;1700000000000"), vec!["127.0.0.1:10911", "1700000000000"]);
    }
}
