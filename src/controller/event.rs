//! The replicated events (Java `impl/event/*Event`): what the leader appends to the log after validating a request,
//! and what every controller node applies, in log order, to its `ReplicasInfo`. Requests are never replicated —
//! only these — so a node replaying the log needs no liveness, no clock and no configuration.
//!
//! Sets are `BTreeSet`s so an event serializes to the same bytes on every node.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A broker's id inside its group, as the controller assigns it (Java `Long`; 1 is the first, 0 never: on the
/// name server 0 means master).
pub(crate) type BrokerId = i64;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Event {
    /// Java `AlterSyncStateSetEvent`: the group's SyncStateSet becomes `new_sync_state_set` (epoch + 1).
    AlterSyncStateSet { broker_name: String, new_sync_state_set: BTreeSet<BrokerId> },
    /// Java `ApplyBrokerIdEvent`: `new_broker_id` is taken by the broker that sent `register_check_code`
    /// (`"ip:port;timestamp"`); the first id of an unknown group creates the group.
    ApplyBrokerId {
        cluster_name: String,
        broker_name: String,
        broker_address: String,
        new_broker_id: BrokerId,
        register_check_code: String,
    },
    /// Java `ElectMasterEvent`: `Some(id)` — `id` is master (master epoch + 1) and alone in the SyncStateSet
    /// (epoch + 1); `None` (Java `newMasterElected = false`) — the master is gone and nobody replaced it (master
    /// epoch + 1, SyncStateSet kept so the old in-sync replicas stay the only candidates).
    ElectMaster { broker_name: String, new_master: Option<BrokerId> },
    /// Java `CleanBrokerDataEvent`: forget these ids, or the whole group when the set is empty (Java: null or
    /// empty).
    CleanBrokerData { broker_name: String, broker_ids_to_clean: BTreeSet<BrokerId> },
    /// Java `UpdateBrokerAddressEvent`: a registered id came back from another address.
    UpdateBrokerAddress { cluster_name: String, broker_name: String, broker_address: String, broker_id: BrokerId },
}

impl Event {}
