//! The fleet view's last results (`namesrvPeers`, [`crate::fleet`]): written whole by the fleet thread after each
//! check, read by `/metrics`, `/api/fleet` and the health verdicts. Here rather than in `fleet` so that the
//! metrics do not import the poller (which imports the state and the configuration: an import circle).

use std::fmt::Write as _;
use std::sync::Mutex;

use super::header;

/// Names listed per aspect and kind: enough to act on, bounded whatever the drift.
pub(crate) const MAX_NAMES: usize = 20;

/// How one aspect differs from a peer, counting only differences seen on two checks in a row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AspectDrift {
    /// `brokers`, `topics`, `kv` or `config`.
    pub aspect: &'static str,
    /// Every confirmed difference (the lists below hold at most `MAX_NAMES` each).
    pub count: usize,
    pub only_here: Vec<String>,
    pub only_there: Vec<String>,
    pub different: Vec<String>,
}

/// The last check of one peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PeerReport {
    pub addr: String,
    pub reachable: bool,
    pub error: Option<String>,
    /// Wall clock (ms) of the check's end; 0 before the first.
    pub checked_ms: i64,
    /// Every aspect compared, drifting or not; empty while unreachable.
    pub drift: Vec<AspectDrift>,
}

pub(crate) use crate::health::PeerDrift;

/// The fleet view as last checked.
#[derive(Debug, Default)]
pub struct FleetView {
    pub interval_ms: u64,
    /// Replaced whole per check: readers copy it out under the lock and never wait on a peer.
    peers: Mutex<Vec<PeerReport>>,
}

impl FleetView {
    pub(crate) fn new(interval_ms: u64, peers: &[String]) -> FleetView {
        let reports = peers.iter().map(|a| PeerReport { addr: a.clone(), ..PeerReport::default() }).collect();
        FleetView { interval_ms, peers: Mutex::new(reports) }
    }

    pub(crate) fn peers(&self) -> Vec<PeerReport> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The peers are now `addrs` (their names resolved again): reports of the others go, new ones start unchecked.
    pub(crate) fn set_peers(&self, addrs: &[String]) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| addrs.contains(&p.addr));
        for a in addrs {
            if !peers.iter().any(|p| &p.addr == a) {
                peers.push(PeerReport { addr: a.clone(), ..PeerReport::default() });
            }
        }
    }

    /// Replaces one peer's report (by address).
    pub(crate) fn store(&self, report: PeerReport) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        match peers.iter_mut().find(|p| p.addr == report.addr) {
            Some(p) => *p = report,
            None => peers.push(report),
        }
    }

    pub(crate) fn drift(&self) -> Vec<PeerDrift> {
        self.peers()
            .into_iter()
            // A peer not checked yet is not known to be unreachable.
            .filter(|p| p.checked_ms != 0)
            .map(|p| PeerDrift {
                peer: p.addr,
                reachable: p.reachable,
                error: p.error,
                // Only what differs: the verdict names aspects, and one that agrees is not drift.
                aspects: p.drift.iter().filter(|d| d.count > 0).map(|d| (d.aspect, d.count)).collect(),
            })
            .collect()
    }
}

/// Prometheus label value: `\`, `"` and line breaks escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub(super) fn render(o: &mut String, view: &FleetView) {
    let peers = view.peers();
    header(o, "namesrv_fleet_peer_up", "gauge", "1 when the last fleet check of the peer (namesrvPeers) answered.");
    for p in &peers {
        let _ = writeln!(o, "namesrv_fleet_peer_up{{peer=\"{}\"}} {}", label(&p.addr), u8::from(p.reachable));
    }
    let help = "Items (brokers, topics, KV entries, config keys) that differ from the peer on two checks in a row.";
    header(o, "namesrv_fleet_drift", "gauge", help);
    for p in peers.iter().filter(|p| p.reachable) {
        for d in &p.drift {
            let _ =
                writeln!(o, "namesrv_fleet_drift{{peer=\"{}\",aspect=\"{}\"}} {}", label(&p.addr), d.aspect, d.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_up_and_drift_per_peer() {
        let view = FleetView::new(30_000, &["h:1".into(), "h:2".into()]);
        view.store(PeerReport {
            addr: "h:1".into(),
            reachable: true,
            error: None,
            checked_ms: 1,
            drift: vec![AspectDrift { aspect: "kv", count: 3, ..AspectDrift::default() }],
        });
        let mut o = String::new();
        render(&mut o, &view);
        assert!(o.contains("namesrv_fleet_peer_up{peer=\"h:1\"} 1\n"), "{o}");
        assert!(o.contains("namesrv_fleet_peer_up{peer=\"h:2\"} 0\n"), "{o}");
        assert!(o.contains("namesrv_fleet_drift{peer=\"h:1\",aspect=\"kv\"} 3\n"), "{o}");
        assert!(!o.contains("peer=\"h:2\",aspect"), "{o}");
        assert_eq!(view.drift()[0].aspects, [("kv", 3)]);
    }
}
