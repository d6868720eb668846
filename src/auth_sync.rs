//! The users of ACL 2.0, learned from the cluster's own brokers (`authenticationEnabled=true`; docs/security.md).
//!
//! Thread `namesrv-auth-users`: every `authUsersRefreshSeconds` it asks brokers that registered with this name
//! server for their users (AUTH_LIST_USER, 3005, signed with `innerClientAuthenticationCredentials`), merges the
//! answers (`acl::users::merge`) and swaps the new account set in whole, where the reactors, the decoder and the
//! HTTP endpoint load it per request. The list is kept on disk (`authUsersPath`, owner-only, written atomically) so
//! that a restart with no broker up still knows every user; it is never served back out.
//!
//! Failure never locks anyone out: a refresh in which no broker answers (all down, the inner credential refused, a
//! list that does not parse) keeps the last good list, and says so once in the log (again when it recovers) and in
//! `namesrv_auth_user_refresh_failures_total`.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use tracing::{info, warn};

use crate::acl::users::{self, Base, User};
use crate::acl::{signature, Acl};
use crate::metrics::AclMetrics;
use crate::remoting::{Conn, RemoteError};
use crate::state::Snapshot;

/// AUTH_LIST_USER.
pub(crate) const AUTH_LIST_USER: i32 = 3005;
/// Brokers whose answers are merged in one refresh; failing brokers are passed over, up to `MAX_TRIED` tries.
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
        for addr in brokers(&self.snapshot.load()).into_iter().take(MAX_TRIED) {
            if !matches!(stop.try_recv(), Err(crossbeam_channel::TryRecvError::Empty)) {
                return;
            }
            match ask(&addr, &ak, &key) {
                Ok(list) => lists.push(list),
                Err(e) => errors.push(e.to_string()),
            }
            if lists.len() == ANSWERS_WANTED {
                break;
            }
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
            warn!(users = ?disagree, "brokers describe these ACL 2.0 users differently; the narrowest view is used");
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

/// The brokers to ask, in order: every master (brokerId 0) by broker name, then the others. The registrations are
/// the only broker list a name server has, and masters are where `mqadmin -c` and `-b` writes land first.
fn brokers(snap: &Snapshot) -> Vec<String> {
    let info = snap.routes.cluster_info();
    let mut masters = Vec::new();
    let mut others = Vec::new();
    for (name, data) in &info.broker_addr_table {
        for (id, addr) in &data.broker_addrs {
            let to = if *id == 0 { &mut masters } else { &mut others };
            to.push((name.to_string(), addr.clone()));
        }
    }
    masters.sort();
    others.sort();
    masters.into_iter().chain(others).map(|(_, addr)| addr).collect()
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
    let cmd = conn.request(AUTH_LIST_USER);
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
}
