//! One node of the replicated KV group: the write path (a reactor's KV write → the leader's `client_write`, or a
//! forward to the leader → the answer once applied here, or a refusal within `kvReplicationTimeoutMillis`), the seed
//! of a new group, and the Raft port (Raft RPCs and forwards from the members, KV_MEMBERS and KV_STATUS).

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr, TcpListener as StdListener};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::BytesMut;
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, Raft};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tracing::{info, warn};

use super::machine::{take_waiting, KvCommand, KvEntry, KvTypeConfig, Waiting};
use super::{KvSettings, Wiring};
use crate::allow_list::AllowList;
use crate::controller::raft::NodeId;
use crate::controller_node::net::{self, PeerClient};
use crate::metrics::KvRaftMetrics;
use crate::protocol::command::RemotingCommand;
use crate::protocol::frame;
use crate::protocol::ResponseCode;
use crate::state::Snapshot;
use crate::write_command::ReactorLink;
use crate::write_command::{Completion, Origin, WriteCommand, WriteOp};

/// A member's KV write for the leader (body: the `KvEntry` as JSON; answer: the entry's log index).
pub(crate) const KV_FORWARD: i32 = 52011;
/// Admin: the group's members become the body's `id=ip:port` list (adminAllowList; leader only).
pub(crate) const KV_MEMBERS: i32 = 52012;
/// Read: this node's view of the group (leader, term, members, seeded), as ext fields.
pub(crate) const KV_STATUS: i32 = 52013;

/// What every KV write's refusal starts with.
pub(crate) const NO_MAJORITY: &str = "KV replication: no majority reachable";

/// KV writes being proposed at once; past this the queue fills and reactors answer SYSTEM_BUSY.
const IN_FLIGHT: usize = 1024;
/// Connections the Raft port keeps at once (members open a few each; an admin one).
const MAX_CONNECTIONS: usize = 256;

pub(crate) struct KvNode {
    pub raft: Raft<KvTypeConfig>,
    settings: KvSettings,
    waiting: Waiting,
    next: AtomicU64,
    reactors: Vec<ReactorLink>,
    cell: Arc<ArcSwap<Snapshot>>,
    metrics: Arc<KvRaftMetrics>,
    allow_list: AllowList,
    max_frame: usize,
    /// One seed at a time, and none once seeded.
    seeding: tokio::sync::Mutex<()>,
    /// Idle connections to the leader, for forwards.
    clients: Mutex<HashMap<NodeId, Vec<PeerClient<KvTypeConfig>>>>,
    connections: AtomicUsize,
}

/// Why a write was not committed.
#[derive(Debug)]
enum Refusal {
    NoLeader,
    Leader { id: NodeId, reason: String },
    Timeout,
}

impl Refusal {
    fn remark(&self, timeout: Duration) -> String {
        match self {
            Refusal::NoLeader => format!("{NO_MAJORITY} (no leader known)"),
            Refusal::Leader { id, reason } => format!("{NO_MAJORITY} (leader {id}: {reason})"),
            Refusal::Timeout => format!("{NO_MAJORITY} (not committed within {} ms)", timeout.as_millis()),
        }
    }
}

