//! One controller node: runs each broker request against the replicated state, proposes the resulting events
//! through openraft, keeps this node's broker live table, and starts elections when a master goes (Java
//! `ControllerManager` + `DLedgerController` + `DefaultBrokerHeartbeatManager`, on our pure core).
//!
//! - Writes and reads are served by the Raft leader only (others answer 2007, as Java's event scheduler does).
//!   On the leader a `validate` lock makes "validate against the applied state, propose, wait until applied" one
//!   step, so the next request is validated against the state the previous one produced (Java's single event
//!   thread). Requests that produced no events are answered after `ensure_linearizable`, so a deposed leader cannot
//!   answer from a stale state.
//! - Heartbeats (904) only touch the local table: never proposed, never leader-only.

use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use arc_swap::ArcSwap;
use openraft::error::{ClientWriteError, RaftError};
use openraft::Raft;
use tracing::{info, warn};

use super::outbound;
use super::settings::Settings;
use super::wire::{self, Metadata, Request};
use crate::allow_list::AllowList;
use crate::clock::Clock;
use crate::conn_id::ConnId;
use crate::controller::heartbeat::{BrokerIdentity, LiveAt};
use crate::controller::raft::{NodeId, Proposal, TypeConfig};
use crate::controller::request::{ElectMaster, ElectMasterResponse, SyncStateSet, ANY_BROKER};
use crate::controller::{ControllerResult, HeartbeatTable, ReplicasInfo};
use crate::metrics::ControllerMetrics;
use crate::protocol::code::{ControllerResponseCode, ResponseCode};
use crate::protocol::command::RemotingCommand;

/// Java's processor waits this long for a request's result (`WAIT_TIMEOUT_OUT`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request could not be run on this node.
#[derive(Debug)]
enum Refusal {
    NotLeader,
    /// Raft could not commit in time or failed; Java's future is cancelled or times out (SYSTEM_ERROR).
    Raft(String),
}

pub(crate) struct Node {
    pub raft: Raft<TypeConfig>,
    pub id: NodeId,
    settings: Arc<Settings>,
    view: Arc<ArcSwap<ReplicasInfo>>,
    heartbeats: Mutex<HeartbeatTable>,
    /// (term, ms) of this node's current leadership, `None` while it does not lead: the inactive-master scan spares
    /// masters it has not heard from for a heartbeat timeout from then (`HeartbeatTable::at_leading_since`).
    leading_since: Mutex<Option<(u64, i64)>>,
    validate: tokio::sync::Mutex<()>,
    clock: Arc<dyn Clock>,
    metrics: Arc<ControllerMetrics>,
    /// `adminAllowList`: the hosts that may change the controller's state (brokers included, as on the name
    /// server's port).
    allow_list: AllowList,
}

impl Node {
    pub(crate) fn new(
        raft: Raft<TypeConfig>,
        settings: Arc<Settings>,
        view: Arc<ArcSwap<ReplicasInfo>>,
        clock: Arc<dyn Clock>,
        metrics: Arc<ControllerMetrics>,
        allow_list: AllowList,
    ) -> Node {
        metrics.enabled.store(true, Relaxed);
        let id = settings.this().id;
        Node {
            raft,
            id,
            settings,
            view,
            heartbeats: Mutex::new(HeartbeatTable::new()),
            leading_since: Mutex::new(None),
            validate: tokio::sync::Mutex::new(()),
            clock,
            metrics,
            allow_list,
        }
    }

    fn heartbeats(&self) -> MutexGuard<'_, HeartbeatTable> {
        self.heartbeats.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refreshes the gauges of `/metrics` (role, term, leader, live brokers, groups).
    pub(crate) fn refresh_metrics(&self) {
        let m = &self.metrics;
        let (term, leader) = {
            let raft = self.raft.metrics();
            let raft = raft.borrow();
            (raft.current_term, raft.current_leader)
        };
        m.term.store(term, Relaxed);
        m.leader.store(leader.map_or(-1, |id| id as i64), Relaxed);
        m.is_leader.store(leader == Some(self.id), Relaxed);
        let by_group = {
            let table = self.heartbeats();
            m.alive_brokers.store(table.len() as u64, Relaxed);
            table.alive_by_group(self.clock.now_ms())
        };
        *m.alive_by_group.lock().unwrap_or_else(|p| p.into_inner()) = by_group;
        m.groups.store(self.view.load().broker_names().count() as u64, Relaxed);
    }

