//! Controller frames ↔ the core's request and answer values: Java's header field names (`extFields`), its JSON
//! bodies (fastjson2's default dialect, bean keys in alphabetical order, `Map<Long,_>` keys bare), and its
//! response shape — `createResponseCommandWithHeader(code, header)`, so a refusal still carries the header's
//! fields. Pure: no I/O, no state.

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::controller::heartbeat::BrokerHeartbeat;
use crate::controller::request::*;
use crate::controller::{BrokerId, ControllerResult};
use crate::protocol::code::{ControllerRequestCode as C, ResponseCode};
use crate::protocol::command::{RemotingCommand, FLAG_ONEWAY};
use crate::protocol::json::{self, Dialect, JsonWriter, Value};

/// A controller request, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    AlterSyncStateSet(AlterSyncStateSet),
    ElectMaster(ElectMaster),
    RegisterBroker(RegisterBroker),
    GetReplicaInfo {
        broker_name: String,
    },
    GetMetadata,
    /// An empty or missing list: Java answers SYSTEM_ERROR "not set any response code".
    GetSyncStateData(Vec<String>),
    Heartbeat(BrokerHeartbeat),
    CleanBrokerData(CleanBrokerData),
    GetNextBrokerId(GetNextBrokerId),
    ApplyBrokerId(ApplyBrokerId),
    GetConfig,
    UpdateConfig(Bytes),
}

/// Why a frame is not a request we can run; each has Java's reply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    /// Java `decodeCommandCustomHeader` on a `@CFNotNull` field.
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    /// A number field that is not one (Java fails the header decode).
    #[error("the custom field <{0}> is not a number")]
    NotANumber(&'static str),
    #[error("invalid request body: {0}")]
    Body(String),
    /// Java `handleRequest`'s default branch.
    #[error(" request type {0} not supported")]
    Unsupported(i32),
    /// 904 without a broker id (Java: 2005 "Heart beat with empty brokerId").
    #[error("Heart beat with empty brokerId")]
    HeartbeatWithoutId,
}

impl WireError {
    pub(crate) fn reply(&self, req: &RemotingCommand) -> RemotingCommand {
        let code = match self {
            WireError::Unsupported(_) => ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            WireError::HeartbeatWithoutId => crate::protocol::code::ControllerResponseCode::CONTROLLER_INVALID_REQUEST,
            _ => ResponseCode::SYSTEM_ERROR,
        };
        RemotingCommand::response_to(req, code, Some(self.to_string()))
    }
}

fn text(req: &RemotingCommand, key: &'static str) -> Result<String, WireError> {
    req.ext(key).map(str::to_owned).ok_or(WireError::Missing(key))
}

fn long(req: &RemotingCommand, key: &'static str) -> Result<Option<i64>, WireError> {
    match req.ext(key) {
        None => Ok(None),
        Some(_) => req.ext_i64(key).map(Some).ok_or(WireError::NotANumber(key)),
    }
}

fn int(req: &RemotingCommand, key: &'static str) -> Result<Option<i32>, WireError> {
    match req.ext(key) {
        None => Ok(None),
        Some(_) => req.ext_i32(key).map(Some).ok_or(WireError::NotANumber(key)),
    }
}

fn required<T>(value: Option<T>, key: &'static str) -> Result<T, WireError> {
    value.ok_or(WireError::Missing(key))
}

