//! Health verdicts: what is wrong with the cluster as this name server sees it, in words an operator acts on. The
//! one place the console (`/api/health`), `/metrics` (`namesrv_health_*`) and `mqnamesrv admin health` take them
//! from. Pure: the route view, the live table, the recent removals and the fleet's drift are passed in, with the time.
//!
//! What counts as wrong (docs/operations.md, "Health verdicts"):
//! - `no_master` (critical): a broker group with members but no master (id 0); producers cannot write to it. With
//!   `supportActingMaster` on and the group's brokers enabling acting master, clients are shown a slave as master for
//!   reads: `acting_master` (warning) instead.
//! - `write_wiped` (warning): a group with a master whose every queue lost the write bit (`wipeWritePerm`).
//! - `heartbeat_late` (warning past half the broker's timeout, critical past all of it): a broker whose heartbeats
//!   stopped arriving; it is evicted at the next scan after the timeout.
//! - `brokers_lost` (warning): brokers that left a cluster within `healthLossWindowSeconds` and are not back.
//! - `no_writable_queue` (critical if a group without master is the cause, else warning): topics no producer can
//!   send to.
//! - `fleet_drift` (warning): another name server of the fleet (`namesrvPeers`) that is unreachable or knows
//!   different brokers, topics, KV or config.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;

use crate::model::ClusterInfo;
use crate::state::liveness::{LiveRow, Removal};
use crate::state::routes::WriteCensus;
use crate::state::RouteView;

/// How many topic names a verdict carries (the count is always whole).
pub const TOPIC_SAMPLE: usize = 20;

/// The kinds, in the order verdicts are listed within a severity and metrics are printed.
pub(crate) const KINDS: [Kind; 7] = [
    Kind::NoMaster,
    Kind::ActingMaster,
    Kind::WriteWiped,
    Kind::HeartbeatLate,
    Kind::BrokersLost,
    Kind::NoWritableQueue,
    Kind::FleetDrift,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    NoMaster,
    ActingMaster,
    WriteWiped,
    HeartbeatLate,
    BrokersLost,
    NoWritableQueue,
    FleetDrift,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::NoMaster => "no_master",
            Kind::ActingMaster => "acting_master",
            Kind::WriteWiped => "write_wiped",
            Kind::HeartbeatLate => "heartbeat_late",
            Kind::BrokersLost => "brokers_lost",
            Kind::NoWritableQueue => "no_writable_queue",
            Kind::FleetDrift => "fleet_drift",
        }
    }
}

/// Ordered: the status is the greatest severity of any verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Ok,
    Warning,
    Critical,
}

impl Severity {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One thing that is wrong, with what it concerns (for links and badges).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub kind: Kind,
    pub severity: Severity,
    /// One line for a person: what is wrong and what it means.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// At most `TOPIC_SAMPLE` of the topics concerned, in name order.
    pub topics: Vec<String>,
    pub topic_count: usize,
}

impl Verdict {
    fn new(kind: Kind, severity: Severity, title: String) -> Verdict {
        Verdict { kind, severity, title, cluster: None, broker_name: None, addr: None, topics: vec![], topic_count: 0 }
    }

    fn group(mut self, cluster: &str, broker_name: &str) -> Verdict {
        self.cluster = Some(cluster.to_string());
        self.broker_name = Some(broker_name.to_string());
        self
    }

    fn topics<'a>(mut self, all: impl ExactSizeIterator<Item = &'a Arc<str>>) -> Verdict {
        self.topic_count = all.len();
        self.topics = all.take(TOPIC_SAMPLE).map(|t| t.to_string()).collect();
        self
    }
}

/// Another name server of the fleet as the fleet check last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerDrift {
    pub peer: String,
    pub reachable: bool,
    pub error: Option<String>,
    /// (aspect, how many items differ), only aspects that differ.
    pub aspects: Vec<(&'static str, usize)>,
}

/// What the verdicts are computed from.
pub struct Inputs<'a> {
    pub view: &'a RouteView,
    /// `view.write_census(TOPIC_SAMPLE)`: passed in so that a caller can keep it for as long as the view lasts.
    pub census: &'a WriteCensus,
    pub support_acting_master: bool,
    pub live: &'a [LiveRow],
    /// Oldest first.
    pub removed: &'a [Removal],
    pub fleet: &'a [PeerDrift],
    pub now_ms: i64,
    /// `healthLossWindowSeconds` in ms: how long a lost broker stays a verdict.
    pub loss_window_ms: i64,
}

