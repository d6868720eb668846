//! The users of ACL 2.0, learned from the cluster's own brokers (`authenticationEnabled=true`; docs/security.md).
//!
//! Thread `namesrv-auth-users`: every `authUsersRefreshSeconds` it asks brokers that registered with this name
//! server for their users (AUTH_LIST_USER, 3005, signed with `innerClientAuthenticationCredentials` and marked as
//! ours, [`crate::acl::outbound`]), merges the answers ([`crate::acl::users::merge`]) and swaps the new account set in
//! whole, where the reactors, the decoder and the HTTP endpoint load it per request.
//!
//! Whom it asks (docs/security.md, "ACL 2.0"): only brokers whose last registration was signed with the inner
//! credential (a user's password, even root's, registers a broker but never makes it a source of users), and only
//! at an address that is the IP the registration came from, or one in `authUsersBrokerAllowList`; a host name is
//! never resolved for this. The eligible brokers are taken in turn across refreshes, so that every one of them is
//! asked in time, whatever their names. The list is kept on disk (`authUsersPath`, owner-only, written atomically) so
//! that a restart with no broker up still knows every user; it is never served back out.
//!
//! Failure never locks anyone out: a refresh in which no broker answers (all down, the inner credential refused, a
//! list that does not parse) keeps the last good list, and says so once in the log (again when it recovers) and in
//! `namesrv_auth_user_refresh_failures_total`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use tracing::{info, warn};

use crate::acl::users::{self, Base, User};
use crate::acl::{outbound, signature, Acl};
use crate::metrics::AclMetrics;
use crate::remoting::{Conn, RemoteError};
use crate::state::Snapshot;

/// AUTH_LIST_USER.
pub(crate) const AUTH_LIST_USER: i32 = 3005;
/// Brokers whose answers are merged in one refresh; failing brokers are passed over, up to `MAX_TRIED` tries. The
/// next refresh goes on from where this one stopped.
const ANSWERS_WANTED: usize = 3;
const MAX_TRIED: usize = 8;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// Why one broker gave no list.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AskError {
    #[error("cannot reach {addr}: {reason}")]
    Unreachable { addr: String, reason: String },
    /// Connected, but no answer came back (the same wording as `Unreachable` in the log).
    #[error("cannot reach {addr}: {source}")]
    NoAnswer { addr: String, source: RemoteError },
    #[error("{addr} answered code {code}: {remark}")]
    Refused { addr: String, code: i32, remark: String },
    #[error("{addr} answered a list that cannot be read: {source}")]
    Invalid { addr: String, source: users::UsersError },
}

/// The thread's state.
pub(crate) struct UserSync {
    pub base: Base,
    pub cell: Arc<ArcSwap<Acl>>,
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    pub path: PathBuf,
    pub interval: Duration,
    pub metrics: Arc<AclMetrics>,
    /// The users last taken into use, to save the file only when they changed.
    pub users: Vec<User>,
    /// Whether the last refresh failed (the log says so once per failure streak).
    pub failing: bool,
    /// Where the next refresh starts in the list of eligible brokers (they are taken in turn).
    pub next: usize,
}

/// The users the cache file holds, or none (a missing file is a first start; a broken one is logged and ignored:
/// the brokers will be asked).
pub(crate) fn load_cache(path: &std::path::Path) -> Vec<User> {
    match std::fs::read(path) {
        Ok(bytes) => users::parse_list(&bytes).unwrap_or_else(|e| {
            warn!(path = %path.display(), error = %e, "the saved ACL 2.0 users cannot be read; waiting for the brokers");
            Vec::new()
        }),
        Err(_) => Vec::new(),
    }
}

impl UserSync {
    /// Refreshes at once, then every `interval` until `stop` is dropped or signalled.
    pub(crate) fn run(mut self, stop: Receiver<()>) {
        loop {
            self.refresh(&stop);
            match stop.recv_timeout(self.interval) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        }
    }

    /// One round: ask, merge, swap in, save. A stop is looked for between brokers, so that a round against brokers
    /// that do not answer (up to `MAX_TRIED` × 4 s) holds a shutdown up for one broker's timeouts at most.
    pub(crate) fn refresh(&mut self, stop: &Receiver<()>) {
        let Some((ak, sk)) = self.base.inner.clone() else {
            // Nothing to sign with: the brokers would refuse us. Start-up says so; the configured users stand.
            return;
        };
        let key = signature::Key::new(sk.as_bytes());
        let mut lists = Vec::new();
        let mut errors = Vec::new();
        let (eligible, passed_over) = eligible(&self.snapshot.load());
        let n = eligible.len();
        let start = if n == 0 { 0 } else { self.next % n };
        let mut tried = 0;
        for addr in eligible.iter().cycle().skip(start).take(n.min(MAX_TRIED)) {
            if !matches!(stop.try_recv(), Err(crossbeam_channel::TryRecvError::Empty)) {
                return;
            }
            tried += 1;
            match ask(addr, &ak, &key) {
                Ok(list) => lists.push(list),
                Err(e) => errors.push(e.to_string()),
            }
            if lists.len() == ANSWERS_WANTED {
                break;
            }
        }
        self.next = (start + tried) % n.max(1);
        if passed_over > 0 && lists.is_empty() {
            errors.push(format!(
                "{passed_over} registered broker(s) not asked: not registered with the inner credential, or at an \
                 address that is not the IP they registered from (authUsersBrokerAllowList)"
            ));
        }
        if lists.is_empty() {
            self.metrics.user_refresh_failures.fetch_add(1, Relaxed);
            if !self.failing {
                let why =
                    if errors.is_empty() { "no broker has registered yet".to_string() } else { errors.join("; ") };
                warn!(users = self.users.len(), reason = %why, "cannot refresh the ACL 2.0 users; keeping the last good list");
            }
            self.failing = true;
            return;
        }
        if std::mem::take(&mut self.failing) {
            info!(brokers = lists.len(), "ACL 2.0 users refreshed again");
        }
        let (merged, disagree) = users::merge(&lists);
        self.metrics.user_refreshes.fetch_add(1, Relaxed);
        self.metrics.user_disagreements.store(disagree.len() as u64, Relaxed);
        if !disagree.is_empty() {
            warn!(users = ?disagree, "brokers describe these ACL 2.0 users differently; each keeps only the rights every answer grants");
        }
        if merged != self.users {
            self.apply(merged);
            self.save();
        }
    }