impl KvNode {
    pub(crate) fn new(raft: Raft<KvTypeConfig>, settings: KvSettings, waiting: Waiting, wiring: Wiring) -> KvNode {
        KvNode {
            raft,
            settings,
            waiting,
            next: AtomicU64::new(1),
            reactors: wiring.reactors,
            cell: wiring.cell,
            metrics: wiring.metrics,
            allow_list: wiring.allow_list,
            max_frame: wiring.max_frame,
            seeding: tokio::sync::Mutex::new(()),
            clients: Mutex::new(HashMap::new()),
            connections: AtomicUsize::new(0),
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    fn leader_addr(&self, id: NodeId) -> Option<String> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        m.membership_config.membership().get_node(&id).map(|n| n.addr.clone())
    }

    /// The first leader of a new group proposes its own KV file as the group's table, before any write.
    async fn ensure_seeded(&self) -> Result<(), Refusal> {
        if self.metrics.seeded.load(Relaxed) {
            return Ok(());
        }
        let _one = self.seeding.lock().await;
        if self.metrics.seeded.load(Relaxed) {
            return Ok(());
        }
        let table = self.cell.load().kv.to_map();
        let entry = KvEntry { command: KvCommand::Seed { table }, proposer: self.settings.me, proposal: 0 };
        self.write_here(entry).await.map(drop)
    }

    /// `client_write` on this node (the leader): the entry's log index once it is committed and applied here.
    async fn write_here(&self, entry: KvEntry) -> Result<u64, Refusal> {
        match self.raft.client_write(entry).await {
            Ok(done) => Ok(done.log_id.index),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => match f.leader_id {
                Some(id) => Err(Refusal::Leader { id, reason: "leadership moved".into() }),
                None => Err(Refusal::NoLeader),
            },
            Err(e) => Err(Refusal::Leader { id: self.settings.me, reason: e.to_string() }),
        }
    }

    /// On the leader: seed if needed, then write. Elsewhere: forward to the leader.
    async fn submit(&self, entry: KvEntry) -> Result<u64, Refusal> {
        match self.leader() {
            Some(id) if id == self.settings.me => {
                self.ensure_seeded().await?;
                self.write_here(entry).await
            }
            Some(id) => self.forward(id, &entry).await,
            None => Err(Refusal::NoLeader),
        }
    }

    async fn forward(&self, leader: NodeId, entry: &KvEntry) -> Result<u64, Refusal> {
        let Some(addr) = self.leader_addr(leader) else { return Err(Refusal::NoLeader) };
        let idle = self.clients.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&leader).and_then(Vec::pop);
        let mut client = idle.unwrap_or_else(|| PeerClient::new(leader, addr, self.max_frame));
        let answer: Result<u64, _> =
            client.call::<_, _, openraft::error::Infallible>(KV_FORWARD, entry, self.settings.timeout).await;
        match answer {
            Ok(index) => {
                self.clients.lock().unwrap_or_else(|p| p.into_inner()).entry(leader).or_default().push(client);
                Ok(index)
            }
            Err(e) => Err(Refusal::Leader { id: leader, reason: e.to_string() }),
        }
    }

