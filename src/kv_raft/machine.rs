//! The replicated KV table under openraft: what a log entry carries, the state machine that applies committed
//! entries, and its snapshot file.
//!
//! The state machine does not serve reads. It keeps the replicated table (`table`) for snapshots, and hands each
//! committed change to the writer as the same `WriteOp` a single name server would apply
//! (`WriteOp::PutKv`/`DeleteKv`), in log order, so that the snapshot readers load, `kvConfig.json` and its format
//! stay what they are without replication. `local` is what the writer holds once it has applied everything sent so
//! far: a seed or an installed snapshot is handed over as the difference between the two.
//!
//! `kv-snapshot.json` is `{"meta": …, "seeded": bool, "table": {namespace: {key: value}}}`, replaced atomically
//! ([`crate::persist::save_atomic`]) each time a snapshot is built or installed.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{AnyError, EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError, StoredMembership};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::controller::raft::{Node, NodeId};
use crate::metrics::KvRaftMetrics;
use crate::state::{ConnId, KvTable};
use crate::write_command::{Origin, WriteCommand, WriteOp};

pub(crate) const SNAPSHOT_FILE: &str = "kv-snapshot.json";

/// namespace → key → value, as `kvConfig.json` holds it.
pub(crate) type KvMap = BTreeMap<String, BTreeMap<String, String>>;

/// One change to the replicated table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum KvCommand {
    /// PUT_KV_CONFIG (a `None` value keeps the namespace and removes the key, as a single name server does).
    Put { namespace: String, key: String, value: Option<String> },
    /// DELETE_KV_CONFIG.
    Delete { namespace: String, key: String },
    /// The KV file of the group's first leader: the table the group starts from. Only the first seed in the log
    /// counts; a later one (a second leader that proposed before it saw the first) changes nothing.
    Seed { table: KvMap },
}

/// What one log entry carries: the change, and who proposed it (the node and its own serial), so that the node
/// whose client asked can answer that client once the entry is applied there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KvEntry {
    pub command: KvCommand,
    pub proposer: NodeId,
    pub proposal: u64,
}

impl fmt::Display for KvEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KvEntry({}#{})", self.proposer, self.proposal)
    }
}

openraft::declare_raft_types!(
    /// The replicated KV group's openraft types.
    pub(crate) KvTypeConfig:
        D = KvEntry,
        R = (),
        NodeId = NodeId,
        Node = Node,
        Entry = openraft::Entry<KvTypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

type Entry = openraft::Entry<KvTypeConfig>;
type LogId = openraft::LogId<NodeId>;
type Meta = SnapshotMeta<NodeId, Node>;
type StorageError = openraft::StorageError<NodeId>;
/// The current snapshot (meta and data), shared by the state machine and the builders openraft runs beside it.
type Current = Arc<Mutex<Option<(Meta, Vec<u8>)>>>;

/// The clients waiting on this node, by proposal serial: whoever takes one out (the apply, or a timeout) answers it.
pub(crate) type Waiting = Arc<Mutex<HashMap<u64, Origin>>>;

pub(crate) fn take_waiting(waiting: &Waiting, proposal: u64) -> Option<Origin> {
    waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&proposal)
}

/// Why the snapshot file could not be read or written. Openraft sees it wrapped in a `StorageError`.
#[derive(Debug, thiserror::Error)]
pub enum KvMachineError {
    #[error("KV replication snapshot {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("KV replication snapshot {path} is not valid: {reason}")]
    BadFile { path: PathBuf, reason: String },
}

/// The snapshot's data: what travels to a follower and what the file holds besides the meta.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KvState {
    pub seeded: bool,
    pub table: KvMap,
}

#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    meta: Meta,
    #[serde(flatten)]
    state: KvState,
}

/// The differences between the table the writer holds (`local`) and the one it must hold (`target`): the writes
/// that take it there, in a fixed order (namespace, key), and the keys whose values differ or that only one side
/// has (`namespace/key`), for the log and the metric.
pub(crate) fn differences(local: &KvTable, target: &KvMap) -> (Vec<WriteOp>, Vec<String>) {
    let (mut ops, mut keys) = (Vec::new(), Vec::new());
    let local_map = local.to_map();
    let empty = BTreeMap::new();
    for (ns, table) in target {
        let here = local_map.get(ns).unwrap_or(&empty);
        if table.is_empty() && !local_map.contains_key(ns) {
            // An empty namespace: a null put creates it, as on a single name server.
            ops.push(WriteOp::PutKv { namespace: ns.clone(), key: String::new(), value: None });
        }
        for (key, value) in table {
            if here.get(key) != Some(value) {
                ops.push(WriteOp::PutKv { namespace: ns.clone(), key: key.clone(), value: Some(value.clone()) });
                keys.push(format!("{ns}/{key}"));
            }
        }
    }
    for (ns, table) in &local_map {
        let there = target.get(ns).unwrap_or(&empty);
        for key in table.keys().filter(|k| !there.contains_key(*k)) {
            ops.push(WriteOp::DeleteKv { namespace: ns.clone(), key: key.clone() });
            keys.push(format!("{ns}/{key}"));
        }
    }
    (ops, keys)
}

