//! The controller (RIP-44): brokers with `enableControllerMode=true` register here, get their broker ids, and
//! elect and fence their masters through it. This module is its pure core — the replicated state, the events that
//! change it, the leader's validation of each request, the election policy and the local broker live table — as
//! Java's `controller` module has them (see docs/decisions/0013-controller.md).
//!
//! ```text
//!  request ──► leader: ReplicasInfo::<request>(&req, &liveness) ──► ControllerResult { response, events, error }
//!                                                                          │ events appended to the Raft log
//!  every node, in log order: ReplicasInfo::apply(&event) ◄────────────────┘ then the response is sent
//!  904 heartbeats ──► HeartbeatTable (per node, never replicated) ──► scan / on_connection_closed ──► lost_master?
//! ```
//!
//! - `replicas`: `ReplicasInfo` (Java's replica and sync-state tables) and `apply`, the only mutation.
//! - `event`: the replicated events (serde: they are the log entries).
//! - `leader`: per request, the checks and the events (Java `ReplicasInfoManager`'s request methods).
//! - `request`: requests and answers as values, and `ControllerResult`.
//! - `elect`: who becomes master (Java `DefaultElectPolicy`).
//! - `liveness`: the trait validation reads liveness through; `heartbeat`: the live table behind it.
//! - `error`: `ControllerError`, Java's codes (2000–2016) and remarks.
//! - `raft`: the Raft log and state machine on openraft (files); the only submodule that does I/O.
//!
//! Must never (all but `raft`): do I/O, read a clock (time is passed in), start threads, or let `apply` read
//! anything but the state and the event (every node must reach the same state from the same log). It shares
//! nothing with the name server's route tables.

pub(crate) mod elect;
pub(crate) mod error;
pub(crate) mod event;
pub(crate) mod heartbeat;
pub(crate) mod leader;
pub(crate) mod liveness;
pub(crate) mod raft;
pub(crate) mod replicas;
pub(crate) mod request;

#[cfg(test)]
mod tests;

pub(crate) use event::BrokerId;
#[cfg(test)]
pub(crate) use event::Event;
pub(crate) use heartbeat::HeartbeatTable;
pub(crate) use replicas::ReplicasInfo;
pub(crate) use request::ControllerResult;