    /// One client's KV write: proposed, then answered by the writer once applied here — or refused here.
    async fn on_client(self: Arc<Self>, command: Box<WriteCommand>) {
        let WriteCommand { origin, op, .. } = *command;
        let facts = crate::audit::enabled().then(|| op.facts());
        let proposal = self.next.fetch_add(1, Relaxed);
        let kv = match op {
            WriteOp::PutKv { namespace, key, value } => KvCommand::Put { namespace, key, value },
            WriteOp::DeleteKv { namespace, key } => KvCommand::Delete { namespace, key },
            other => {
                warn!(target: "kv_raft", op = ?other, "not a KV write: refused");
                return self.refuse(origin, "KV replication carries only KV writes".into(), facts);
            }
        };
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(proposal, origin);
        let entry = KvEntry { command: kv, proposer: self.settings.me, proposal };
        let timeout = self.settings.timeout;
        let started = tokio::time::Instant::now();
        let outcome: Result<(), Refusal> = match tokio::time::timeout(timeout, self.submit(entry)).await {
            Ok(Ok(index)) => {
                // Committed: the answer goes when it is applied here (at once on the leader).
                let left = timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(100));
                match self.raft.wait(Some(left)).applied_index_at_least(Some(index), "KV write applied").await {
                    Ok(_) => return,
                    Err(_) => Err(Refusal::Timeout),
                }
            }
            Ok(Err(refusal)) => Err(refusal),
            Err(_) => Err(Refusal::Timeout),
        };
        if let (Err(refusal), Some(origin)) = (outcome, take_waiting(&self.waiting, proposal)) {
            self.metrics.refused.fetch_add(1, Relaxed);
            self.refuse(origin, refusal.remark(timeout), facts);
        }
    }

    /// Answers `origin` SYSTEM_ERROR through its reactor's inbox, with its audit line (`facts`, when auditing).
    fn refuse(&self, origin: Origin, remark: String, facts: Option<String>) {
        warn!(target: "kv_raft", remark, "KV write refused");
        if let Some(facts) = facts {
            let (code, account) = (origin.request.code, origin.account.as_deref());
            crate::audit::applied(origin.peer, account, code, &facts, ResponseCode::SYSTEM_ERROR, &remark, false);
        }
        if origin.request.is_oneway() {
            return;
        }
        let response = RemotingCommand::response_to(&origin.request, ResponseCode::SYSTEM_ERROR, Some(remark));
        let Some(link) = self.reactors.get(usize::from(origin.conn.reactor)) else { return };
        let done = Completion::Reply {
            conn: origin.conn,
            response,
            code: ResponseCode::SYSTEM_ERROR,
            received: origin.received,
        };
        if link.inbox.send(done).is_ok() {
            let _ = link.waker.wake();
        }
    }

    /// KV_FORWARD on the leader.
    async fn serve_forward(&self, req: &RemotingCommand) -> RemotingCommand {
        let entry: KvEntry = match serde_json::from_slice(&req.body) {
            Ok(entry) => entry,
            Err(e) => return error(req, format!("invalid KV entry: {e}")),
        };
        let written = async {
            self.ensure_seeded().await?;
            self.write_here(entry).await
        };
        match tokio::time::timeout(self.settings.timeout, written).await {
            Ok(Ok(index)) => {
                let body = serde_json::to_vec(&Ok::<u64, RaftError<NodeId>>(index)).expect("a number serializes");
                RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(body)
            }
            Ok(Err(refusal)) => error(req, refusal.remark(self.settings.timeout)),
            Err(_) => error(req, Refusal::Timeout.remark(self.settings.timeout)),
        }
    }

    /// KV_MEMBERS on the leader: the new members are added as learners (they catch up first), then the group
    /// becomes exactly the listed members.
    async fn serve_members(&self, req: &RemotingCommand) -> RemotingCommand {
        let Ok(peers) = super::parse_peers(&String::from_utf8_lossy(&req.body)) else {
            return error(req, "the body must be id=ip:port entries separated by ';'".into());
        };
        if peers.is_empty() {
            return error(req, "a group needs at least one member".into());
        }
        if self.leader() != Some(self.settings.me) {
            return error(req, format!("not the KV leader; the leader is {:?}", self.leader()));
        }
        let known: BTreeSet<NodeId> = self.raft.metrics().borrow().membership_config.membership().voter_ids().collect();
        for (id, addr) in peers.iter().filter(|(id, _)| !known.contains(id)) {
            if let Err(e) = self.raft.add_learner(*id, BasicNode { addr: addr.clone() }, true).await {
                return error(req, format!("cannot add {id}={addr}: {e}"));
            }
        }
        let ids: BTreeSet<NodeId> = peers.keys().copied().collect();
        match self.raft.change_membership(ids, false).await {
            Ok(_) => {
                info!(target: "kv_raft", members = ?peers, "KV group membership changed");
                RemotingCommand::response_to(req, ResponseCode::SUCCESS, None)
            }
            Err(e) => error(req, format!("membership not changed: {e}")),
        }
    }

    /// KV_STATUS: this node's view.
    fn status(&self, req: &RemotingCommand) -> RemotingCommand {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let members: Vec<String> = m
            .membership_config
            .membership()
            .nodes()
            .filter(|(id, _)| m.membership_config.membership().voter_ids().any(|v| v == **id))
            .map(|(id, n)| format!("{id}={}", n.addr))
            .collect();
        RemotingCommand::response_to(req, ResponseCode::SUCCESS, None)
            .with_ext("nodeId", self.settings.me.to_string())
            .with_ext("leader", m.current_leader.map_or_else(|| "-1".into(), |l| l.to_string()))
            .with_ext("term", m.current_term.to_string())
            .with_ext("applied", m.last_applied.map_or(0, |l| l.index).to_string())
            .with_ext("members", members.join(";"))
            .with_ext("seeded", self.metrics.seeded.load(Relaxed).to_string())
    }

    /// The hosts of the current members: the only ones whose Raft RPCs and forwards are served.
    fn is_member_host(&self, ip: IpAddr) -> bool {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let from_config = self.settings.peers.values();
        let current: Vec<String> = m.membership_config.membership().nodes().map(|(_, n)| n.addr.clone()).collect();
        from_config
            .chain(current.iter())
            .filter_map(|a| host_ip(a))
            .any(|h| h == ip || ip.is_loopback() && h.is_loopback())
    }

    async fn answer(&self, req: &RemotingCommand, peer: IpAddr) -> Option<RemotingCommand> {
        if req.is_response() {
            return None;
        }
        let response = match req.code {
            code if net::is_raft_rpc(code) || code == KV_FORWARD => {
                if !self.is_member_host(peer) {
                    let remark = format!("{peer} is not a member of the KV replication group");
                    RemotingCommand::response_to(req, ResponseCode::NO_PERMISSION, Some(remark))
                } else if code == KV_FORWARD {
                    self.serve_forward(req).await
                } else {
                    net::serve_rpc(&self.raft, req).await
                }
            }
            KV_MEMBERS if !self.allow_list.allows(peer) => {
                let remark =
                    format!("[ADMIN_ALLOW_LIST] {peer} may not change the KV group; allowed: {}", self.allow_list);
                RemotingCommand::response_to(req, ResponseCode::NO_PERMISSION, Some(remark))
            }
            KV_MEMBERS => self.serve_members(req).await,
            KV_STATUS => self.status(req),
            other => {
                let remark = format!(" request type {other} not supported");
                RemotingCommand::response_to(req, ResponseCode::REQUEST_CODE_NOT_SUPPORTED, Some(remark))
            }
        };
        (!req.is_oneway()).then_some(response)
    }

    fn refresh_metrics(&self) {
        let (term, leader) = {
            let metrics = self.raft.metrics();
            let m = metrics.borrow();
            (m.current_term, m.current_leader)
        };
        self.metrics.term.store(term, Relaxed);
        self.metrics.leader.store(leader.map_or(-1, |l| l as i64), Relaxed);
        self.metrics.is_leader.store(leader == Some(self.settings.me), Relaxed);
    }
}