/// Applies one write to a table as the writer will.
fn apply_op(table: &mut KvTable, op: &WriteOp) {
    match op {
        WriteOp::PutKv { namespace, key, value } => {
            table.put(namespace, key, value.as_deref());
        }
        WriteOp::DeleteKv { namespace, key } => {
            table.delete(namespace, key);
        }
        _ => {}
    }
}

/// Where applied writes go: the writer's queue (blocking: the KV thread may wait for the writer; the writer never
/// waits for it), and the waiting clients.
#[derive(Clone)]
pub(crate) struct Sink {
    pub writer: crossbeam_channel::Sender<Box<WriteCommand>>,
    pub waiting: Waiting,
    pub me: NodeId,
}

impl Sink {
    /// Hands `op` to the writer, with the waiting client's origin when this node proposed it and the client still
    /// waits (the writer then answers it once the change is durable and published); otherwise as a one-way request
    /// nobody is answered for.
    fn send(&self, op: WriteOp, proposal: Option<(NodeId, u64)>) {
        let code = match op {
            WriteOp::DeleteKv { .. } => crate::protocol::RequestCode::DELETE_KV_CONFIG,
            _ => crate::protocol::RequestCode::PUT_KV_CONFIG,
        };
        let waiting = proposal.filter(|(node, _)| *node == self.me).and_then(|(_, p)| take_waiting(&self.waiting, p));
        let origin = waiting.unwrap_or_else(|| replicated_origin(code));
        let command = WriteCommand { origin, op, bytes: 0, decoded_with: None };
        if self.writer.send(Box::new(command)).is_err() {
            // The writer stops only when the server does.
            warn!(target: "kv_raft", "the writer has stopped: a replicated KV change was not applied here");
        }
    }
}

/// The origin of a change this node applies for another node's client: one-way, so the writer answers nobody.
fn replicated_origin(code: i32) -> Origin {
    let mut request = crate::protocol::RemotingCommand::request(code, 0);
    request.flag |= crate::protocol::command::FLAG_ONEWAY;
    let conn = ConnId { reactor: u16::MAX, token: 0, gen: 0 };
    Origin::new(conn, &request, std::net::Ipv4Addr::LOCALHOST.into(), None)
}

/// The state machine openraft applies committed entries to.
pub(crate) struct KvMachine {
    state: KvState,
    /// What the writer holds once it has applied everything sent so far.
    local: KvTable,
    last_applied: Option<LogId>,
    membership: StoredMembership<NodeId, Node>,
    path: PathBuf,
    current: Current,
    sink: Sink,
    metrics: Arc<KvRaftMetrics>,
}

impl KvMachine {
    /// Opens the state machine in `dir` over the writer's table as loaded from `kvConfig.json` (`local`). From a
    /// snapshot file of a seeded group, the writer is first brought to the snapshot's table (openraft then
    /// re-applies the committed entries after it).
    pub(crate) fn open(
        dir: &Path,
        local: KvTable,
        sink: Sink,
        metrics: Arc<KvRaftMetrics>,
    ) -> Result<Self, KvMachineError> {
        fs::create_dir_all(dir).map_err(|source| KvMachineError::Io { path: dir.to_owned(), source })?;
        let path = dir.join(SNAPSHOT_FILE);
        let mut machine = KvMachine {
            state: KvState::default(),
            local,
            last_applied: None,
            membership: StoredMembership::default(),
            path: path.clone(),
            current: Arc::new(Mutex::new(None)),
            sink,
            metrics,
        };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(machine),
            Err(source) => return Err(KvMachineError::Io { path, source }),
        };
        let file: SnapshotFile = serde_json::from_slice(&bytes)
            .map_err(|e| KvMachineError::BadFile { path: path.clone(), reason: e.to_string() })?;
        let data = serde_json::to_vec(&file.state).expect("plain maps always serialize");
        machine.restore(&file.meta, file.state, "restart");
        *machine.current.lock().unwrap_or_else(|p| p.into_inner()) = Some((file.meta, data));
        Ok(machine)
    }

    /// Takes `state` as of `meta` and brings the writer to its table.
    fn restore(&mut self, meta: &Meta, state: KvState, why: &str) {
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        if state.seeded {
            self.metrics.seeded.store(true, Relaxed);
            self.bring_writer_to(&state.table, why);
        }
        self.state = state;
    }

    /// Sends the writer the writes that take its table to `target`, and reports what differed.
    fn bring_writer_to(&mut self, target: &KvMap, why: &str) {
        let (ops, keys) = differences(&self.local, target);
        if !keys.is_empty() {
            self.metrics.differing_keys.fetch_add(keys.len() as u64, Relaxed);
            let shown: Vec<&str> = keys.iter().take(16).map(String::as_str).collect();
            warn!(target: "kv_raft", why, differing = keys.len(), keys = ?shown,
                "this name server's KV table differed from the replicated one; the replicated one wins");
        }
        for op in ops {
            apply_op(&mut self.local, &op);
            self.sink.send(op, None);
        }
    }

    fn apply_entry(&mut self, entry: &Entry) {
        self.last_applied = Some(entry.log_id);
        match &entry.payload {
            EntryPayload::Blank => {}
            EntryPayload::Membership(m) => self.membership = StoredMembership::new(Some(entry.log_id), m.clone()),
            EntryPayload::Normal(e) => {
                let from = Some((e.proposer, e.proposal));
                let op = match &e.command {
                    KvCommand::Seed { table } => {
                        if !self.state.seeded {
                            info!(target: "kv_raft", proposer = e.proposer, keys = table.values().map(|t| t.len()).sum::<usize>(),
                                "KV replication seeded from the first leader's KV file");
                            self.state = KvState { seeded: true, table: table.clone() };
                            self.metrics.seeded.store(true, Relaxed);
                            self.bring_writer_to(table, "seed");
                        }
                        return;
                    }
                    KvCommand::Put { namespace, key, value } => {
                        WriteOp::PutKv { namespace: namespace.clone(), key: key.clone(), value: value.clone() }
                    }
                    KvCommand::Delete { namespace, key } => {
                        WriteOp::DeleteKv { namespace: namespace.clone(), key: key.clone() }
                    }
                };
                let mut table = KvTable::from_map(std::mem::take(&mut self.state.table));
                apply_op(&mut table, &op);
                self.state.table = table.to_map();
                apply_op(&mut self.local, &op);
                self.metrics.applied.fetch_add(1, Relaxed);
                self.sink.send(op, from);
            }
        }
    }

    fn store(&self, meta: &Meta, data: Vec<u8>) -> Result<(), KvMachineError> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        store_file(&self.path, &mut current, meta, data)
    }
}

