//! The controller's requests and answers as plain values (Java's request/response headers and bodies, decoded), and
//! `ControllerResult`, what the leader's validation returns. The wire layer maps them to and from frames; a `None`
//! here is a field Java leaves null (and so omits from the header).

use std::collections::{BTreeMap, BTreeSet};

use super::error::ControllerError;
use super::event::{BrokerId, Event};

/// Java `ControllerResult`: an answer, the events to replicate before answering, and the refusal if any. Not a
/// `Result`, because Java answers some refusals with data (2011 names the living master) and some with events
/// (2004 records that the master is gone): the three travel together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ControllerResult<T> {
    pub response: T,
    pub events: Vec<Event>,
    pub error: Option<ControllerError>,
}

impl<T> ControllerResult<T> {
    pub(crate) fn ok(response: T, events: Vec<Event>) -> Self {
        ControllerResult { response, events, error: None }
    }

    pub(crate) fn refused(response: T, error: ControllerError) -> Self {
        ControllerResult { response, events: Vec::new(), error: Some(error) }
    }

    /// The response code: 0 (SUCCESS) or the refusal's.
    pub(crate) fn code(&self) -> i32 {
        self.error.as_ref().map_or(crate::protocol::code::ResponseCode::SUCCESS, ControllerError::code)
    }

    pub(crate) fn remark(&self) -> Option<String> {
        self.error.as_ref().map(ControllerError::remark)
    }
}

/// Java body `SyncStateSet`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyncStateSet {
    pub sync_state_set: BTreeSet<BrokerId>,
    pub sync_state_set_epoch: i32,
}

/// 1001: the master proposes a new SyncStateSet, fenced by both epochs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AlterSyncStateSet {
    pub broker_name: String,
    pub master_broker_id: BrokerId,
    pub master_epoch: i32,
    /// The body: the proposed set and the epoch the master last saw.
    pub new_sync_state_set: SyncStateSet,
}

/// 1001's answer; Java's header field is an `int`, so a refusal carries 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AlterSyncStateSetResponse {
    pub new_sync_state_set_epoch: i32,
    pub body: Option<SyncStateSet>,
}

/// Java `ElectMasterRequestHeader.brokerId` when any replica may be elected (controller-triggered elections).
pub(crate) const ANY_BROKER: BrokerId = -1;

/// 1002.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ElectMaster {
    pub cluster_name: String,
    pub broker_name: String,
    /// The asker (a broker's first election makes it master), the designated id (`designate_elect`), or
    /// `ANY_BROKER`.
    pub broker_id: BrokerId,
    /// Set by mqadmin `electMaster`: elect `broker_id` or nobody.
    pub designate_elect: bool,
}

/// Java `BrokerMemberGroup`: the group's replicas, sent with a new master.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BrokerMemberGroup {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: BTreeMap<BrokerId, String>,
}

/// Java `ElectMasterResponseBody`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ElectMasterBody {
    pub broker_member_group: Option<BrokerMemberGroup>,
    pub sync_state_set: BTreeSet<BrokerId>,
}

/// 1002's answer (header fields are Java boxed types: null when not set).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ElectMasterResponse {
    pub master_broker_id: Option<BrokerId>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub sync_state_set_epoch: Option<i32>,
    pub body: Option<ElectMasterBody>,
}

/// 1003.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RegisterBroker {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: BrokerId,
    pub broker_address: String,
}

/// 1003's answer: the master only while it is alive.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegisterBrokerResponse {
    pub cluster_name: String,
    pub broker_name: String,
    pub master_broker_id: Option<BrokerId>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub sync_state_set_epoch: Option<i32>,
    pub body: Option<SyncStateSet>,
}

/// 1004's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplicaInfoResponse {
    pub master_broker_id: Option<BrokerId>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub body: Option<SyncStateSet>,
}

/// Java `BrokerReplicasInfo.ReplicaIdentity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplicaIdentity {
    pub broker_name: String,
    pub broker_id: BrokerId,
    pub broker_address: String,
    pub alive: bool,
}

/// Java `BrokerReplicasInfo.ReplicasInfo`: one group in 1006's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupReplicas {
    pub master_broker_id: Option<BrokerId>,
    pub master_address: Option<String>,
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
}

/// 1006's answer (Java `BrokerReplicasInfo`): unknown names are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BrokerReplicasInfo {
    pub replicas_info_table: BTreeMap<String, GroupReplicas>,
}

/// 1011.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CleanBrokerData {
    pub cluster_name: Option<String>,
    pub broker_name: String,
    /// `"1;2"`; blank means the whole group.
    pub broker_controller_ids_to_clean: Option<String>,
    /// Skip the liveness checks. Java then ignores the ids and forgets the whole group.
    pub is_clean_living_broker: bool,
}

/// 1012.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GetNextBrokerId {
    pub cluster_name: String,
    pub broker_name: String,
}

/// 1012's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NextBrokerIdResponse {
    pub cluster_name: String,
    pub broker_name: String,
    pub next_broker_id: BrokerId,
}

/// 1013.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApplyBrokerId {
    pub cluster_name: String,
    pub broker_name: String,
    pub applied_broker_id: BrokerId,
    /// `"ip:port;timestamp"`; the address is what precedes the first `;`.
    pub register_check_code: String,
}

/// 1013's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApplyBrokerIdResponse {
    pub cluster_name: String,
    pub broker_name: String,
}
