//! The controller node's figures (`enableControllerInNamesrv`), written by the controller's thread and shown by
//! `/metrics` only while a controller runs. Java's controller exports the same facts (role, active brokers,
//! requests, elections by result) through OpenTelemetry.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Mutex;

use super::{header, metric};

/// Election results, as Java's `election_total{result}` names them.
pub(super) const ELECTION_RESULTS: [&str; 3] = ["new_master_elected", "keep_current_master", "no_master_elected"];

#[derive(Default)]
pub struct ControllerMetrics {
    pub enabled: AtomicBool,
    pub is_leader: AtomicBool,
    pub term: AtomicU64,
    /// The Raft leader's node id; −1 while there is none.
    pub leader: AtomicI64,
    /// Brokers in this node's live table (heartbeats are per node).
    pub alive_brokers: AtomicU64,
    /// The same, by broker group (brokerName); replaced whole at each refresh.
    pub alive_by_group: Mutex<BTreeMap<String, u64>>,
    /// Broker groups in the replicated state.
    pub groups: AtomicU64,
    pub requests: AtomicU64,
    pub request_failures: AtomicU64,
    /// By `ELECTION_RESULTS`.
    pub elections: [AtomicU64; 3],
    /// Bytes of `controllerFrameBytes` taken by big frames being read (`controller_node/room.rs`),
    pub frame_room_bytes: AtomicU64,
    /// connections waiting for room,
    pub frames_waiting: AtomicU64,
    /// and the capacity of the connections' read buffers: what the port holds for frames not whole yet.
    pub read_buffer_bytes: AtomicU64,
    /// Connections open on the controller port.
    pub connections: AtomicU64,
    /// The controller port's limit hits, by `Limit` (shown in `namesrv_limit_hits_total` with the reactors').
    pub limit_hits: [AtomicU64; crate::limit::Limit::ALL.len()],
}

impl ControllerMetrics {
    /// A peer of the controller port went over a limit.
    pub(crate) fn limit_hit(&self, limit: crate::limit::Limit) {
        // Release, as the reactors': whoever sees the count sees the log line written before it.
        self.limit_hits[limit as usize].fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Counts an election by its answer's code: SUCCESS, 2011 (the master lives) or a failure.
    pub(crate) fn election(&self, code: i32) {
        let i = match code {
            0 => 0,
            2011 => 1,
            _ => 2,
        };
        self.elections[i].fetch_add(1, Relaxed);
    }
}

pub(super) fn render(o: &mut String, c: &ControllerMetrics) {
    if !c.enabled.load(Relaxed) {
        return;
    }
    let leader = u8::from(c.is_leader.load(Relaxed));
    metric(o, "namesrv_controller_is_leader", "gauge", "1 while this controller node is the Raft leader.", leader);
    metric(o, "namesrv_controller_term", "gauge", "The Raft term this node is in.", c.term.load(Relaxed));
    let id = c.leader.load(Relaxed);
    metric(o, "namesrv_controller_leader_id", "gauge", "The Raft leader's node id (-1: none known).", id);
    let alive = c.alive_brokers.load(Relaxed);
    metric(o, "namesrv_controller_alive_brokers", "gauge", "Brokers heartbeating this controller node.", alive);
    header(o, "namesrv_controller_group_alive_brokers", "gauge", "Brokers heartbeating this node, by broker group.");
    for (group, n) in c.alive_by_group.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        let _ = writeln!(o, "namesrv_controller_group_alive_brokers{{group=\"{}\"}} {n}", label(group));
    }
    metric(o, "namesrv_controller_groups", "gauge", "Broker groups the controller knows.", c.groups.load(Relaxed));
    let requests = c.requests.load(Relaxed);
    metric(o, "namesrv_controller_requests_total", "counter", "Controller requests answered.", requests);
    let failed = c.request_failures.load(Relaxed);
    metric(o, "namesrv_controller_request_failures_total", "counter", "Answered with a failure code.", failed);
    header(o, "namesrv_controller_elections_total", "counter", "Master elections run, by result.");
    for (result, n) in ELECTION_RESULTS.iter().zip(&c.elections) {
        let _ = writeln!(o, "namesrv_controller_elections_total{{result=\"{result}\"}} {}", n.load(Relaxed));
    }
    let room = c.frame_room_bytes.load(Relaxed);
    metric(o, "namesrv_controller_frame_room_bytes", "gauge", "controllerFrameBytes taken by big frames.", room);
    let waiting = c.frames_waiting.load(Relaxed);
    metric(o, "namesrv_controller_frames_waiting", "gauge", "Connections waiting for room for a big frame.", waiting);
    let buffers = c.read_buffer_bytes.load(Relaxed);
    metric(o, "namesrv_controller_read_buffer_bytes", "gauge", "Read buffers of the controller port.", buffers);
    let open = c.connections.load(Relaxed);
    metric(o, "namesrv_controller_connections", "gauge", "Connections open on the controller port.", open);
}

/// A label value with Prometheus's escapes (group names are the brokers' input).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn group_names_cannot_break_out_of_their_label() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
