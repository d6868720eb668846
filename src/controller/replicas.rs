//! `ReplicasInfo`, the controller's replicated state machine (Java `ReplicasInfoManager`'s two tables), and
//! `apply`, the one way it changes. Every node applies the same events in the same order, so `apply` must depend on
//! nothing but the state and the event: no liveness, no clock, no configuration, no hash-order iteration.
//!
//! Java keeps two tables per broker group — the replicas (ids, addresses) and the sync state (master, epochs,
//! SyncStateSet) — and some events remove one without the other; a group counts as registered only when both exist
//! (`is_registered`, Java `isContainsBroker`). We keep the two tables so every answer stays Java's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::event::{BrokerId, Event};

/// Java `MixAll.FIRST_BROKER_CONTROLLER_ID`: the id a new group starts from.
pub(crate) const FIRST_BROKER_CONTROLLER_ID: BrokerId = 1;

/// One registered replica (Java `Pair<address, registerCheckCode>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReplicaAddress {
    pub address: String,
    /// `"ip:port;timestamp"` from the broker's first `APPLY_BROKER_ID`: lets the same broker re-apply its own id.
    pub register_check_code: String,
}

/// Java `BrokerReplicaInfo`: the replicas of one broker group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BrokerReplicaInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Java `nextAssignBrokerId`: counts additions (not max id + 1), and never goes back when an id is cleaned.
    pub next_assign_broker_id: BrokerId,
    pub replicas: BTreeMap<BrokerId, ReplicaAddress>,
}

impl BrokerReplicaInfo {
    fn new(cluster_name: &str, broker_name: &str) -> Self {
        BrokerReplicaInfo {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            next_assign_broker_id: FIRST_BROKER_CONTROLLER_ID,
            replicas: BTreeMap::new(),
        }
    }

    pub(crate) fn address(&self, id: Option<BrokerId>) -> Option<&str> {
        id.and_then(|id| self.replicas.get(&id)).map(|r| r.address.as_str())
    }

    /// id → address (Java `getBrokerIdTable`).
    pub(crate) fn addresses(&self) -> BTreeMap<BrokerId, String> {
        self.replicas.iter().map(|(id, r)| (*id, r.address.clone())).collect()
    }

    fn add(&mut self, id: BrokerId, address: &str, register_check_code: &str) {
        let replica =
            ReplicaAddress { address: address.to_owned(), register_check_code: register_check_code.to_owned() };
        self.replicas.insert(id, replica);
        self.next_assign_broker_id += 1;
    }
}

/// Java `SyncStateInfo`: who is master and who is in sync, with the two fencing epochs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SyncStateInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Raised by every `ElectMaster` event, elected or not; 0 means no election ever happened.
    pub master_epoch: i32,
    /// Raised by every change of the set (`AlterSyncStateSet`, an elected `ElectMaster`).
    pub sync_state_set_epoch: i32,
    pub sync_state_set: BTreeSet<BrokerId>,
    pub master_broker_id: Option<BrokerId>,
}

impl SyncStateInfo {
    fn new(cluster_name: &str, broker_name: &str) -> Self {
        SyncStateInfo {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            master_epoch: 0,
            sync_state_set_epoch: 0,
            sync_state_set: BTreeSet::new(),
            master_broker_id: None,
        }
    }

    /// Java `isFirstTimeForElect`: the first election takes the asker as master without a policy.
    pub(crate) fn is_first_time_for_elect(&self) -> bool {
        self.master_epoch == 0
    }

    fn set_master(&mut self, master: Option<BrokerId>) {
        // Deliberately broken build (docs/reliability.md, "Broken builds the checker caught"): a new master after
        // the first keeps the epoch of the one it replaces.
        #[cfg(feature = "fault-epoch-reuse")]
        let reuse = self.master_epoch > 0 && master.is_some() && self.master_broker_id != master;
        #[cfg(not(feature = "fault-epoch-reuse"))]
        let reuse = false;
        self.master_broker_id = master;
        if !reuse {
            self.master_epoch += 1;
        }
    }

    fn set_sync_state_set(&mut self, set: BTreeSet<BrokerId>) {
        self.sync_state_set = set;
        self.sync_state_set_epoch += 1;
    }
}

/// The whole replicated state: what a snapshot holds, and what the log's events rebuild.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReplicasInfo {
    /// Java `replicaInfoTable`, by brokerName.
    replicas: BTreeMap<String, BrokerReplicaInfo>,
    /// Java `syncStateSetInfoTable`, by brokerName.
    sync_states: BTreeMap<String, SyncStateInfo>,
}

