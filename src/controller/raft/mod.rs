//! The controller's Raft storage, on openraft 0.9 (never home-made consensus): the log store and the state machine
//! openraft drives, and the type configuration tying them to the pure core (docs/decisions/0013-controller.md).
//!
//! ```text
//!  leader: validate ──► Proposal { events } ──► client_write ──► LogStore::append (fsync) ──► replicate
//!  every node, once committed: StateMachine::apply ──► ReplicasInfo::apply(&event), in log order
//!  snapshot = ReplicasInfo (serde) + last applied log id + membership, one file, replaced atomically
//! ```
//!
//! - `log_store`: the append-only log file, the vote and the committed/purged ids (`LogStore`).
//! - `state_machine`: `ReplicasInfo` under openraft, and its snapshot file (`StateMachine`).
//!
//! This is the one part of `controller` that does I/O (files under the controller's directory, later
//! `controllerStorePath`). It runs on the controller's own threads: nothing on the name server's path (reactor,
//! handlers, writer, state) may import it or openraft.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

use super::event::Event;

pub(crate) mod log_store;
pub(crate) mod state_machine;

#[cfg(test)]
mod tests;

pub(crate) use log_store::{LogStore, LogStoreError, RaftLog};
pub(crate) use state_machine::{StateMachine, StateMachineError};

/// A controller node's id in the Raft group.
pub(crate) type NodeId = u64;

/// What a controller node is to its peers: its address (`BasicNode { addr: "ip:port" }`).
pub(crate) type Node = openraft::BasicNode;

/// What one log entry carries: the events the leader produced for one request. They go in as one entry so a
/// request's events are applied together or not at all (Java's `ControllerResult` events are one batch too).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Proposal {
    pub events: Vec<Event>,
    /// The leader's wall clock (ms since the epoch) when it validated the request. Never applied — replaying the
    /// log needs no clock — but kept in the entry so that when an election (or any change) happened can be read
    /// from the replicated log itself, to the millisecond (the fault test judges acknowledgements against it,
    /// docs/reliability.md). Optional both ways: entries written before it decode as `None`, and a node that does
    /// not know it ignores it (no `deny_unknown_fields`), so nodes of both versions share one log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Proposal({} events)", self.events.len())
    }
}

openraft::declare_raft_types!(
    /// The controller's openraft types. The response is `()`: the leader built its answer when it validated the
    /// request, and openraft's write response already carries the entry's log id.
    pub(crate) TypeConfig:
        D = Proposal,
        R = (),
        NodeId = NodeId,
        Node = Node,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// One entry of the controller's log.
pub(crate) type Entry = openraft::Entry<TypeConfig>;
/// A log position: (term, leader, index).
pub(crate) type LogId = openraft::LogId<NodeId>;
/// What openraft's storage calls return on failure.
pub(crate) type StorageError = openraft::StorageError<NodeId>;
