//! `adminAllowList`: the networks allowed to send state-changing requests (ours; issue #7 item 4). Pure: parsing
//! and matching only; the one check that uses it is in [`crate::handlers::dispatch`].

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

/// Why an `adminAllowList` value is refused: the first entry that is neither an address nor a network.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?} is neither an IP address nor a CIDR network")]
pub struct AllowListError {
    pub entry: String,
}

/// Parsed `adminAllowList`. Empty means off: every peer may write, as with Java (no loopback default is applied).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    nets: Vec<IpNet>,
}

impl AllowList {
    /// Comma-separated CIDRs or bare addresses (IPv4 or IPv6), blanks ignored. Any bad entry fails the whole list:
    /// a security setting is never half-applied.
    pub fn parse(text: &str) -> Result<AllowList, AllowListError> {
        let mut nets = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let net = match entry.parse::<IpNet>() {
                Ok(net) => net.trunc(),
                Err(_) => match entry.parse::<IpAddr>() {
                    Ok(addr) => IpNet::from(canonical(addr)),
                    Err(_) => return Err(AllowListError { entry: entry.into() }),
                },
            };
            nets.push(net);
        }
        Ok(AllowList { nets })
    }

    /// Off: no list configured.
    pub(crate) fn is_off(&self) -> bool {
        self.nets.is_empty()
    }

    /// May `peer` send writes? Always when the list is off. An IPv4-mapped IPv6 peer (`::ffff:a.b.c.d`, what a
    /// dual-stack listener reports) is matched as the IPv4 address it is.
    pub(crate) fn allows(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        self.is_off() || self.nets.iter().any(|n| n.contains(&peer))
    }
}

fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(addr),
        v4 => v4,
    }
}

/// The normalised list, as GET_NAMESRV_CONFIG / `-p` show it and refusal remarks quote it.
impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nets.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn empty_list_is_off_and_allows_everyone() {
        let l = AllowList::parse(" , ").unwrap();
        assert!(l.is_off());
        assert!(l.allows(ip("203.0.113.9")));
        assert!(l.allows(ip("2001:db8::1")));
    }

    #[test]
    fn ipv4_networks_and_addresses() {
        let l = AllowList::parse("10.0.0.0/8, 192.168.1.7").unwrap();
        assert!(l.allows(ip("10.255.1.2")));
        assert!(l.allows(ip("192.168.1.7")));
        assert!(!l.allows(ip("192.168.1.8")));
        assert!(!l.allows(ip("11.0.0.1")));
        assert!(!l.allows(ip("127.0.0.1")), "no loopback default");
        assert_eq!(l.to_string(), "10.0.0.0/8,192.168.1.7/32");
    }

    #[test]
    fn host_bits_are_masked() {
        let l = AllowList::parse("10.1.2.3/16").unwrap();
        assert_eq!(l.to_string(), "10.1.0.0/16");
        assert!(l.allows(ip("10.1.200.1")));
        assert!(!l.allows(ip("10.2.0.1")));
    }

    #[test]
    fn ipv6_networks_and_v4_mapped_peers() {
        let l = AllowList::parse("2001:db8::/32,127.0.0.0/8").unwrap();
        assert!(l.allows(ip("2001:db8:1::5")));
        assert!(!l.allows(ip("2001:db9::1")));
        assert!(l.allows(ip("::ffff:127.0.0.1")), "a v4-mapped peer matches its IPv4 network");
        assert!(!l.allows(ip("::1")), "IPv6 loopback is not 127.0.0.0/8");
        let mapped = AllowList::parse("::ffff:10.0.0.1").unwrap();
        assert!(mapped.allows(ip("10.0.0.1")), "a v4-mapped entry is its IPv4 address");
    }

    #[test]
    fn bad_entries_are_rejected_with_the_entry_named() {
        for bad in ["10.0.0.0/33", "10.0.0", "localhost", "10.0.0.0/8;127.0.0.1", "::1/129"] {
            let e = AllowList::parse(bad).unwrap_err();
            assert!(e.to_string().contains("is neither an IP address nor a CIDR network"), "{bad}: {e}");
        }
        let e = AllowList::parse("127.0.0.1, nope").unwrap_err();
        assert_eq!(e.entry, "nope");
        assert!(e.to_string().contains("\"nope\""), "{e}");
    }
}
