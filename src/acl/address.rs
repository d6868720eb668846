//! The address patterns of `plain_acl.yml` (`globalWhiteRemoteAddresses`, an account's `whiteRemoteAddress`), with
//! the forms Java's `RemoteAddressStrategyFactory` accepts: blank (matches nobody), `*` / `*.*.*.*` /
//! `*:*:*:*:*:*:*:*` (everybody), `a.b.c.{1,2,3}` and `a,b,c` (a set), `a.b.c.*`, `a.b.*.*`, `a.b.c.1-5`,
//! `a.b.1-5.*` (a range in one segment, the later ones `*`), IPv6 ranges written in full (`1050:0:0:0:5:600:300c:*`),
//! and single addresses. Addresses are compared as parsed addresses, not as text, and an IPv4-mapped IPv6 peer
//! (`::ffff:a.b.c.d`, what a dual-stack listener reports) is matched as its IPv4 address.

use std::fmt;
use std::net::IpAddr;

/// Why a pattern is refused. Every variant names the whole pattern, as the ACL file's error quotes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("{pattern:?}: braces must hold the last segment")]
    Braces { pattern: String },
    #[error("{pattern:?}: {item:?} is not an IP address")]
    NotAnAddress { pattern: String, item: String },
    /// The range form is malformed as a whole (segment count, where the range is, its order).
    #[error("{pattern:?}: {why}")]
    Shape { pattern: String, why: &'static str },
    #[error("{pattern:?}: {segment:?} is not a number")]
    NotANumber { pattern: String, segment: String },
    #[error("{pattern:?}: {segment:?} is out of range")]
    OutOfRange { pattern: String, segment: String },
}

/// One parsed pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressPattern {
    /// Blank: matches no address (Java's `BlankRemoteAddressStrategy`).
    Nobody,
    /// `*`: any address.
    Anybody,
    /// One or more exact addresses.
    Set(Vec<IpAddr>),
    /// `prefix` fixed, the segment at `index` within `low..=high`, the rest anything. IPv4 segments are bytes,
    /// IPv6 segments 16-bit groups.
    Range { prefix: Vec<u16>, low: u16, high: u16, v6: bool },
}

impl AddressPattern {
    /// Parses a pattern; `Err` says what is wrong with it (Java refuses such a file too).
    pub fn parse(text: &str) -> Result<AddressPattern, AddressError> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(AddressPattern::Nobody);
        }
        if matches!(t, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressPattern::Anybody);
        }
        if let Some(open) = t.strip_suffix('}').and_then(|s| s.rfind('{').map(|i| (&s[..i], &s[i + 1..]))) {
            let (head, inner) = open;
            if !(head.ends_with('.') || head.ends_with(':')) {
                return Err(AddressError::Braces { pattern: t.into() });
            }
            return addresses(inner.split(',').map(|last| format!("{head}{}", last.trim())), t);
        }
        if t.contains(',') {
            return addresses(t.split(',').map(|a| a.trim().to_string()), t);
        }
        if t.contains('*') || t.contains('-') {
            return range(t);
        }
        addresses(std::iter::once(t.to_string()), t)
    }

    /// Does `peer` match?
    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        match self {
            AddressPattern::Nobody => false,
            AddressPattern::Anybody => true,
            AddressPattern::Set(set) => set.contains(&peer),
            AddressPattern::Range { prefix, low, high, v6 } => {
                let segments: Vec<u16> = match (peer, v6) {
                    (IpAddr::V4(a), false) => a.octets().iter().map(|b| u16::from(*b)).collect(),
                    (IpAddr::V6(a), true) => a.segments().to_vec(),
                    _ => return false,
                };
                segments.starts_with(prefix) && (*low..=*high).contains(&segments[prefix.len()])
            }
        }
    }
}

fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(addr),
        v4 => v4,
    }
}

fn addresses(items: impl Iterator<Item = String>, whole: &str) -> Result<AddressPattern, AddressError> {
    let mut set = Vec::new();
    for item in items {
        let Ok(addr) = item.parse::<IpAddr>() else {
            return Err(AddressError::NotAnAddress { pattern: whole.into(), item });
        };
        set.push(canonical(addr));
    }
    Ok(AddressPattern::Set(set))
}

/// `a.b.c.*`, `a.b.*.*`, `a.b.c.1-5`, `a.b.1-5.*`; for IPv6 the same over eight hex groups, written in full.
fn range(t: &str) -> Result<AddressPattern, AddressError> {
    let v6 = t.contains(':');
    let (parts, count, max, radix): (Vec<&str>, usize, u16, u32) =
        if v6 { (t.split(':').collect(), 8, u16::MAX, 16) } else { (t.split('.').collect(), 4, 255, 10) };
    let bad = |why: &'static str| AddressError::Shape { pattern: t.into(), why };
    if parts.len() != count {
        return Err(bad(if v6 { "an IPv6 range needs all eight groups (no ::)" } else { "needs four segments" }));
    }
    let number = |s: &str| -> Result<u16, AddressError> {
        let n = u32::from_str_radix(s.trim(), radix)
            .map_err(|_| AddressError::NotANumber { pattern: t.into(), segment: s.into() })?;
        u16::try_from(n)
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(|| AddressError::OutOfRange { pattern: t.into(), segment: s.into() })
    };
    let Some(at) = parts.iter().position(|p| p.trim() == "*" || p.contains('-')) else {
        return Err(bad("no range segment"));
    };
    // Java starts looking at the second segment: the first is always fixed.
    if at == 0 {
        return Err(bad("the first segment cannot be a range"));
    }
    if parts[at + 1..].iter().any(|p| p.trim() != "*") {
        return Err(bad("segments after a range must be *"));
    }
    let prefix = parts[..at].iter().map(|p| number(p)).collect::<Result<Vec<u16>, AddressError>>()?;
    let (low, high) = match parts[at].trim() {
        "*" => (0, max),
        r => {
            let (a, b) = r.split_once('-').ok_or_else(|| bad("bad range"))?;
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return Err(bad("range start is after its end"));
            }
            (a, b)
        }
    };
    Ok(AddressPattern::Range { prefix, low, high, v6 })
}