    /// (`scanNotActiveBrokerInterval`, `scanInactiveMasterInterval`) in ms.
    pub(crate) fn scan_intervals(&self) -> (u64, u64) {
        (self.settings.scan_not_active_broker_interval_ms, self.settings.scan_inactive_master_interval_ms)
    }

    pub(crate) fn leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    pub(crate) fn is_leader(&self) -> bool {
        self.leader() == Some(self.id)
    }

    /// The leader-change hook (every change of openraft's metrics, and each inactive-master scan so that a scan
    /// never runs ahead of it): notes when this node began to lead in its current term, and returns that time
    /// while it leads. A new term restarts it even on the same node: a leader mostly loses the lead by being cut
    /// off, and brokers cut off from it are missing from its table.
    pub(crate) fn note_leadership(&self) -> Option<i64> {
        let (term, leader) = {
            let raft = self.raft.metrics();
            let raft = raft.borrow();
            (raft.current_term, raft.current_leader)
        };
        let mut since = self.leading_since.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if leader != Some(self.id) {
            *since = None;
            return None;
        }
        match *since {
            Some((t, ms)) if t == term => Some(ms),
            _ => {
                let now = self.clock.now_ms();
                *since = Some((term, now));
                info!(target: "controller", term, "leading: unheard masters spared for one heartbeat timeout");
                Some(now)
            }
        }
    }

    /// Answers one broker or admin request; `None` for one-way requests.
    pub(crate) async fn handle(&self, req: &RemotingCommand, conn: ConnId, peer: IpAddr) -> Option<RemotingCommand> {
        let response = match wire::decode(req) {
            _ if is_write(req.code) && !self.allow_list.allows(peer) => {
                let remark = format!(
                    "[ADMIN_ALLOW_LIST] {peer} may not send controller request {}; allowed: {}",
                    req.code, self.allow_list
                );
                RemotingCommand::response_to(req, ResponseCode::NO_PERMISSION, Some(remark))
            }
            Err(e) => e.reply(req),
            Ok(request) => self.run(req, request, conn).await,
        };
        crate::audit::controller(peer, req, &response);
        self.metrics.requests.fetch_add(1, Relaxed);
        if response.code != ResponseCode::SUCCESS {
            self.metrics.request_failures.fetch_add(1, Relaxed);
        }
        (!req.is_oneway()).then_some(response)
    }

