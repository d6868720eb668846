//! The addresses of `namesrvPeers`, as FLEET_FACTS (32047) checks them: with ACL off, only the fleet's other name
//! servers are answered (the request builds a view of everything the server holds; docs/security.md). A peer
//! written as an IP literal is matched as written; a host name is resolved off the reactors, by the fleet thread at
//! start and every `fleetResolveSeconds` (`fleet::members`), into this cell, which every clone of the configuration shares (318 clones
//! it) so that a reactor matches an address with one load and no lookup.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::Config;

/// The resolved addresses of the host names among `namesrvPeers`.
#[derive(Clone, Default)]
pub struct PeerIps(Arc<ArcSwap<Vec<IpAddr>>>);

impl PeerIps {
    /// Replaces the resolved addresses (the fleet thread).
    pub(crate) fn store(&self, ips: Vec<IpAddr>) {
        self.0.store(Arc::new(ips));
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.0.load().contains(&ip)
    }
}

/// Not part of what a configuration says: every two are equal, and it prints as a count.
impl PartialEq for PeerIps {
    fn eq(&self, _: &PeerIps) -> bool {
        true
    }
}

impl std::fmt::Debug for PeerIps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerIps({} resolved)", self.0.load().len())
    }
}

/// The `namesrvPeers` entries, split as [`crate::fleet::peers`] splits them.
pub(crate) fn entries(list: &str) -> impl Iterator<Item = &str> {
    list.split([';', ',']).map(str::trim).filter(|a| !a.is_empty())
}

/// An IPv6 address compared as the IPv4 one it maps, if it maps one: a dual-stack listener sees `::ffff:a.b.c.d`.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl Config {
    /// Whether `ip` is one of `namesrvPeers`: an IP literal there, or a resolved host name. No lookup here.
    pub(crate) fn is_fleet_peer(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        entries(&self.namesrv_peers).any(|a| a.parse::<SocketAddr>().is_ok_and(|sa| canonical(sa.ip()) == ip))
            || self.fleet_peer_ips.contains(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_match_as_written_and_names_once_resolved() {
        let c = Config { namesrv_peers: "10.0.0.1:9876; [::1]:9876,ns3.example:9876".into(), ..Config::default() };
        assert!(c.is_fleet_peer("10.0.0.1".parse().unwrap()));
        assert!(c.is_fleet_peer("::ffff:10.0.0.1".parse().unwrap()));
        assert!(c.is_fleet_peer("::1".parse().unwrap()));
        assert!(!c.is_fleet_peer("10.0.0.2".parse().unwrap()));
        let shared = c.clone();
        c.fleet_peer_ips.store(vec!["10.0.0.3".parse().unwrap()]);
        assert!(shared.is_fleet_peer("10.0.0.3".parse().unwrap()), "clones share the resolved addresses");
        assert_eq!(c, Config { fleet_peer_ips: PeerIps::default(), ..c.clone() });
    }
}
