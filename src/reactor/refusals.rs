//! Repeated refusals from one peer summed up instead of logged one by one. The first refusal of a (peer address,
//! limit) in an interval of `INTERVAL_MS` is logged (and audited, for a write) in full; the ones after it in that
//! interval are only counted, and one summary line says how many when the interval ends — at the peer's next
//! refusal after it, or at the reactor's once-a-second tick, whichever comes first. A peer sending junk as fast as
//! it can so costs two lines per interval, not one (or two) per request. `namesrv_limit_hits_total` still counts
//! every refusal.
//!
//! Bounded: at most `TRACKED` peers are followed at once (an interval's worth of them); refusals from further
//! peers while the table is full are only counted, in one bucket per limit, and summed up the same way.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::limit::Limit;

/// The interval a peer's refusals of one kind are summed up over (the same 10 s as the `maxConnections` line).
pub(super) const INTERVAL_MS: i64 = 10_000;

/// Peers followed at once; with the buckets for the rest, a few tens of KiB at most.
pub(super) const TRACKED: usize = 1024;

/// Refusals counted, not logged, in the current interval.
#[derive(Clone, Copy, Debug)]
struct Tally {
    since_ms: i64,
    more: u64,
    /// Of which refused writes (their audit lines were not written either).
    writes: u64,
}

impl Tally {
    fn new(now_ms: i64) -> Tally {
        Tally { since_ms: now_ms, more: 0, writes: 0 }
    }

    fn count(&mut self, write: bool) {
        self.more += 1;
        self.writes += u64::from(write);
    }

    /// A clock stepped back ends the interval too, so that a tally is never kept for ever.
    fn ended(&self, now_ms: i64) -> bool {
        now_ms - self.since_ms >= INTERVAL_MS || now_ms < self.since_ms
    }

    fn summary(&self, peer: Option<IpAddr>, limit: Limit, now_ms: i64) -> Option<Summary> {
        let seconds = (now_ms - self.since_ms).max(0) / 1000;
        (self.more > 0).then_some(Summary { peer, limit, more: self.more, writes: self.writes, seconds })
    }
}

/// What one summary line says: `more` refusals for `limit` (`writes` of them writes) from `peer` (`None`: from
/// peers not followed, the table being full) in the last `seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Summary {
    pub peer: Option<IpAddr>,
    pub limit: Limit,
    pub more: u64,
    pub writes: u64,
    pub seconds: i64,
}

/// Whether to write a refusal's lines in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Full,
    Counted,
}

/// One reactor's tallies (each reactor has its own: no lock, and a peer's connections spread over the reactors
/// cost at most one full line per reactor and interval).
#[derive(Debug, Default)]
pub(super) struct Digest {
    peers: HashMap<(IpAddr, Limit), Tally>,
    /// Refusals from peers that found the table full, by limit.
    others: [Option<Tally>; Limit::ALL.len()],
}

impl Digest {
    /// A refusal of `peer` for `limit` (`write`: it would have an audit line) at `now_ms`: whether to write it in
    /// full, and the summary of the interval it ended, if one did and anything was counted in it.
    pub(super) fn note(&mut self, peer: IpAddr, limit: Limit, write: bool, now_ms: i64) -> (Verdict, Option<Summary>) {
        if let Some(t) = self.peers.get_mut(&(peer, limit)) {
            if t.ended(now_ms) {
                let ended = t.summary(Some(peer), limit, now_ms);
                *t = Tally::new(now_ms);
                return (Verdict::Full, ended);
            }
            t.count(write);
            return (Verdict::Counted, None);
        }
        if self.peers.len() < TRACKED {
            self.peers.insert((peer, limit), Tally::new(now_ms));
            return (Verdict::Full, None);
        }
        let slot = &mut self.others[limit as usize];
        let ended = match slot {
            Some(t) if t.ended(now_ms) => slot.take().and_then(|t| t.summary(None, limit, now_ms)),
            _ => None,
        };
        slot.get_or_insert(Tally::new(now_ms)).count(write);
        (Verdict::Counted, ended)
    }