/// Every verdict, most severe first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub now_ms: i64,
    pub status: Severity,
    pub verdicts: Vec<Verdict>,
    /// kind → how many verdicts of it (every kind, zeros too).
    pub counts: BTreeMap<&'static str, usize>,
    /// Topics no producer can write to (the `no_writable_queue` verdict's count, also when it is 0).
    pub unwritable_topics: usize,
}

/// The verdicts for `inputs`: O(brokers + topic groups), the census (O(topics)) being passed in.
pub fn verdicts(inputs: &Inputs) -> Health {
    let info = inputs.view.cluster_info();
    let census = inputs.census;
    let mut out = Vec::new();
    groups(inputs, &info, census, &mut out);
    heartbeats(inputs, &info, &mut out);
    losses(inputs, &mut out);
    if census.unwritable > 0 {
        let (severity, why) = if census.unwritable_headless > 0 {
            (
                Severity::Critical,
                format!(" ({} of them because their broker groups have no master)", census.unwritable_headless),
            )
        } else {
            (Severity::Warning, " (their queues are read-only)".to_string())
        };
        let title = format!("{} topics have no queue a producer can write to{why}", census.unwritable);
        let mut v = Verdict::new(Kind::NoWritableQueue, severity, title);
        v.topics = census.unwritable_sample.iter().map(|t| t.to_string()).collect();
        v.topic_count = census.unwritable;
        out.push(v);
    }
    fleet(inputs.fleet, &mut out);
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.kind.cmp(&b.kind)));
    let mut counts: BTreeMap<&'static str, usize> = KINDS.iter().map(|k| (k.name(), 0)).collect();
    for v in &out {
        *counts.entry(v.kind.name()).or_default() += 1;
    }
    let status = out.iter().map(|v| v.severity).max().unwrap_or(Severity::Ok);
    Health { now_ms: inputs.now_ms, status, verdicts: out, counts, unwritable_topics: census.unwritable }
}

/// Groups without a master, and groups whose writes were wiped.
fn groups(inputs: &Inputs, info: &ClusterInfo, census: &WriteCensus, out: &mut Vec<Verdict>) {
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(bd) = info.broker_addr_table.get(name) else { continue };
            let topics = inputs.view.broker_topics(name);
            if bd.broker_addrs.is_empty() {
                continue;
            }
            if !bd.broker_addrs.contains_key(&0) {
                let members: Vec<String> = bd.broker_addrs.iter().map(|(id, a)| format!("id {id} at {a}")).collect();
                let members = members.join(", ");
                let v = if bd.enable_acting_master && inputs.support_acting_master {
                    let (id, addr) = bd.min_broker().map(|(id, a)| (id, a.to_string())).unwrap_or_default();
                    let title = format!(
                        "broker group {name} has no master; its slave id {id} at {addr} acts as master for reads, \
                         producers cannot write to it"
                    );
                    Verdict::new(Kind::ActingMaster, Severity::Warning, title)
                } else {
                    let title = format!(
                        "broker group {name} has no master (only {members}): producers cannot write to its {} topics",
                        topics.len()
                    );
                    Verdict::new(Kind::NoMaster, Severity::Critical, title)
                };
                out.push(v.group(cluster, name).topics(topics.iter()));
                continue;
            }
            if let Some(g) = census.groups.get(name) {
                if g.queues > 0 && g.writable == 0 {
                    let title = format!(
                        "write permission of broker group {name} is wiped: its {} topics are read-only \
                         (mqadmin addWritePerm -b {name} gives it back)",
                        g.queues
                    );
                    out.push(
                        Verdict::new(Kind::WriteWiped, Severity::Warning, title)
                            .group(cluster, name)
                            .topics(topics.iter()),
                    );
                }
            }
        }
    }
}

/// Brokers whose heartbeats are late: past half their timeout (warning) or all of it (critical, evicted at the next
/// scan).
fn heartbeats(inputs: &Inputs, info: &ClusterInfo, out: &mut Vec<Verdict>) {
    // addr → (broker name, id), from the route tables: the live table knows only cluster and address.
    let mut members: HashMap<&str, (&str, i64)> = HashMap::new();
    for bd in info.broker_addr_table.values() {
        for (id, addr) in &bd.broker_addrs {
            members.insert(addr.as_str(), (&bd.broker_name, *id));
        }
    }
    let mut rows: Vec<&LiveRow> = inputs.live.iter().collect();
    rows.sort_by(|a, b| (&a.cluster, &a.addr).cmp(&(&b.cluster, &b.addr)));
    for row in rows {
        let age = inputs.now_ms.saturating_sub(row.last_update_ms).max(0);
        if row.timeout_ms <= 0 || age * 2 <= row.timeout_ms {
            continue;
        }
        let severity = if age > row.timeout_ms { Severity::Critical } else { Severity::Warning };
        let (name, id) = members.get(&*row.addr).copied().unwrap_or(("?", -1));
        let title = format!(
            "broker {name} (id {id}) at {} sent its last heartbeat {} s ago; it is dropped after {} s",
            row.addr,
            age / 1000,
            row.timeout_ms / 1000
        );
        let mut v = Verdict::new(Kind::HeartbeatLate, severity, title);
        v.cluster = Some(row.cluster.to_string());
        v.broker_name = (name != "?").then(|| name.to_string());
        v.addr = Some(row.addr.to_string());
        out.push(v);
    }
}