pub(crate) fn decode(req: &RemotingCommand) -> Result<Request, WireError> {
    Ok(match req.code {
        C::CONTROLLER_ALTER_SYNC_STATE_SET => Request::AlterSyncStateSet(AlterSyncStateSet {
            broker_name: text(req, "brokerName")?,
            master_broker_id: required(long(req, "masterBrokerId")?, "masterBrokerId")?,
            master_epoch: required(int(req, "masterEpoch")?, "masterEpoch")?,
            new_sync_state_set: decode_sync_state_set(&req.body)?,
        }),
        C::CONTROLLER_ELECT_MASTER => Request::ElectMaster(ElectMaster {
            cluster_name: text(req, "clusterName")?,
            broker_name: text(req, "brokerName")?,
            broker_id: required(long(req, "brokerId")?, "brokerId")?,
            designate_elect: req.ext_bool("designateElect"),
        }),
        C::CONTROLLER_REGISTER_BROKER => Request::RegisterBroker(RegisterBroker {
            cluster_name: text(req, "clusterName")?,
            broker_name: text(req, "brokerName")?,
            broker_id: required(long(req, "brokerId")?, "brokerId")?,
            broker_address: text(req, "brokerAddress")?,
        }),
        C::CONTROLLER_GET_REPLICA_INFO => Request::GetReplicaInfo { broker_name: text(req, "brokerName")? },
        C::CONTROLLER_GET_METADATA_INFO => Request::GetMetadata,
        C::CONTROLLER_GET_SYNC_STATE_DATA => Request::GetSyncStateData(decode_names(&req.body)?),
        C::BROKER_HEARTBEAT => {
            let broker_id = long(req, "brokerId")?.ok_or(WireError::HeartbeatWithoutId)?;
            Request::Heartbeat(BrokerHeartbeat {
                cluster_name: text(req, "clusterName")?,
                broker_addr: text(req, "brokerAddr")?,
                broker_name: text(req, "brokerName")?,
                broker_id: Some(broker_id),
                epoch: int(req, "epoch")?,
                max_offset: long(req, "maxOffset")?,
                confirm_offset: long(req, "confirmOffset")?,
                heartbeat_timeout_mills: long(req, "heartbeatTimeoutMills")?,
                election_priority: int(req, "electionPriority")?,
            })
        }
        C::CLEAN_BROKER_DATA => Request::CleanBrokerData(CleanBrokerData {
            cluster_name: req.ext("clusterName").map(str::to_owned),
            broker_name: text(req, "brokerName")?,
            broker_controller_ids_to_clean: req.ext("brokerControllerIdsToClean").map(str::to_owned),
            is_clean_living_broker: req.ext_bool("isCleanLivingBroker"),
        }),
        C::CONTROLLER_GET_NEXT_BROKER_ID => Request::GetNextBrokerId(GetNextBrokerId {
            cluster_name: text(req, "clusterName")?,
            broker_name: text(req, "brokerName")?,
        }),
        C::CONTROLLER_APPLY_BROKER_ID => Request::ApplyBrokerId(ApplyBrokerId {
            cluster_name: text(req, "clusterName")?,
            broker_name: text(req, "brokerName")?,
            applied_broker_id: required(long(req, "appliedBrokerId")?, "appliedBrokerId")?,
            register_check_code: text(req, "registerCheckCode")?,
        }),
        C::GET_CONTROLLER_CONFIG => Request::GetConfig,
        C::UPDATE_CONTROLLER_CONFIG => Request::UpdateConfig(req.body.clone()),
        other => return Err(WireError::Unsupported(other)),
    })
}

fn parse_body(body: &[u8]) -> Result<Value, WireError> {
    json::parse(body).map_err(|e| WireError::Body(e.to_string()))
}

fn ids(value: Option<&Value>) -> Result<BTreeSet<BrokerId>, WireError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_i64().ok_or_else(|| WireError::Body("a broker id is not a number".into())))
            .collect(),
        Some(_) => Err(WireError::Body("syncStateSet is not a list".into())),
    }
}

/// Java `SyncStateSet` (1001's body).
fn decode_sync_state_set(body: &[u8]) -> Result<SyncStateSet, WireError> {
    if body.is_empty() {
        return Err(WireError::Body("the SyncStateSet body is missing".into()));
    }
    let value = parse_body(body)?;
    Ok(SyncStateSet {
        sync_state_set: ids(value.get("syncStateSet"))?,
        sync_state_set_epoch: value.get("syncStateSetEpoch").and_then(Value::as_i32).unwrap_or(0),
    })
}

/// 1006's body: a JSON list of broker names; none at all is an empty list.
fn decode_names(body: &[u8]) -> Result<Vec<String>, WireError> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    match parse_body(body)? {
        Value::Array(items) => Ok(items.iter().filter_map(|v| v.as_str().map(|s| s.into_owned())).collect()),
        Value::Null => Ok(Vec::new()),
        _ => Err(WireError::Body("expected a list of broker names".into())),
    }
}