    /// Ends every interval that is over (the tick): their summaries go to `out`, their peers leave the table.
    pub(super) fn due(&mut self, now_ms: i64, out: &mut Vec<Summary>) {
        self.peers.retain(|&(peer, limit), t| {
            if !t.ended(now_ms) {
                return true;
            }
            out.extend(t.summary(Some(peer), limit, now_ms));
            false
        });
        for (slot, limit) in self.others.iter_mut().zip(Limit::ALL) {
            if slot.is_some_and(|t| t.ended(now_ms)) {
                out.extend(slot.take().and_then(|t| t.summary(None, limit, now_ms)));
            }
        }
    }

    /// Peers followed now.
    #[cfg(test)]
    pub(super) fn tracked(&self) -> usize {
        self.peers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(n.into())
    }

    #[test]
    fn the_first_refusal_is_full_the_rest_are_summed_up_when_the_interval_ends() {
        let mut d = Digest::default();
        let (a, b) = (ip(1), ip(2));
        assert_eq!(d.note(a, Limit::Acl, true, 0), (Verdict::Full, None));
        for i in 0..9_999 {
            assert_eq!(d.note(a, Limit::Acl, i % 2 == 0, 1 + i), (Verdict::Counted, None));
        }
        // Another peer, or another limit, is another tally.
        assert_eq!(d.note(b, Limit::Acl, false, 5), (Verdict::Full, None));
        assert_eq!(d.note(a, Limit::AdminAllowList, false, 5), (Verdict::Full, None));
        // The next refusal after the interval is full again, after the summary of the one that ended.
        let (verdict, ended) = d.note(a, Limit::Acl, false, INTERVAL_MS + 500);
        assert_eq!(verdict, Verdict::Full);
        let s = Summary { peer: Some(a), limit: Limit::Acl, more: 9_999, writes: 5_000, seconds: 10 };
        assert_eq!(ended, Some(s));
        // The tick sums up the intervals that ended with nothing more to count; the quiet ones just leave.
        assert_eq!(d.note(b, Limit::Acl, false, 6), (Verdict::Counted, None));
        let mut out = Vec::new();
        d.due(INTERVAL_MS + 600, &mut out);
        assert_eq!(out, [Summary { peer: Some(b), limit: Limit::Acl, more: 1, writes: 0, seconds: 10 }]);
        assert_eq!(d.tracked(), 1, "only the tally that began at INTERVAL_MS + 500 is left");
    }

    #[test]
    fn the_table_is_bounded_and_the_rest_are_counted_together() {
        let mut d = Digest::default();
        for n in 0..TRACKED as u32 {
            assert_eq!(d.note(ip(n), Limit::Acl, false, 0).0, Verdict::Full);
        }
        for n in 0..10_000u32 {
            assert_eq!(d.note(ip(1_000_000 + n), Limit::Acl, true, 1), (Verdict::Counted, None));
        }
        assert_eq!(d.tracked(), TRACKED);
        let mut out = Vec::new();
        d.due(INTERVAL_MS + 1, &mut out);
        assert_eq!(out, [Summary { peer: None, limit: Limit::Acl, more: 10_000, writes: 10_000, seconds: 10 }]);
        assert_eq!(d.tracked(), 0);
    }

    #[test]
    fn a_clock_stepped_back_ends_the_interval() {
        let mut d = Digest::default();
        d.note(ip(1), Limit::Acl, false, 50_000);
        d.note(ip(1), Limit::Acl, false, 50_001);
        let (verdict, ended) = d.note(ip(1), Limit::Acl, false, 1_000);
        assert_eq!(verdict, Verdict::Full);
        assert_eq!(ended.map(|s| (s.more, s.seconds)), Some((1, 0)));
    }
}