impl fmt::Display for AddressPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Blank, as the file writes it.
            AddressPattern::Nobody => Ok(()),
            AddressPattern::Anybody => f.write_str("*"),
            AddressPattern::Set(set) => {
                let items: Vec<String> = set.iter().map(IpAddr::to_string).collect();
                f.write_str(&items.join(","))
            }
            AddressPattern::Range { prefix, low, high, v6 } => {
                let (sep, count) = if *v6 { (":", 8) } else { (".", 4) };
                let show = |n: &u16| if *v6 { format!("{n:x}") } else { n.to_string() };
                let mut parts: Vec<String> = prefix.iter().map(show).collect();
                parts.push(format!("{}-{}", show(low), show(high)));
                parts.resize(count, "*".into());
                f.write_str(&parts.join(sep))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, peer: &str) -> bool {
        AddressPattern::parse(pattern).unwrap().matches(peer.parse().unwrap())
    }

    #[test]
    fn java_forms() {
        assert!(!m("", "127.0.0.1"));
        assert!(m("*", "10.1.2.3") && m("*.*.*.*", "::1") && m("*:*:*:*:*:*:*:*", "10.0.0.1"));
        assert!(m("192.168.0.{1,2}", "192.168.0.2") && !m("192.168.0.{1,2}", "192.168.0.3"));
        assert!(m("10.10.103.*", "10.10.103.77") && !m("10.10.103.*", "10.10.104.77"));
        assert!(m("10.10.*.*", "10.10.200.1") && !m("10.10.*.*", "10.11.0.1"));
        assert!(m("192.168.1.1-5", "192.168.1.5") && !m("192.168.1.1-5", "192.168.1.6"));
        assert!(m("192.168.1-5.*", "192.168.3.9") && !m("192.168.1-5.*", "192.168.6.9"));
        assert!(m("127.0.0.1,10.0.0.1", "10.0.0.1") && !m("127.0.0.1,10.0.0.1", "10.0.0.2"));
        assert!(m("127.0.0.1", "127.0.0.1") && !m("127.0.0.1", "127.0.0.2"));
        assert!(m("::1", "::1") && m("0:0:0:0:0:0:0:1", "::1"));
        assert!(m("1050:0:0:0:5:600:300c:*", "1050::5:600:300c:326b"));
        assert!(
            m("1050:0:0:0:5:600:300c:1-a", "1050::5:600:300c:a")
                && !m("1050:0:0:0:5:600:300c:1-a", "1050::5:600:300c:b")
        );
        assert!(m("fe80::1,::1", "::1"));
    }

    #[test]
    fn mapped_peers_match_as_ipv4() {
        assert!(m("127.0.0.1", "::ffff:127.0.0.1"));
        assert!(m("127.0.0.*", "::ffff:127.0.0.9"));
        assert!(!m("127.0.0.*", "::1"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        for bad in
            ["*.1.2.3", "10.0.0.300", "10.0.*.5", "10.0.0.5-1", "10.0.0", "1050::*", "host.example", "10.0.0.{1,x}"]
        {
            assert!(AddressPattern::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn errors_say_which_fault() {
        let e = AddressPattern::parse("10.0.0.300").unwrap_err();
        assert_eq!(e, AddressError::NotAnAddress { pattern: "10.0.0.300".into(), item: "10.0.0.300".into() });
        assert_eq!(e.to_string(), r#""10.0.0.300": "10.0.0.300" is not an IP address"#);
        let e = AddressPattern::parse("10.0.*.5").unwrap_err();
        assert!(matches!(e, AddressError::Shape { why: "segments after a range must be *", .. }), "{e}");
        assert!(matches!(AddressPattern::parse("10.0.0.1-999"), Err(AddressError::OutOfRange { .. })));
        assert!(matches!(AddressPattern::parse("10.x.*.*"), Err(AddressError::NotANumber { .. })));
        assert!(matches!(AddressPattern::parse("10.0.{1,2"), Err(AddressError::NotAnAddress { .. })));
        assert!(matches!(AddressPattern::parse("10.0.0{1,2}"), Err(AddressError::Braces { .. })));
    }

    #[test]
    fn display_round_trips() {
        for p in ["10.10.103.*", "192.168.1.1-5", "127.0.0.1,::1", "*", "1050:0:0:0:5:600:300c:*"] {
            let parsed = AddressPattern::parse(p).unwrap();
            assert_eq!(AddressPattern::parse(&parsed.to_string()).unwrap(), parsed, "{p}");
        }
    }
}