    /// Swaps the account set for `users` in.
    pub(crate) fn apply(&mut self, users: Vec<User>) {
        let acl = users::acl(&self.base, &users);
        self.metrics.accounts.store(acl.accounts.len() as u64, Relaxed);
        info!(users = users.len(), "ACL 2.0 users taken into use");
        self.cell.store(Arc::new(acl));
        self.users = users;
    }

    fn save(&self) {
        let Ok(text) = serde_json::to_vec(&self.users) else { return };
        if let Err(e) = crate::persist::save_private(&self.path, &text) {
            warn!(path = %self.path.display(), error = %e, "cannot save the ACL 2.0 users; a restart without brokers would not know them");
        }
    }
}

/// The brokers that may be asked, by address, and how many registered brokers are not among them. Eligible: in
/// the route tables now, last registered signed with the inner credential (`Snapshot::inner_signed`), and at an
/// address whose host is an IP — the one the registration came from, or one `authUsersBrokerAllowList` names. The
/// name server dials what the brokers say their address is; without these rules anyone who may register could make
/// it connect anywhere, with the inner credential's signature in hand.
fn eligible(snap: &Snapshot) -> (Vec<String>, usize) {
    let allow = &snap.config.auth_users_broker_allow_list;
    let info = snap.routes.cluster_info();
    let registered: std::collections::BTreeSet<&str> =
        info.broker_addr_table.values().flat_map(|d| d.broker_addrs.values()).map(String::as_str).collect();
    let ok: Vec<String> = registered
        .iter()
        .filter(|addr| snap.inner_signed.get(**addr).is_some_and(|from| dialable(addr, *from, allow)))
        .map(|addr| addr.to_string())
        .collect();
    let passed_over = registered.len() - ok.len();
    (ok, passed_over)
}

/// May `addr`, registered from `from`, be dialed? Only an IP literal (a host name is never resolved): the peer's
/// own address, or one the operator allows.
fn dialable(addr: &str, from: IpAddr, allow: &crate::allow_list::AllowList) -> bool {
    let Ok(to) = addr.parse::<std::net::SocketAddr>() else { return false };
    canonical(to.ip()) == canonical(from) || (!allow.is_off() && allow.allows(to.ip()))
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is (what a dual-stack listener reports).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Asks one broker for its users.
pub(crate) fn ask(addr: &str, access_key: &str, key: &signature::Key) -> Result<Vec<User>, AskError> {
    let failed = |e: RemoteError| match e {
        e if e.is_unreachable() => AskError::Unreachable { addr: addr.to_string(), reason: e.to_string() },
        source => AskError::NoAnswer { addr: addr.to_string(), source },
    };
    let mut conn = Conn::connect(addr, CONNECT_TIMEOUT, ANSWER_TIMEOUT)
        .map_err(failed)?
        .signing(Some((access_key.to_string(), key.clone())));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default();
    let cmd = outbound::stamp(conn.request(AUTH_LIST_USER), now_ms);
    let answer = conn.ask(cmd).map_err(failed)?;
    if answer.code != 0 {
        let remark = crate::clip::clip(answer.remark.as_deref().unwrap_or(""), 200).into_owned();
        return Err(AskError::Refused { addr: addr.to_string(), code: answer.code, remark });
    }
    users::parse_list(&answer.body).map_err(|source| AskError::Invalid { addr: addr.to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broker that did not answer is said to be out of reach, with why.
    #[test]
    fn a_missing_answer_says_why() {
        let e = AskError::NoAnswer { addr: "b:10911".into(), source: RemoteError::Timeout(ANSWER_TIMEOUT) };
        assert_eq!(e.to_string(), format!("cannot reach b:10911: no answer within {} ms", ANSWER_TIMEOUT.as_millis()));
    }

    /// Only an IP literal is dialed: the registering peer's own, or one the operator allows; never a host name.
    #[test]
    fn only_the_registering_peer_or_an_allowed_address_is_dialed() {
        use crate::allow_list::AllowList;
        let from: IpAddr = "10.0.0.5".parse().unwrap();
        let none = AllowList::default();
        assert!(dialable("10.0.0.5:10911", from, &none));
        assert!(dialable("10.0.0.5:10911", "::ffff:10.0.0.5".parse().unwrap(), &none));
        assert!(!dialable("10.0.0.6:10911", from, &none), "another host");
        assert!(!dialable("localhost:10911", "127.0.0.1".parse().unwrap(), &none), "a host name");
        assert!(!dialable("10.0.0.5", from, &none), "no port");
        let nat = AllowList::parse("192.168.7.0/24").unwrap();
        assert!(dialable("192.168.7.9:10911", from, &nat));
        assert!(!dialable("192.168.8.9:10911", from, &nat));
        assert!(!dialable("broker-a.internal:10911", from, &AllowList::parse("0.0.0.0/0").unwrap()));
    }
}