    async fn run(&self, req: &RemotingCommand, request: Request, conn: ConnId) -> RemotingCommand {
        let unclean = self.settings.enable_elect_unclean_master;
        let outcome = match request {
            Request::Heartbeat(hb) => {
                self.heartbeats().on_heartbeat(&hb, Some(conn), self.clock.now_ms());
                return RemotingCommand::response_to(req, ResponseCode::SUCCESS, Some("Heart beat success".into()));
            }
            Request::GetMetadata => return self.metadata(req),
            Request::GetConfig => {
                let text = crate::protocol::props::write(&self.settings.properties());
                return RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(text.into_bytes());
            }
            Request::UpdateConfig(body) => return update_config(req, &body),
            Request::AlterSyncStateSet(r) => self
                .serve(|s, live| s.alter_sync_state_set(&r, live))
                .await
                .map(|r| wire::alter_sync_state_set(req, &r)),
            Request::ElectMaster(r) => match self.serve(|s, live| s.elect_master(&r, live, unclean)).await {
                Ok(result) => {
                    self.metrics.election(result.code());
                    self.notify_if_elected(&result);
                    Ok(wire::elect_master(req, &result))
                }
                Err(e) => Err(e),
            },
            Request::RegisterBroker(r) => {
                self.serve(|s, live| s.register_broker(&r, live)).await.map(|r| wire::register_broker(req, &r))
            }
            Request::GetReplicaInfo { broker_name } => {
                self.serve(|s, _| s.get_replica_info(&broker_name)).await.map(|r| wire::replica_info(req, &r))
            }
            // Java's processor falls through to `createResponseCommand(null)`: SYSTEM_ERROR with this remark.
            Request::GetSyncStateData(names) if names.is_empty() => {
                return RemotingCommand::response_to(
                    req,
                    ResponseCode::SYSTEM_ERROR,
                    Some("not set any response code".into()),
                );
            }
            Request::GetSyncStateData(names) => {
                self.serve(|s, live| s.get_sync_state_data(&names, live)).await.map(|r| wire::sync_state_data(req, &r))
            }
            Request::CleanBrokerData(r) => {
                self.serve(|s, live| s.clean_broker_data(&r, live)).await.map(|r| wire::clean_broker_data(req, &r))
            }
            Request::GetNextBrokerId(r) => {
                self.serve(|s, _| s.get_next_broker_id(&r)).await.map(|r| wire::next_broker_id(req, &r))
            }
            Request::ApplyBrokerId(r) => {
                self.serve(|s, _| s.apply_broker_id(&r)).await.map(|r| wire::apply_broker_id(req, &r))
            }
        };
        outcome.unwrap_or_else(|refusal| match refusal {
            Refusal::NotLeader => RemotingCommand::response_to(
                req,
                ControllerResponseCode::CONTROLLER_NOT_LEADER,
                Some("The controller is not in leader state".into()),
            ),
            Refusal::Raft(reason) => RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(reason)),
        })
    }

    /// Validate on the leader, replicate the events, answer once they are applied (or, with none, once this node
    /// is confirmed leader).
    async fn serve<T>(
        &self,
        validate: impl FnOnce(&ReplicasInfo, &LiveAt<'_>) -> ControllerResult<T>,
    ) -> Result<ControllerResult<T>, Refusal> {
        if !self.is_leader() {
            return Err(Refusal::NotLeader);
        }
        let step = async {
            let _serial = self.validate.lock().await;
            let now_ms = self.clock.now_ms();
            let result = {
                let state = self.view.load();
                let table = self.heartbeats();
                validate(&state, &table.at(now_ms))
            };
            if result.events.is_empty() {
                // Deliberately broken build (docs/reliability.md, "Broken builds the checker caught"): a read is
                // answered from this node's own state without confirming that it still leads.
                #[cfg(not(feature = "fault-stale-read"))]
                self.raft.ensure_linearizable().await.map_err(|e| match e {
                    RaftError::APIError(_) => Refusal::NotLeader,
                    RaftError::Fatal(f) => Refusal::Raft(f.to_string()),
                })?;
            } else {
                self.raft.client_write(Proposal { events: result.events.clone(), at_ms: Some(now_ms) }).await.map_err(
                    |e| match e {
                        RaftError::APIError(ClientWriteError::ForwardToLeader(_)) => Refusal::NotLeader,
                        other => Refusal::Raft(other.to_string()),
                    },
                )?;
            }
            Ok(result)
        };
        tokio::time::timeout(REQUEST_TIMEOUT, step)
            .await
            .unwrap_or_else(|_| Err(Refusal::Raft("the controller did not commit the request in time".into())))
    }

    fn metadata(&self, req: &RemotingCommand) -> RemotingCommand {
        let leader = self.leader().and_then(|id| self.settings.peer(id));
        let peers = self.settings.peers_text();
        let m = Metadata {
            group: &self.settings.group,
            leader: leader.map(|p| (p.name.as_str(), p.addr.as_str())),
            is_leader: leader.is_some_and(|p| p.id == self.id),
            peers: &peers,
        };
        wire::metadata(req, &m)
    }

    /// A broker's connection closed: its live entries go, and a lost master is replaced at once.
    pub(crate) async fn on_connection_closed(&self, conn: ConnId) {
        let gone = self.heartbeats().on_connection_closed(conn);
        self.on_brokers_inactive(gone).await;
    }

    /// `scanNotActiveBrokerInterval`: brokers silent past their timeout go.
    pub(crate) async fn scan_not_active(&self) {
        let gone = self.heartbeats().scan(self.clock.now_ms());
        self.on_brokers_inactive(gone).await;
    }

    /// `scanInactiveMasterInterval`, leader only: re-run the election of every group whose master is dead while a
    /// replica lives, so a trigger that failed is not lost for good. A master this node has no entry for counts as
    /// dead only once it has had a heartbeat timeout of this node's leadership to reach it (a deliberate difference
    /// from Java, docs/compatibility.md).
    pub(crate) async fn scan_inactive_masters(&self) {
        let Some(since) = self.note_leadership() else { return };
        let groups = {
            let table = self.heartbeats();
            self.view.load().scan_need_reelect(&table.at_leading_since(self.clock.now_ms(), since))
        };
        for name in groups {
            self.trigger_election(&name).await;
        }
    }

    async fn on_brokers_inactive(&self, gone: Vec<BrokerIdentity>) {
        for broker in gone {
            info!(target: "controller", cluster = %broker.cluster_name, group = %broker.broker_name,
                id = broker.broker_id, "broker inactive");
            if self.is_leader() && self.view.load().lost_master(&broker.broker_name, broker.broker_id) {
                self.trigger_election(&broker.broker_name).await;
            }
        }
    }

    /// Java `triggerElectMaster`: elect anyone eligible, up to `electMasterMaxRetryCount` tries.
    async fn trigger_election(&self, broker_name: &str) {
        let unclean = self.settings.enable_elect_unclean_master;
        let request = ElectMaster {
            cluster_name: String::new(),
            broker_name: broker_name.to_owned(),
            broker_id: ANY_BROKER,
            designate_elect: false,
        };
        for attempt in 1..=self.settings.elect_master_max_retry_count {
            match self.serve(|s, live| s.elect_master(&request, live, unclean)).await {
                Ok(result) => {
                    self.metrics.election(result.code());
                    let (master, epoch) = (result.response.master_broker_id, result.response.master_epoch);
                    let remark = result.remark().unwrap_or_default();
                    crate::audit::controller_election(broker_name, master, epoch, result.code(), &remark);
                    if result.error.is_none() {
                        self.notify_if_elected(&result);
                        return;
                    }
                }
                Err(refusal) => {
                    warn!(target: "controller", group = broker_name, attempt, ?refusal, "election not run");
                    if matches!(refusal, Refusal::NotLeader) {
                        return;
                    }
                }
            }
        }
    }

    /// Java `notifyBrokerRoleChanged`: tell every alive member of the group who its master is now.
    fn notify_if_elected(&self, result: &ControllerResult<ElectMasterResponse>) {
        if !self.settings.notify_broker_role_changed || result.error.is_some() {
            return;
        }
        let resp = &result.response;
        let (Some(master), Some(body)) = (resp.master_broker_id, resp.body.as_ref()) else { return };
        let Some(group) = &body.broker_member_group else { return };
        let set = SyncStateSet {
            sync_state_set: body.sync_state_set.clone(),
            sync_state_set_epoch: resp.sync_state_set_epoch.unwrap_or(0),
        };
        let frame = wire::role_changed(master, resp.master_address.as_deref(), resp.master_epoch.unwrap_or(0), &set);
        let now = self.clock.now_ms();
        let table = self.heartbeats();
        let live = table.at(now);
        for (id, addr) in &group.broker_addrs {
            use crate::controller::liveness::Liveness;
            if live.is_alive(&group.cluster, &group.broker_name, *id) {
                outbound::send_oneway(addr.clone(), frame.clone());
            }
        }
    }
}