/// Writes the snapshot file unless the current snapshot is newer (a build that started before an install ended).
fn store_file(
    path: &Path,
    current: &mut Option<(Meta, Vec<u8>)>,
    meta: &Meta,
    data: Vec<u8>,
) -> Result<(), KvMachineError> {
    if current.as_ref().is_some_and(|(m, _)| m.last_log_id > meta.last_log_id) {
        return Ok(());
    }
    let bad = |reason: String| KvMachineError::BadFile { path: path.to_owned(), reason };
    let state: KvState = serde_json::from_slice(&data).map_err(|e| bad(e.to_string()))?;
    let bytes = serde_json::to_vec(&SnapshotFile { meta: meta.clone(), state }).map_err(|e| bad(e.to_string()))?;
    crate::persist::save_atomic(path, &bytes).map_err(|source| KvMachineError::Io { path: path.to_owned(), source })?;
    *current = Some((meta.clone(), data));
    Ok(())
}

fn snapshot_id(last: Option<LogId>) -> String {
    last.map_or_else(|| "empty".to_owned(), |id| format!("{}-{}-{}", id.leader_id.term, id.leader_id.node_id, id.index))
}

/// A copy of the state taken between two applies, for openraft to build a snapshot from.
pub(crate) struct KvSnapshotBuilder {
    state: KvState,
    last_applied: Option<LogId>,
    membership: StoredMembership<NodeId, Node>,
    path: PathBuf,
    current: Current,
}

impl RaftSnapshotBuilder<KvTypeConfig> for KvSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<KvTypeConfig>, StorageError> {
        let meta = Meta {
            last_log_id: self.last_applied,
            last_membership: self.membership.clone(),
            snapshot_id: snapshot_id(self.last_applied),
        };
        let fail =
            |e: &dyn std::error::Error| StorageIOError::write_snapshot(Some(meta.signature()), AnyError::error(e));
        let data = serde_json::to_vec(&self.state).map_err(|e| fail(&e))?;
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        store_file(&self.path, &mut current, &meta, data.clone()).map_err(|e| fail(&e))?;
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}

impl RaftStateMachine<KvTypeConfig> for KvMachine {
    type SnapshotBuilder = KvSnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership<NodeId, Node>), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        Ok(entries.into_iter().map(|entry| self.apply_entry(&entry)).collect())
    }

    async fn get_snapshot_builder(&mut self) -> KvSnapshotBuilder {
        KvSnapshotBuilder {
            state: self.state.clone(),
            last_applied: self.last_applied,
            membership: self.membership.clone(),
            path: self.path.clone(),
            current: Arc::clone(&self.current),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<Cursor<Vec<u8>>>) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let fail =
            |e: &dyn std::error::Error| StorageIOError::read_snapshot(Some(meta.signature()), AnyError::error(e));
        let state: KvState = serde_json::from_slice(&data).map_err(|e| fail(&e))?;
        // The file first: once the state says "applied up to here", a restart must find the same.
        self.store(meta, data).map_err(|e| fail(&e))?;
        self.metrics.snapshots_installed.fetch_add(1, Relaxed);
        self.restore(meta, state, "snapshot");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<KvTypeConfig>>, StorageError> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(current.map(|(meta, data)| Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }))
    }
}

impl From<KvMachineError> for StorageError {
    fn from(e: KvMachineError) -> Self {
        StorageIOError::read_state_machine(AnyError::new(&e)).into()
    }
}

#[cfg(test)]
mod tests;
