//! The fleet view (`namesrvPeers`, decision 0029): name servers share nothing, so a write that reached only some of
//! them (apache/rocketmq #7255), a broker that registered with one and not another, or a switch set on one host
//! only go unseen until a client trips on them. Every `fleetCheckSeconds` the thread `namesrv-fleet` asks each
//! other name server of the fleet what it knows — brokers, topics, KV, the config keys that should agree
//! ([`crate::fleet_facts`]) — compares it with our snapshot, and publishes the differences seen on two checks in a row
//! ([`crate::metrics::FleetView`]: `/api/fleet`, `namesrv_fleet_*`, the health verdicts).
//!
//! Cheap for the peers: one FLEET_FACTS request per peer per check to our servers (digests in, items only where
//! they differ out: [`crate::fleet_facts::wire`]), the standard read codes to Java's (106, 206, 319 and one 219 per KV namespace we
//! know). It never blocks the writer or a reactor: it reads our snapshot like any reader, and every wait on a peer
//! is bounded (`peer`). Not a critical thread: a fleet view that stopped leaves the name server serving.

pub(crate) mod bootstrap;
pub(crate) mod members;
pub(crate) mod peer;

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use crate::acl::signature;
use crate::clock::Clock;
use crate::config::Config;
use crate::fleet_facts::wire::Told;
use crate::fleet_facts::{self as facts, Aspect, Diff, Facts};
use crate::metrics::{AspectDrift, FleetView, PeerReport, FLEET_MAX_NAMES};
use crate::state::Snapshot;

/// Differences remembered per peer and aspect to confirm them on the next check; past this, the rest are
/// reported at once (a drift that large is no registration race).
const MAX_REMEMBERED: usize = 100_000;
/// A peer that answered REQUEST_CODE_NOT_SUPPORTED is asked FLEET_FACTS again after this many checks, in case it
/// was upgraded to ours.
const REPROBE_EVERY: u32 = 20;

/// `namesrvPeers` as addresses to ask now (`members::resolve` with the system's resolver): `;`- or `,`-separated
/// `host:port`, a host name standing for every address it resolves to, blanks and duplicates dropped, our own
/// address left out.
pub(crate) fn peers(config: &Config) -> Vec<String> {
    members::resolve(&config.namesrv_peers, config.listen_port, &members::system())
}

/// `innerClientAuthenticationCredentials`, what requests to peers are signed with (`None`: unsigned).
pub(crate) fn signing(config: &Config) -> Option<(String, signature::Key)> {
    match crate::acl::users::inner_credentials(&config.inner_client_authentication_credentials) {
        Ok(Some((ak, sk))) => Some((ak, signature::Key::new(sk.as_bytes()))),
        Ok(None) => None,
        Err(e) => {
            warn!(error = %e, "innerClientAuthenticationCredentials unreadable; peers are asked unsigned");
            None
        }
    }
}

/// What each peer's differences looked like at the last check, to confirm them (hashes of aspect, kind, name).
#[derive(Default)]
struct Seen {
    last: [HashSet<u64>; 4],
    /// Known to answer only the standard codes, and checks since.
    java: Option<u32>,
    /// What the log last said: the drift counts, or that the peer did not answer (`None`), so that it speaks
    /// when something changes rather than every check.
    logged: Option<Option<Vec<usize>>>,
}

/// The fleet thread.
pub(crate) struct Fleet {
    /// The peers, resolved again every `resolve_every` (`fleetResolveSeconds`).
    pub members: members::Members,
    pub resolve_every: Duration,
    pub interval: Duration,
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub view: Arc<FleetView>,
    pub clock: Arc<dyn Clock>,
    /// `innerClientAuthenticationCredentials`: what requests are signed with when peers need accounts.
    pub sign: Option<(String, signature::Key)>,
}

impl Fleet {
    /// The thread's state for `config`, or `None` without peers.
    pub(crate) fn from_config(
        config: &Config,
        cell: Arc<ArcSwap<Snapshot>>,
        clock: Arc<dyn Clock>,
        resolver: members::Resolver,
    ) -> Option<(Fleet, Arc<FleetView>)> {
        let members = members::Members::new(config, resolver).publishing_to(config.fleet_peer_ips.clone());
        let peers = &members.peers;
        if peers.is_empty() {
            if !config.namesrv_peers.trim().is_empty() {
                info!("namesrvPeers names only this server: the fleet view is off");
            }
            return None;
        }
        let interval = Duration::from_secs(config.fleet_check_seconds.max(1));
        let view = Arc::new(FleetView::new(interval.as_millis() as u64, peers));
        let sign = signing(config);
        info!(peers = ?peers, interval_s = interval.as_secs(), signed = sign.is_some(), "fleet view on");
        let resolve_every = Duration::from_secs(config.fleet_resolve_seconds.max(1));
        Some((Fleet { members, resolve_every, interval, cell, view: view.clone(), clock, sign }, view))
    }