fn host_ip(addr: &str) -> Option<IpAddr> {
    addr.parse::<SocketAddr>().ok().map(|a| a.ip())
}

fn error(req: &RemotingCommand, remark: String) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(remark))
}

/// The KV Raft thread's life: the port, the reactors' queue, the seed on each leadership, until stopped.
pub(crate) async fn run(
    node: Arc<KvNode>,
    listener: StdListener,
    mut writes: mpsc::Receiver<Box<WriteCommand>>,
    stopped: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            warn!(target: "kv_raft", error = %e, "KV Raft port unusable");
            return;
        }
    };
    let port = tokio::spawn(serve(listener, Arc::clone(&node)));
    let watch = tokio::spawn(leadership(Arc::clone(&node)));
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let intake = async {
        while let Some(command) = writes.recv().await {
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else { break };
            let node = Arc::clone(&node);
            tokio::spawn(async move {
                node.on_client(command).await;
                drop(permit);
            });
        }
    };
    tokio::select! {
        _ = intake => {}
        _ = stopped => {}
    }
    port.abort();
    watch.abort();
    super::log_shutdown(node.raft.shutdown().await);
}

/// On every change of Raft's metrics: the gauges, and the seed when this node leads a group that has none.
async fn leadership(node: Arc<KvNode>) {
    let mut changes = node.raft.metrics();
    loop {
        node.refresh_metrics();
        if node.leader() == Some(node.settings.me) && !node.metrics.seeded.load(Relaxed) {
            if let Err(refusal) = node.ensure_seeded().await {
                warn!(target: "kv_raft", ?refusal, "KV group not seeded yet");
            }
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

async fn serve(listener: tokio::net::TcpListener, node: Arc<KvNode>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                if node.connections.fetch_add(1, Relaxed) >= MAX_CONNECTIONS {
                    node.connections.fetch_sub(1, Relaxed);
                    warn!(target: "kv_raft", %peer, "KV Raft port: too many connections, closed at once");
                    continue;
                }
                let node = Arc::clone(&node);
                tokio::spawn(async move {
                    connection(stream, peer, Arc::clone(&node)).await;
                    node.connections.fetch_sub(1, Relaxed);
                });
            }
            Err(e) => {
                warn!(target: "kv_raft", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One connection: each request on its own task (a forward waits for a commit; votes must not wait behind it),
/// answers through one writer task. A broken frame closes the connection.
async fn connection(stream: TcpStream, peer: SocketAddr, node: Arc<KvNode>) {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<RemotingCommand>(64);
    let writer = tokio::spawn(async move {
        let mut out = BytesMut::new();
        while let Some(cmd) = rx.recv().await {
            out.clear();
            frame::encode(&cmd, &mut out);
            if wr.write_all(&out).await.is_err() {
                break;
            }
        }
    });
    let in_flight = Arc::new(Semaphore::new(64));
    let mut buf = BytesMut::with_capacity(8192);
    'read: loop {
        loop {
            match frame::decode(&mut buf, node.max_frame) {
                Ok(Some(req)) => {
                    let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else { break 'read };
                    let (node, tx) = (Arc::clone(&node), tx.clone());
                    tokio::spawn(async move {
                        if let Some(answer) = node.answer(&req, peer.ip()).await {
                            let _ = tx.send(answer).await;
                        }
                        drop(permit);
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    warn!(target: "kv_raft", %peer, error = %e, "KV Raft port: bad frame, connection closed");
                    break 'read;
                }
            }
        }
        match rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    drop(tx);
    let _ = writer.await;
}