/// The requests that change the controller's state or the elections' inputs (heartbeats), refused from hosts
/// outside `adminAllowList`.
fn is_write(code: i32) -> bool {
    use crate::protocol::code::ControllerRequestCode as C;
    matches!(
        code,
        C::CONTROLLER_ALTER_SYNC_STATE_SET
            | C::CONTROLLER_ELECT_MASTER
            | C::CONTROLLER_REGISTER_BROKER
            | C::BROKER_HEARTBEAT
            | C::UPDATE_CONTROLLER_CONFIG
            | C::CLEAN_BROKER_DATA
            | C::CONTROLLER_APPLY_BROKER_ID
    )
}

/// 1009 UPDATE_CONTROLLER_CONFIG: Java's answers, but nothing an operator set changes (`refuses_update_of`); keys
/// nobody knows are accepted and change nothing, as in Java.
fn update_config(req: &RemotingCommand, body: &[u8]) -> RemotingCommand {
    let Ok(pairs) = crate::protocol::props::parse(&String::from_utf8_lossy(body)) else {
        return RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some("string2Properties error".into()));
    };
    if let Some((key, _)) = pairs.iter().find(|(k, _)| Settings::refuses_update_of(k)) {
        warn!(target: "audit", code = req.code, key = %key, "controller config update refused");
        let remark = "Can not update config in black list.".to_string();
        return RemotingCommand::response_to(req, ResponseCode::NO_PERMISSION, Some(remark));
    }
    RemotingCommand::response_to(req, ResponseCode::SUCCESS, None)
}