    /// Checks at once, then every `interval`, and resolves the peers' names every `resolve_every`, until `stop`
    /// is signalled or dropped.
    pub(crate) fn run(mut self, stop: Receiver<()>) {
        let mut seen: HashMap<String, Seen> = HashMap::new();
        let (mut next_check, mut next_resolve) = (Instant::now(), Instant::now() + self.resolve_every);
        loop {
            if Instant::now() >= next_resolve {
                next_resolve = Instant::now() + self.resolve_every;
                if let Some(peers) = self.members.refresh() {
                    info!(peers = ?peers, "fleet: the peers' names resolve to other addresses now");
                    seen.retain(|addr, _| peers.contains(addr));
                    self.view.set_peers(&peers);
                }
            }
            if Instant::now() >= next_check {
                for addr in &self.members.peers {
                    // Looked for between peers, so a stop waits for one peer's timeouts at most.
                    if !matches!(stop.try_recv(), Err(TryRecvError::Empty)) {
                        return;
                    }
                    let report = self.check(addr, seen.entry(addr.clone()).or_default());
                    self.view.store(report);
                }
                next_check = Instant::now() + self.interval;
            }
            match stop.recv_timeout(next_check.min(next_resolve).saturating_duration_since(Instant::now())) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        }
    }

    fn check(&self, addr: &str, seen: &mut Seen) -> PeerReport {
        let ours = Facts::from_snapshot(&self.cell.load());
        let java = seen.java.is_some_and(|n| n % REPROBE_EVERY != 0);
        let result = peer::check(addr, &ours, java, self.sign.as_ref());
        let checked_ms = self.clock.now_ms();
        match result {
            Ok(answer) => {
                seen.java = if answer.ours { None } else { Some(seen.java.map_or(1, |n| n + 1)) };
                debug!(
                    peer = addr,
                    requests = answer.requests,
                    bytes = answer.bytes,
                    ours = answer.ours,
                    "fleet check"
                );
                let mut drift = Vec::new();
                for (aspect, told) in Aspect::ALL.into_iter().zip(answer.told) {
                    let diff = match (told, ours.get(aspect)) {
                        // A config key one side does not list is one its version does not have: not drift.
                        (Told::Items(theirs), Some(here)) if aspect == Aspect::Config => {
                            Diff { different: facts::compare(here, &theirs).different, ..Diff::default() }
                        }
                        (Told::Items(theirs), Some(here)) => facts::compare(here, &theirs),
                        (Told::Same, _) => Diff::default(),
                        // Not told (or not known here): nothing to compare, nothing remembered.
                        _ => {
                            seen.last[aspect.index()].clear();
                            continue;
                        }
                    };
                    drift.push(confirm(aspect, &diff, &mut seen.last[aspect.index()]));
                }
                let counts: Vec<usize> = drift.iter().map(|d| d.count).collect();
                if seen.logged.as_ref() != Some(&Some(counts.clone())) {
                    let said: Vec<String> =
                        drift.iter().filter(|d| d.count > 0).map(|d| format!("{} {}", d.aspect, d.count)).collect();
                    match said.is_empty() {
                        true => info!(peer = addr, "fleet: this name server agrees with the peer"),
                        false => {
                            warn!(peer = addr, drift = %said.join(", "), "fleet: this name server differs from a peer")
                        }
                    }
                    seen.logged = Some(Some(counts));
                }
                PeerReport { addr: addr.to_string(), reachable: true, error: None, checked_ms, drift }
            }
            Err(e) => {
                // Confirmation needs two answered checks in a row.
                seen.last.iter_mut().for_each(HashSet::clear);
                if seen.logged != Some(None) {
                    warn!(peer = addr, error = %e, "fleet: cannot compare with a peer");
                    seen.logged = Some(None);
                }
                PeerReport {
                    addr: addr.to_string(),
                    reachable: false,
                    error: Some(e.to_string()),
                    checked_ms,
                    drift: vec![],
                }
            }
        }
    }
}