impl ReplicasInfo {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Both tables hold the group (Java `isContainsBroker`); most requests ask this first.
    pub(crate) fn is_registered(&self, broker_name: &str) -> bool {
        self.replicas.contains_key(broker_name) && self.sync_states.contains_key(broker_name)
    }

    /// The group's replicas and sync state, only when it is registered.
    pub(crate) fn group(&self, broker_name: &str) -> Option<(&BrokerReplicaInfo, &SyncStateInfo)> {
        Some((self.replicas.get(broker_name)?, self.sync_states.get(broker_name)?))
    }

    /// The group's replicas, even when its sync state is gone (Java reads `replicaInfoTable` alone for ids).
    pub(crate) fn replicas(&self, broker_name: &str) -> Option<&BrokerReplicaInfo> {
        self.replicas.get(broker_name)
    }

    /// The group's sync state, even when its replicas are gone.
    pub(crate) fn sync_state(&self, broker_name: &str) -> Option<&SyncStateInfo> {
        self.sync_states.get(broker_name)
    }

    pub(crate) fn sync_states(&self) -> impl Iterator<Item = &SyncStateInfo> {
        self.sync_states.values()
    }

    pub(crate) fn broker_names(&self) -> impl Iterator<Item = &str> {
        self.replicas
            .keys()
            .chain(self.sync_states.keys().filter(|n| !self.replicas.contains_key(*n)))
            .map(|n| n.as_str())
    }

    /// Apply one replicated event (Java `applyEvent`). Deterministic and total: an event naming an unknown group
    /// changes nothing, as in Java, so a node never stops on a log entry.
    pub(crate) fn apply(&mut self, event: &Event) {
        match event {
            Event::AlterSyncStateSet { broker_name, new_sync_state_set } => {
                if self.is_registered(broker_name) {
                    if let Some(sync) = self.sync_states.get_mut(broker_name) {
                        sync.set_sync_state_set(new_sync_state_set.clone());
                    }
                }
            }
            Event::ApplyBrokerId { cluster_name, broker_name, broker_address, new_broker_id, register_check_code } => {
                if self.is_registered(broker_name) {
                    let group = self.replicas.get_mut(broker_name).expect("registered");
                    if !group.replicas.contains_key(new_broker_id) {
                        group.add(*new_broker_id, broker_address, register_check_code);
                    }
                } else {
                    // Java starts the group afresh here, replacing a replicas table left without sync state.
                    let mut group = BrokerReplicaInfo::new(cluster_name, broker_name);
                    group.add(*new_broker_id, broker_address, register_check_code);
                    self.replicas.insert(broker_name.clone(), group);
                    self.sync_states.insert(broker_name.clone(), SyncStateInfo::new(cluster_name, broker_name));
                }
            }
            Event::ElectMaster { broker_name, new_master } => {
                if !self.is_registered(broker_name) {
                    return;
                }
                let sync = self.sync_states.get_mut(broker_name).expect("registered");
                sync.set_master(*new_master);
                if let Some(master) = new_master {
                    sync.set_sync_state_set(BTreeSet::from([*master]));
                }
            }
            Event::CleanBrokerData { broker_name, broker_ids_to_clean } => {
                self.clean(broker_name, broker_ids_to_clean);
            }
            Event::UpdateBrokerAddress { broker_name, broker_address, broker_id, .. } => {
                // Java reads the replicas table alone here (and would throw on an unknown group; we ignore it).
                let replica = self.replicas.get_mut(broker_name).and_then(|g| g.replicas.get_mut(broker_id));
                if let Some(replica) = replica {
                    replica.address = broker_address.clone();
                }
            }
        }
    }

    fn clean(&mut self, broker_name: &str, ids: &BTreeSet<BrokerId>) {
        if ids.is_empty() {
            self.replicas.remove(broker_name);
            self.sync_states.remove(broker_name);
            return;
        }
        if !self.is_registered(broker_name) {
            return;
        }
        let group = self.replicas.get_mut(broker_name).expect("registered");
        let sync = self.sync_states.get_mut(broker_name).expect("registered");
        for id in ids {
            group.replicas.remove(id);
            // Java leaves the master id in place even when it is cleaned; the next election replaces it.
            sync.sync_state_set.remove(id);
        }
        if group.replicas.is_empty() {
            self.replicas.remove(broker_name);
        }
        // An empty SyncStateSet drops the sync state even if replicas remain (a group never elected, say): the
        // group then reads as unregistered until an `ApplyBrokerId` starts it again. Java does the same.
        if sync.sync_state_set.is_empty() {
            self.sync_states.remove(broker_name);
        }
    }
}