/// A response carrying a header object (`"extFields":{}` even when every field is null), the result's code and
/// remark.
fn answer<T>(req: &RemotingCommand, result: &ControllerResult<T>) -> RemotingCommand {
    RemotingCommand::response_to(req, result.code(), result.remark()).with_empty_ext()
}

fn with_opt(cmd: RemotingCommand, key: &str, value: Option<impl ToString>) -> RemotingCommand {
    match value {
        Some(v) => cmd.with_ext(key, v.to_string()),
        None => cmd,
    }
}

fn json_body(f: impl FnOnce(&mut JsonWriter<'_>)) -> Bytes {
    let mut out = Vec::new();
    f(&mut JsonWriter::new(&mut out, Dialect::Default));
    Bytes::from(out)
}

fn write_ids(w: &mut JsonWriter<'_>, ids: &BTreeSet<BrokerId>) {
    w.begin_array();
    for id in ids {
        w.long(*id);
    }
    w.end_array();
}

pub(crate) fn sync_state_set_body(set: &SyncStateSet) -> Bytes {
    json_body(|w| {
        w.begin_object();
        w.field("syncStateSet");
        write_ids(w, &set.sync_state_set);
        w.field("syncStateSetEpoch");
        w.int(set.sync_state_set_epoch);
        w.end_object();
    })
}

fn with_body(cmd: RemotingCommand, body: Option<Bytes>) -> RemotingCommand {
    match body {
        Some(body) => cmd.with_body(body),
        None => cmd,
    }
}

pub(crate) fn alter_sync_state_set(
    req: &RemotingCommand,
    r: &ControllerResult<AlterSyncStateSetResponse>,
) -> RemotingCommand {
    let cmd = answer(req, r).with_ext("newSyncStateSetEpoch", r.response.new_sync_state_set_epoch.to_string());
    with_body(cmd, r.response.body.as_ref().map(sync_state_set_body))
}

pub(crate) fn elect_master(req: &RemotingCommand, r: &ControllerResult<ElectMasterResponse>) -> RemotingCommand {
    let resp = &r.response;
    let mut cmd = with_opt(answer(req, r), "masterBrokerId", resp.master_broker_id);
    cmd = with_opt(cmd, "masterAddress", resp.master_address.as_ref());
    cmd = with_opt(cmd, "masterEpoch", resp.master_epoch);
    cmd = with_opt(cmd, "syncStateSetEpoch", resp.sync_state_set_epoch);
    with_body(cmd, resp.body.as_ref().map(elect_master_body))
}

fn elect_master_body(body: &ElectMasterBody) -> Bytes {
    json_body(|w| {
        w.begin_object();
        if let Some(group) = &body.broker_member_group {
            w.field("brokerMemberGroup");
            w.begin_object();
            w.field("brokerAddrs");
            w.begin_object();
            for (id, addr) in &group.broker_addrs {
                w.int_key(*id);
                w.string(addr);
            }
            w.end_object();
            w.field("brokerName");
            w.string(&group.broker_name);
            w.field("cluster");
            w.string(&group.cluster);
            w.end_object();
        }
        w.field("syncStateSet");
        write_ids(w, &body.sync_state_set);
        w.end_object();
    })
}

pub(crate) fn register_broker(req: &RemotingCommand, r: &ControllerResult<RegisterBrokerResponse>) -> RemotingCommand {
    let resp = &r.response;
    let mut cmd =
        answer(req, r).with_ext("clusterName", &*resp.cluster_name).with_ext("brokerName", &*resp.broker_name);
    cmd = with_opt(cmd, "masterBrokerId", resp.master_broker_id);
    cmd = with_opt(cmd, "masterAddress", resp.master_address.as_ref());
    cmd = with_opt(cmd, "masterEpoch", resp.master_epoch);
    cmd = with_opt(cmd, "syncStateSetEpoch", resp.sync_state_set_epoch);
    with_body(cmd, resp.body.as_ref().map(sync_state_set_body))
}

pub(crate) fn replica_info(req: &RemotingCommand, r: &ControllerResult<ReplicaInfoResponse>) -> RemotingCommand {
    let resp = &r.response;
    let mut cmd = with_opt(answer(req, r), "masterBrokerId", resp.master_broker_id);
    cmd = with_opt(cmd, "masterAddress", resp.master_address.as_ref());
    cmd = with_opt(cmd, "masterEpoch", resp.master_epoch);
    with_body(cmd, resp.body.as_ref().map(sync_state_set_body))
}

pub(crate) fn sync_state_data(req: &RemotingCommand, r: &ControllerResult<BrokerReplicasInfo>) -> RemotingCommand {
    let body = json_body(|w| {
        w.begin_object();
        w.field("replicasInfoTable");
        w.begin_object();
        for (name, group) in &r.response.replicas_info_table {
            w.key(name);
            w.begin_object();
            w.field("inSyncReplicas");
            write_identities(w, &group.in_sync_replicas);
            if let Some(addr) = &group.master_address {
                w.field("masterAddress");
                w.string(addr);
            }
            if let Some(id) = group.master_broker_id {
                w.field("masterBrokerId");
                w.long(id);
            }
            w.field("masterEpoch");
            w.int(group.master_epoch);
            w.field("notInSyncReplicas");
            write_identities(w, &group.not_in_sync_replicas);
            w.field("syncStateSetEpoch");
            w.int(group.sync_state_set_epoch);
            w.end_object();
        }
        w.end_object();
        w.end_object();
    });
    RemotingCommand::response_to(req, r.code(), r.remark()).with_body(body)
}

fn write_identities(w: &mut JsonWriter<'_>, list: &[ReplicaIdentity]) {
    w.begin_array();
    for r in list {
        w.begin_object();
        w.field("alive");
        w.bool(r.alive);
        w.field("brokerAddress");
        w.string(&r.broker_address);
        w.field("brokerId");
        w.long(r.broker_id);
        w.field("brokerName");
        w.string(&r.broker_name);
        w.end_object();
    }
    w.end_array();
}

pub(crate) fn clean_broker_data(req: &RemotingCommand, r: &ControllerResult<()>) -> RemotingCommand {
    RemotingCommand::response_to(req, r.code(), r.remark())
}

pub(crate) fn next_broker_id(req: &RemotingCommand, r: &ControllerResult<NextBrokerIdResponse>) -> RemotingCommand {
    let resp = &r.response;
    answer(req, r)
        .with_ext("clusterName", &*resp.cluster_name)
        .with_ext("brokerName", &*resp.broker_name)
        .with_ext("nextBrokerId", resp.next_broker_id.to_string())
}

pub(crate) fn apply_broker_id(req: &RemotingCommand, r: &ControllerResult<ApplyBrokerIdResponse>) -> RemotingCommand {
    answer(req, r).with_ext("clusterName", &*r.response.cluster_name).with_ext("brokerName", &*r.response.broker_name)
}

/// 1005's header (Java `GetMetaDataResponseHeader`): the leader's DLedger id and address are null while there is
/// none.
pub(crate) struct Metadata<'a> {
    pub group: &'a str,
    pub leader: Option<(&'a str, &'a str)>,
    pub is_leader: bool,
    pub peers: &'a str,
}

pub(crate) fn metadata(req: &RemotingCommand, m: &Metadata<'_>) -> RemotingCommand {
    let mut cmd =
        RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_empty_ext().with_ext("group", m.group);
    if let Some((id, addr)) = m.leader {
        cmd = cmd.with_ext("controllerLeaderId", id).with_ext("controllerLeaderAddress", addr);
    }
    cmd.with_ext("isLeader", m.is_leader.to_string()).with_ext("peers", m.peers)
}

/// 1008 NOTIFY_BROKER_ROLE_CHANGED, one-way, to each alive member of a group with a new master.
pub(crate) fn role_changed(
    master: BrokerId,
    address: Option<&str>,
    master_epoch: i32,
    set: &SyncStateSet,
) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(C::NOTIFY_BROKER_ROLE_CHANGED, 0);
    cmd.flag |= FLAG_ONEWAY;
    cmd = with_opt(cmd, "masterAddress", address);
    cmd.with_ext("masterEpoch", master_epoch.to_string())
        .with_ext("syncStateSetEpoch", set.sync_state_set_epoch.to_string())
        .with_ext("masterBrokerId", master.to_string())
        .with_body(sync_state_set_body(set))
}

#[cfg(test)]
mod tests;