fn key(aspect: Aspect, kind: u8, name: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (aspect, kind, name).hash(&mut h);
    h.finish()
}

/// The differences of `diff` that were also there at the last check (`last`, replaced by this check's). A broker
/// that registered with one server a moment before the other, or a KV write on its way to each, is gone by the
/// next check; drift stays.
fn confirm(aspect: Aspect, diff: &Diff, last: &mut HashSet<u64>) -> AspectDrift {
    let mut now = HashSet::new();
    let mut out = AspectDrift { aspect: aspect.name(), ..AspectDrift::default() };
    let lists: [(&Vec<String>, &mut Vec<String>); 3] = [
        (&diff.only_here, &mut out.only_here),
        (&diff.only_there, &mut out.only_there),
        (&diff.different, &mut out.different),
    ];
    let mut count = 0;
    for (kind, (names, shown)) in lists.into_iter().enumerate() {
        for name in names {
            let k = key(aspect, kind as u8, name);
            // Past the memory bound a difference counts at once: it cannot be a race of a few items.
            let confirmed = last.contains(&k) || now.len() >= MAX_REMEMBERED;
            if now.len() < MAX_REMEMBERED {
                now.insert(k);
            }
            if confirmed {
                count += 1;
                if shown.len() < FLEET_MAX_NAMES {
                    shown.push(name.clone());
                }
            }
        }
    }
    out.count = count;
    *last = now;
    out
}

/// `/api/fleet` (the console's fleet page reads this shape; docs/operations.md).
pub(crate) fn api_json(view: Option<&FleetView>) -> Value {
    let Some(view) = view else {
        return json!({ "enabled": false, "intervalMs": 0, "peers": [] });
    };
    let peers: Vec<Value> = view
        .peers()
        .into_iter()
        .map(|p| {
            let drift: Vec<Value> = p
                .drift
                .iter()
                .map(|d| {
                    json!({
                        "aspect": d.aspect,
                        "count": d.count,
                        "onlyHere": d.only_here,
                        "onlyThere": d.only_there,
                        "different": d.different,
                    })
                })
                .collect();
            let mut v = json!({ "addr": p.addr, "reachable": p.reachable, "checkedMs": p.checked_ms, "drift": drift });
            if let Some(e) = p.error {
                v["error"] = json!(e);
            }
            v
        })
        .collect();
    json!({ "enabled": true, "intervalMs": view.interval_ms, "peers": peers })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(only_here: &[&str]) -> Diff {
        Diff { only_here: only_here.iter().map(|s| s.to_string()).collect(), ..Diff::default() }
    }

    #[test]
    fn a_difference_counts_from_its_second_check() {
        let mut last = HashSet::new();
        let first = confirm(Aspect::Kv, &diff(&["ns/a"]), &mut last);
        assert_eq!(first.count, 0, "a write on its way is no drift yet");
        let second = confirm(Aspect::Kv, &diff(&["ns/a", "ns/b"]), &mut last);
        assert_eq!((second.count, second.only_here.clone()), (1, vec!["ns/a".to_string()]));
        let third = confirm(Aspect::Kv, &diff(&["ns/b"]), &mut last);
        assert_eq!((third.count, third.only_here), (1, vec!["ns/b".to_string()]));
        assert_eq!(confirm(Aspect::Kv, &Diff::default(), &mut last).count, 0, "gone at once when it is gone");
    }

    #[test]
    fn lists_are_capped_but_counts_are_not() {
        let names: Vec<String> = (0..50).map(|i| format!("t{i}")).collect();
        let d = Diff { only_there: names, ..Diff::default() };
        let mut last = HashSet::new();
        confirm(Aspect::Topics, &d, &mut last);
        let out = confirm(Aspect::Topics, &d, &mut last);
        assert_eq!((out.count, out.only_there.len()), (50, FLEET_MAX_NAMES));
    }

    #[test]
    fn peers_are_split_deduplicated_and_skip_ourselves() {
        let mut c = Config { listen_port: 9876, ..Config::default() };
        c.namesrv_peers = " 10.255.0.1:9876;10.255.0.2:9876 , 10.255.0.1:9876;127.0.0.1:9876;127.0.0.1:9877".into();
        assert_eq!(peers(&c), ["10.255.0.1:9876", "10.255.0.2:9876", "127.0.0.1:9877"]);
    }

    #[test]
    fn api_shape_when_off() {
        assert_eq!(api_json(None), json!({ "enabled": false, "intervalMs": 0, "peers": [] }));
    }
}
