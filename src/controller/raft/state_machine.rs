//! `ReplicasInfo` under openraft: applies committed entries with `ReplicasInfo::apply`, builds and installs
//! snapshots, and keeps the current snapshot in one file.
//!
//! The state is not written on every apply; the snapshot is. `raft-snapshot.json` is
//! `{"meta": <last applied log id, membership, id>, "replicas": <ReplicasInfo>}`, replaced atomically
//! ([`crate::persist::save_atomic`]) each time a snapshot is built or installed; at open the state machine starts from
//! it, and openraft re-applies the committed entries after it from the log. What travels to a follower is the
//! `replicas` part as it is in the file (JSON of `ReplicasInfo`: BTreeMaps, so the same state gives the same bytes on
//! every node); the meta travels beside it in openraft's own message.

use std::fs;
use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{AnyError, EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError, StoredMembership};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{Entry, LogId, Node, NodeId, StorageError, TypeConfig};
use crate::controller::replicas::ReplicasInfo;
use crate::persist::save_atomic;

pub(crate) const SNAPSHOT_FILE: &str = "raft-snapshot.json";

/// Why a snapshot could not be read, written or installed. Openraft sees it wrapped in a `StorageError`.
#[derive(Debug, thiserror::Error)]
pub enum StateMachineError {
    #[error("controller snapshot {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("controller snapshot {path} is not valid: {reason}")]
    BadFile { path: PathBuf, reason: String },
    /// The data a leader sent does not decode as a `ReplicasInfo`.
    #[error("received controller snapshot {snapshot_id} is not valid: {reason}")]
    BadData { snapshot_id: String, reason: String },
}

type Meta = SnapshotMeta<NodeId, Node>;

/// `raft-snapshot.json` as read.
#[derive(Deserialize)]
struct SnapshotFileIn {
    meta: Meta,
    replicas: Box<RawValue>,
}

/// `raft-snapshot.json` as written.
#[derive(Serialize)]
struct SnapshotFileOut<'a> {
    meta: &'a Meta,
    replicas: &'a RawValue,
}

/// A snapshot: its meta and the JSON of its `ReplicasInfo`.
#[derive(Clone)]
struct StoredSnapshot {
    meta: Meta,
    data: Vec<u8>,
}

impl StoredSnapshot {
    fn to_snapshot(&self) -> Snapshot<TypeConfig> {
        Snapshot { meta: self.meta.clone(), snapshot: Box::new(Cursor::new(self.data.clone())) }
    }
}

/// The current snapshot and its file, shared by the state machine and the builders openraft runs beside it.
struct SnapshotSlot {
    path: PathBuf,
    current: Mutex<Option<StoredSnapshot>>,
}

impl SnapshotSlot {
    /// Makes `snapshot` the current one and writes its file, unless the current one is newer: a build that
    /// started before an install finished must not take the file back to an older state.
    fn store(&self, snapshot: StoredSnapshot) -> Result<(), StateMachineError> {
        let mut current = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if current.as_ref().is_some_and(|c| c.meta.last_log_id > snapshot.meta.last_log_id) {
            return Ok(());
        }
        let bad = |reason: String| StateMachineError::BadFile { path: self.path.clone(), reason };
        let replicas = std::str::from_utf8(&snapshot.data).map_err(|e| bad(e.to_string()))?;
        let replicas = RawValue::from_string(replicas.to_owned()).map_err(|e| bad(e.to_string()))?;
        let file = SnapshotFileOut { meta: &snapshot.meta, replicas: &replicas };
        let bytes = serde_json::to_vec(&file).map_err(|e| bad(e.to_string()))?;
        save_atomic(&self.path, &bytes).map_err(|source| StateMachineError::Io { path: self.path.clone(), source })?;
        *current = Some(snapshot);
        Ok(())
    }

