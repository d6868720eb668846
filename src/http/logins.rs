//! Failed HTTP Basic logins, per address. Basic sends a guess per request; without a limit an attacker tries
//! thousands a second. After `MAX_FAILURES` wrong credentials from one address within `WINDOW_MS`, every request
//! from it that needs an account gets 429 with `Retry-After` — credentials not even looked at, right or wrong, so
//! a guess costs the attacker the rest of the window — until the window ends. A correct login clears the address.
//!
//! Logged like the remoting refusals (`reactor/refusals.rs`): the first failure of an address in a window in full,
//! the rest counted and summed up in one line when the window ends (at the address's next failure, or the
//! endpoint's sweep, `sweep`). `namesrv_http_refused_total{reason="bad_credentials"|"login_throttled"}` counts
//! every one.
//!
//! Bounded: at most `TRACKED` addresses are followed; while the table is full (after ended windows are dropped),
//! failures from further addresses share one entry, which is throttled like an address — a spread-out guessing
//! run then slows everybody new, rather than getting unlimited guesses.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use tracing::warn;

/// Wrong logins allowed per address and window.
pub(super) const MAX_FAILURES: u32 = 5;
/// The window, from an address's first failure.
pub(super) const WINDOW_MS: i64 = 10_000;
/// Addresses followed at once.
const TRACKED: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Tally {
    since_ms: i64,
    failures: u32,
    /// Failures and throttled requests since the full line, for the summary.
    unlogged_failures: u64,
    throttled: u64,
}

impl Tally {
    fn ended(&self, now_ms: i64) -> bool {
        now_ms - self.since_ms >= WINDOW_MS || now_ms < self.since_ms
    }
}

/// The failed logins of the endpoint. `None` keys the shared entry of addresses not followed.
#[derive(Debug, Default)]
pub(super) struct Logins {
    peers: Mutex<HashMap<Option<IpAddr>, Tally>>,
}

impl Logins {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Tally>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key `peer` is followed under: its own, or the shared one when the table is full.
    fn key(map: &HashMap<Option<IpAddr>, Tally>, peer: IpAddr) -> Option<IpAddr> {
        if map.contains_key(&Some(peer)) || map.len() < TRACKED {
            Some(peer)
        } else {
            None
        }
    }

    /// Before looking at a request's credentials: the seconds to tell it to wait (`Retry-After`) when `peer` is
    /// throttled, counted for the summary.
    pub(super) fn throttled(&self, peer: IpAddr, now_ms: i64) -> Option<u64> {
        let mut map = self.lock();
        let key = Self::key(&map, peer);
        let tally = map.get_mut(&key)?;
        if tally.ended(now_ms) || tally.failures < MAX_FAILURES {
            return None;
        }
        tally.throttled += 1;
        let left_ms = (tally.since_ms + WINDOW_MS - now_ms).max(0);
        Some((left_ms as u64).div_ceil(1000).max(1))
    }

    /// Wrong credentials from `peer`.
    pub(super) fn failed(&self, peer: IpAddr, now_ms: i64) {
        let mut map = self.lock();
        if map.len() >= TRACKED {
            map.retain(|k, t| k.is_none() || !t.ended(now_ms) || summed_up(*k, t, now_ms));
        }
        let key = Self::key(&map, peer);
        let tally =
            map.entry(key).or_insert(Tally { since_ms: now_ms, failures: 0, unlogged_failures: 0, throttled: 0 });
        if tally.ended(now_ms) {
            summed_up(key, tally, now_ms);
            *tally = Tally { since_ms: now_ms, failures: 0, unlogged_failures: 0, throttled: 0 };
        }
        tally.failures += 1;
        if tally.failures == 1 {
            warn!(peer = %shown(key), max = MAX_FAILURES, window_s = WINDOW_MS / 1000,
                "HTTP login failed (wrong credentials); further failures from this address are summed up");
        } else {
            tally.unlogged_failures += 1;
        }
    }

    /// A correct login: the address starts afresh.
    pub(super) fn succeeded(&self, peer: IpAddr, now_ms: i64) {
        let mut map = self.lock();
        if let Some(mut tally) = map.remove(&Some(peer)) {
            summed_up(Some(peer), &mut tally, now_ms);
        }
    }

    /// Drops ended windows, with their summaries; the endpoint runs this every `WINDOW_MS`.
    pub(super) fn sweep(&self, now_ms: i64) {
        self.lock().retain(|k, t| !t.ended(now_ms) || summed_up(*k, t, now_ms));
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.lock().len()
    }
}

fn shown(key: Option<IpAddr>) -> String {
    key.map_or_else(|| "(addresses not followed)".to_string(), |ip| ip.to_string())
}

/// Writes the summary of a window if anything was only counted; `false`, so it can end a `retain` filter.
fn summed_up(key: Option<IpAddr>, t: &mut Tally, now_ms: i64) -> bool {
    if t.unlogged_failures > 0 || t.throttled > 0 {
        let seconds = (now_ms - t.since_ms).max(0) / 1000;
        warn!(peer = %shown(key), failed = t.unlogged_failures, throttled = t.throttled, seconds,
            "HTTP logins: more failures and throttled requests from this address");
        t.unlogged_failures = 0;
        t.throttled = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn five_failures_throttle_the_address_for_the_rest_of_the_window() {
        let l = Logins::default();
        for i in 0..MAX_FAILURES {
            assert_eq!(l.throttled(A, 1000 + i64::from(i)), None, "failure {i}");
            l.failed(A, 1000 + i64::from(i));
        }
        assert_eq!(l.throttled(A, 1005), Some(10));
        assert_eq!(l.throttled(A, 8_500), Some(3), "rounded up");
        assert_eq!(l.throttled(B, 8_500), None, "another address is not affected");
        assert_eq!(l.throttled(A, 11_000), None, "the window ended");
        l.failed(A, 11_000);
        assert_eq!(l.throttled(A, 11_001), None, "a new window, one failure");
    }

    #[test]
    fn a_correct_login_clears_and_the_sweep_forgets() {
        let l = Logins::default();
        for _ in 0..MAX_FAILURES - 1 {
            l.failed(A, 0);
        }
        l.succeeded(A, 1);
        l.failed(A, 2);
        assert_eq!(l.throttled(A, 3), None);
        l.failed(B, 2);
        l.sweep(5_000);
        assert_eq!(l.tracked(), 2);
        l.sweep(20_000);
        assert_eq!(l.tracked(), 0);
    }

    #[test]
    fn a_full_table_throttles_the_rest_together() {
        let l = Logins::default();
        for i in 0..TRACKED as u32 {
            l.failed(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)), 0);
        }
        for i in 0..MAX_FAILURES {
            l.failed(IpAddr::V4(std::net::Ipv4Addr::from(0x0b00_0000 + i)), 1);
        }
        assert_eq!(l.throttled(IpAddr::V4(std::net::Ipv4Addr::from(0x0c00_0000)), 2), Some(10));
        assert_eq!(l.throttled(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0001)), 2), None);
        assert_eq!(l.tracked(), TRACKED + 1);
    }
}
