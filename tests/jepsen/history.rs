//! What the recorder saw and what the nemesis did, as one list of events with times in milliseconds since the start
//! of the run. Written as JSON lines (one event a line) under `target/tmp/jepsen/` for inspection, and read back by
//! the checker's tests from hand-made lists.

use serde::{Deserialize, Serialize};

/// A group's replica state as one controller node answered it (1004 GET_REPLICA_INFO, SUCCESS).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    /// The node asked (`n0`…).
    pub node: String,
    /// When the request was sent and when its answer arrived: a read is a point somewhere in between.
    pub sent_ms: u64,
    pub recv_ms: u64,
    /// −1 when the group has no master.
    pub master_id: i64,
    pub master_addr: String,
    pub master_epoch: i64,
    pub sss: Vec<i64>,
    pub sss_epoch: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Replica(Replica),
    /// 1004 answered SUCCESS by a node whose 1005 just before said it does not lead. Ours never do (followers
    /// answer 2007); Java's DLedger followers may answer from their own copy of the state. Kept out of rules 1–4:
    /// a broker reads 1004 only from the node 1005 names leader, and the rules are about what brokers can see.
    FollowerRead(Replica),
    /// 1005 from one node: whom it names leader, and whether it says it leads.
    Meta {
        node: String,
        at_ms: u64,
        leader: Option<String>,
        is_leader: bool,
    },
    /// A node that did not answer (cut, paused, down) or answered with an error code, and what was asked.
    NoAnswer {
        node: String,
        at_ms: u64,
        what: String,
    },
    /// The name server's view of the group (106): the address registered as brokerId 0, if any.
    Route {
        at_ms: u64,
        master_addr: Option<String>,
    },
    /// A fault began.
    FaultStart {
        at_ms: u64,
        nemesis: String,
        target: String,
    },
    /// A fault was healed (the link up, the process continued or started again).
    FaultHeal {
        at_ms: u64,
        nemesis: String,
        target: String,
    },
}

impl Event {
    /// The time the event is ordered by (a read's answer time).
    pub fn at_ms(&self) -> u64 {
        match self {
            Event::Replica(r) | Event::FollowerRead(r) => r.recv_ms,
            Event::Meta { at_ms, .. }
            | Event::NoAnswer { at_ms, .. }
            | Event::Route { at_ms, .. }
            | Event::FaultStart { at_ms, .. }
            | Event::FaultHeal { at_ms, .. } => *at_ms,
        }
    }
}

/// One JSON object a line.
pub fn to_json_lines(events: &[Event]) -> String {
    events.iter().map(|e| serde_json::to_string(e).expect("events serialise") + "\n").collect()
}