    fn current(&self) -> Option<StoredSnapshot> {
        self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// The state machine openraft applies committed entries to.
pub(crate) struct StateMachine {
    replicas: ReplicasInfo,
    last_applied: Option<LogId>,
    membership: StoredMembership<NodeId, Node>,
    snapshot: Arc<SnapshotSlot>,
    /// A copy of `replicas` for the node's request handlers, republished after each applied batch and each
    /// installed snapshot: openraft owns the state machine, the handlers only read.
    view: Arc<ArcSwap<ReplicasInfo>>,
}

impl StateMachine {
    /// Opens the state machine in `dir`: from the snapshot file if there is one, else empty.
    pub(crate) fn open(dir: &Path) -> Result<StateMachine, StateMachineError> {
        fs::create_dir_all(dir).map_err(|source| StateMachineError::Io { path: dir.to_owned(), source })?;
        let path = dir.join(SNAPSHOT_FILE);
        let current = read_snapshot_file(&path)?;
        let mut machine = StateMachine {
            replicas: ReplicasInfo::new(),
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot: Arc::new(SnapshotSlot { path, current: Mutex::new(None) }),
            view: Arc::new(ArcSwap::from_pointee(ReplicasInfo::new())),
        };
        if let Some((snapshot, replicas)) = current {
            machine.restore(&snapshot.meta, replicas);
            *machine.snapshot.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(snapshot);
        }
        Ok(machine)
    }

    /// The applied state as the request handlers read it (see `view`).
    pub(crate) fn view(&self) -> Arc<ArcSwap<ReplicasInfo>> {
        Arc::clone(&self.view)
    }

    fn publish(&self) {
        self.view.store(Arc::new(self.replicas.clone()));
    }

    /// The replicated state as of `last_applied`.
    #[cfg(test)]
    pub(crate) fn replicas(&self) -> &ReplicasInfo {
        &self.replicas
    }

    #[cfg(test)]
    pub(crate) fn last_applied(&self) -> Option<LogId> {
        self.last_applied
    }

    fn restore(&mut self, meta: &Meta, replicas: ReplicasInfo) {
        self.replicas = replicas;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.publish();
    }

    fn apply_entry(&mut self, entry: &Entry) {
        self.last_applied = Some(entry.log_id);
        match &entry.payload {
            EntryPayload::Blank => {}
            EntryPayload::Normal(proposal) => {
                for event in &proposal.events {
                    self.replicas.apply(event);
                }
            }
            EntryPayload::Membership(membership) => {
                self.membership = StoredMembership::new(Some(entry.log_id), membership.clone());
            }
        }
    }
}

fn read_snapshot_file(path: &Path) -> Result<Option<(StoredSnapshot, ReplicasInfo)>, StateMachineError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateMachineError::Io { path: path.to_owned(), source }),
    };
    let bad = |e: serde_json::Error| StateMachineError::BadFile { path: path.to_owned(), reason: e.to_string() };
    let file: SnapshotFileIn = serde_json::from_slice(&bytes).map_err(bad)?;
    let replicas: ReplicasInfo = serde_json::from_str(file.replicas.get()).map_err(bad)?;
    let data = file.replicas.get().as_bytes().to_vec();
    Ok(Some((StoredSnapshot { meta: file.meta, data }, replicas)))
}

/// A snapshot id names the log position it covers, so two snapshots with one id hold the same state.
fn snapshot_id(last_applied: Option<LogId>) -> String {
    match last_applied {
        Some(id) => format!("{}-{}-{}", id.leader_id.term, id.leader_id.node_id, id.index),
        None => "empty".to_owned(),
    }
}

/// What openraft builds a snapshot from: a copy of the state taken between two applies.
pub(crate) struct SnapshotBuilder {
    replicas: ReplicasInfo,
    last_applied: Option<LogId>,
    membership: StoredMembership<NodeId, Node>,
    slot: Arc<SnapshotSlot>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let meta = Meta {
            last_log_id: self.last_applied,
            last_membership: self.membership.clone(),
            snapshot_id: snapshot_id(self.last_applied),
        };
        let data = serde_json::to_vec(&self.replicas)
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), AnyError::new(&e)))?;
        let snapshot = StoredSnapshot { meta, data };
        self.slot
            .store(snapshot.clone())
            .map_err(|e| StorageIOError::write_snapshot(Some(snapshot.meta.signature()), AnyError::new(&e)))?;
        Ok(snapshot.to_snapshot())
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership<NodeId, Node>), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let applied = entries.into_iter().map(|entry| self.apply_entry(&entry)).collect();
        self.publish();
        Ok(applied)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            replicas: self.replicas.clone(),
            last_applied: self.last_applied,
            membership: self.membership.clone(),
            slot: Arc::clone(&self.snapshot),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<Cursor<Vec<u8>>>) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let io_error = |e: StateMachineError| StorageIOError::read_snapshot(Some(meta.signature()), AnyError::new(&e));
        let replicas: ReplicasInfo = serde_json::from_slice(&data)
            .map_err(|e| StateMachineError::BadData { snapshot_id: meta.snapshot_id.clone(), reason: e.to_string() })
            .map_err(io_error)?;
        // The file first: once the state says "applied up to here", a restart must find the same.
        self.snapshot.store(StoredSnapshot { meta: meta.clone(), data }).map_err(io_error)?;
        self.restore(meta, replicas);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self.snapshot.current().map(|snapshot| snapshot.to_snapshot()))
    }
}

/// An open error as openraft's, for callers that start openraft from it.
impl From<StateMachineError> for StorageError {
    fn from(e: StateMachineError) -> Self {
        StorageIOError::read_state_machine(AnyError::new(&e)).into()
    }
}