/// Per cluster: brokers removed within the window that are not live again.
fn losses(inputs: &Inputs, out: &mut Vec<Verdict>) {
    let live: std::collections::HashSet<(&str, &str)> = inputs.live.iter().map(|r| (&*r.cluster, &*r.addr)).collect();
    // (cluster, addr) → its latest removal within the window.
    let mut latest: BTreeMap<(&str, &str), &Removal> = BTreeMap::new();
    for r in inputs.removed {
        if inputs.now_ms.saturating_sub(r.at_ms) <= inputs.loss_window_ms && !live.contains(&(&*r.cluster, &*r.addr)) {
            latest.insert((&*r.cluster, &*r.addr), r);
        }
    }
    let mut by_cluster: BTreeMap<&str, Vec<&Removal>> = BTreeMap::new();
    for ((cluster, _), r) in latest {
        by_cluster.entry(cluster).or_default().push(r);
    }
    for (cluster, gone) in by_cluster {
        let list: Vec<String> = gone
            .iter()
            .map(|r| {
                let ago = inputs.now_ms.saturating_sub(r.at_ms).max(0) / 1000;
                format!(
                    "{} (id {}) at {}, {} {ago} s ago",
                    r.broker_name,
                    r.broker_id,
                    r.addr,
                    r.cause.replace('_', " ")
                )
            })
            .collect();
        let title = format!(
            "cluster {cluster} lost {} broker{} in the last {} min: {}",
            gone.len(),
            if gone.len() == 1 { "" } else { "s" },
            inputs.loss_window_ms / 60_000,
            list.join("; ")
        );
        let mut v = Verdict::new(Kind::BrokersLost, Severity::Warning, title);
        v.cluster = Some(cluster.to_string());
        if let [one] = gone.as_slice() {
            v.broker_name = Some(one.broker_name.to_string());
            v.addr = Some(one.addr.to_string());
        }
        out.push(v);
    }
}

fn fleet(peers: &[PeerDrift], out: &mut Vec<Verdict>) {
    for p in peers {
        let title = if !p.reachable {
            format!("name server {} of the fleet cannot be read: {}", p.peer, p.error.as_deref().unwrap_or("no answer"))
        } else if p.aspects.is_empty() {
            continue;
        } else {
            let what: Vec<String> = p.aspects.iter().map(|(a, n)| format!("{n} {a}")).collect();
            format!("name server {} of the fleet differs from this one: {}", p.peer, what.join(", "))
        };
        let mut v = Verdict::new(Kind::FleetDrift, Severity::Warning, title);
        v.addr = Some(p.peer.clone());
        out.push(v);
    }
}

/// The verdicts as Prometheus gauges: how many of each kind and severity, the status, the unwritable topics.
pub(crate) fn render_metrics(h: &Health, o: &mut String) {
    let _ = writeln!(o, "# HELP namesrv_health_verdicts Health verdicts now, by kind (docs/operations.md).");
    let _ = writeln!(o, "# TYPE namesrv_health_verdicts gauge");
    for kind in KINDS {
        for severity in [Severity::Warning, Severity::Critical] {
            let n = h.verdicts.iter().filter(|v| v.kind == kind && v.severity == severity).count();
            let _ =
                writeln!(o, "namesrv_health_verdicts{{kind=\"{}\",severity=\"{}\"}} {n}", kind.name(), severity.name());
        }
    }
    let _ = writeln!(o, "# HELP namesrv_health_status 0 ok, 1 warning, 2 critical: the worst verdict.");
    let _ = writeln!(o, "# TYPE namesrv_health_status gauge");
    let _ = writeln!(o, "namesrv_health_status {}", h.status as u8);
    let _ = writeln!(o, "# HELP namesrv_health_unwritable_topics Topics with no queue a producer can write to.");
    let _ = writeln!(o, "# TYPE namesrv_health_unwritable_topics gauge");
    let _ = writeln!(o, "namesrv_health_unwritable_topics {}", h.unwritable_topics);
}

#[cfg(test)]
mod tests;
