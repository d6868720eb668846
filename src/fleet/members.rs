//! Who the fleet's other name servers are: `namesrvPeers`, where an entry may be a host name resolving to several
//! addresses (a Kubernetes headless Service), each address a peer of its own. Resolved at start and again every
//! `fleetResolveSeconds` by the fleet thread, never on a reactor; our own address is left out. What DNS answers
//! changes only whom the fleet view and the bootstrap ask and whose FLEET_* requests are answered
//! ([`crate::config::PeerIps`]); no Raft membership is ever read from here (decision 0034).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::Arc;

use crate::config::{Config, PeerIps};

/// A host name (`host:port`) to the addresses it stands for now; empty when it does not resolve. Production passes
/// [`system`]; tests pass a table, to give one name several addresses and change them.
pub(crate) type Resolver = Arc<dyn Fn(&str) -> Vec<SocketAddr> + Send + Sync>;

/// The system's resolver (getaddrinfo).
pub(crate) fn system() -> Resolver {
    Arc::new(|entry: &str| entry.to_socket_addrs().map(|a| a.collect()).unwrap_or_default())
}

/// `namesrvPeers` as addresses to ask: an IP literal as written, a host name as every address it resolves to (a
/// name that resolves to nothing stays as written, so it shows unreachable and is asked by name); blanks, duplicates
/// and our own addresses dropped.
pub(crate) fn resolve(list: &str, port: u16, resolve: &Resolver) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for entry in crate::config::fleet_peer_entries(list) {
        let addrs: Vec<SocketAddr> = match entry.parse::<SocketAddr>() {
            Ok(sa) => vec![sa],
            Err(_) => resolve(entry),
        };
        let spelled: Vec<(String, Option<SocketAddr>)> = match addrs.is_empty() {
            true => vec![(entry.to_string(), None)],
            // A literal keeps its spelling; a resolved address is written as the standard library writes it.
            false if entry.parse::<SocketAddr>().is_ok() => vec![(entry.to_string(), addrs.first().copied())],
            false => addrs.iter().map(|sa| (sa.to_string(), Some(*sa))).collect(),
        };
        for (a, sa) in spelled {
            if !out.contains(&a) && !sa.is_some_and(|sa| is_self(sa, port)) {
                out.push(a);
            }
        }
    }
    out
}

/// Whether `sa` is this server: our listening port on an address of this host. An address is ours if a socket can
/// be bound to it (no interface list needs reading).
fn is_self(sa: SocketAddr, port: u16) -> bool {
    sa.port() == port && (sa.ip().is_unspecified() || UdpSocket::bind(SocketAddr::new(sa.ip(), 0)).is_ok())
}

/// The fleet's membership as the fleet thread keeps it.
pub(crate) struct Members {
    list: String,
    port: u16,
    resolver: Resolver,
    /// The host names among `namesrvPeers` (no IP literal): nothing to re-resolve without one.
    names: Vec<String>,
    /// Where the names' addresses go for the FLEET_* checks of who asks.
    ips: PeerIps,
    pub peers: Vec<String>,
}

impl Members {
    pub(crate) fn new(config: &Config, resolver: Resolver) -> Members {
        let names = crate::config::fleet_peer_entries(&config.namesrv_peers)
            .filter(|a| a.parse::<SocketAddr>().is_err())
            .map(String::from)
            .collect();
        let (list, port) = (config.namesrv_peers.clone(), config.listen_port);
        let peers = resolve(&list, port, &resolver);
        Members { list, port, resolver, names, ips: PeerIps::default(), peers }
    }

    /// Shares the resolved addresses with `ips` (every clone of the server's configuration holds that cell).
    pub(crate) fn publishing_to(mut self, ips: PeerIps) -> Members {
        self.ips = ips;
        self.store_ips();
        self
    }

    fn store_ips(&self) {
        let mut ips: Vec<IpAddr> = self.names.iter().flat_map(|n| (self.resolver)(n)).map(|sa| sa.ip()).collect();
        ips.sort();
        ips.dedup();
        self.ips.store(ips);
    }

    /// Resolves the names again; the new peer list when it changed.
    pub(crate) fn refresh(&mut self) -> Option<Vec<String>> {
        if self.names.is_empty() {
            return None;
        }
        self.store_ips();
        let now = resolve(&self.list, self.port, &self.resolver);
        (now != self.peers).then(|| {
            self.peers = now.clone();
            now
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What a name resolves to, changed by the test between refreshes.
    type Table = Arc<Mutex<Vec<(String, Vec<SocketAddr>)>>>;

    fn table(entries: Vec<(&'static str, Vec<&'static str>)>) -> (Resolver, Table) {
        let t: Vec<(String, Vec<SocketAddr>)> =
            entries.into_iter().map(|(n, a)| (n.to_string(), a.iter().map(|s| s.parse().unwrap()).collect())).collect();
        let shared = Arc::new(Mutex::new(t));
        let read = shared.clone();
        let r: Resolver = Arc::new(move |entry: &str| {
            read.lock().unwrap().iter().find(|(n, _)| n == entry).map(|(_, a)| a.clone()).unwrap_or_default()
        });
        (r, shared)
    }

    #[test]
    fn a_name_is_every_address_it_resolves_to_but_ours() {
        let (r, _) = table(vec![("ns.svc:9876", vec!["10.255.0.1:9876", "10.255.0.2:9876", "127.0.0.1:9876"])]);
        let list = "ns.svc:9876;10.255.0.2:9876;gone.svc:9876";
        assert_eq!(resolve(list, 9876, &r), ["10.255.0.1:9876", "10.255.0.2:9876", "gone.svc:9876"]);
    }

    #[test]
    fn peers_follow_the_names_as_they_change() {
        let (r, t) = table(vec![("ns.svc:9876", vec!["10.255.0.1:9876", "10.255.0.2:9876"])]);
        let c = Config { listen_port: 9876, namesrv_peers: "ns.svc:9876".into(), ..Config::default() };
        let ips = PeerIps::default();
        let shared = Config { fleet_peer_ips: ips.clone(), ..c.clone() };
        let mut m = Members::new(&c, r).publishing_to(ips);
        assert_eq!(m.peers, ["10.255.0.1:9876", "10.255.0.2:9876"]);
        assert!(shared.is_fleet_peer("10.255.0.2".parse().unwrap()));
        assert_eq!(m.refresh(), None, "the same answer: nothing changes");

        // A rollout: one pod replaced by another.
        t.lock().unwrap()[0].1 = vec!["10.255.0.2:9876".parse().unwrap(), "10.255.0.3:9876".parse().unwrap()];
        assert_eq!(m.refresh(), Some(vec!["10.255.0.2:9876".to_string(), "10.255.0.3:9876".to_string()]));
        assert!(shared.is_fleet_peer("10.255.0.3".parse().unwrap()), "the new pod is answered");
        assert!(!shared.is_fleet_peer("10.255.0.1".parse().unwrap()), "the old one no longer");
    }
}
