//! The ACL reload thread (`aclEnable=true`): every half second (Java's `FileWatchService` period) it reads the
//! account file and, when its bytes changed, parses it and swaps the new accounts in whole. A broken file keeps the
//! last good accounts and says so in the log and in `namesrv_acl_reload_failures_total`; it is reported once per
//! distinct content, not every half second. Reactors only ever load the current accounts: nothing here blocks them.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use tracing::{error, info};

use crate::acl::{file, Acl};
use crate::metrics::AclMetrics;

/// How often the file is looked at.
pub(crate) const PERIOD: Duration = Duration::from_millis(500);

/// Why the account file could not be used. The messages name the key that chose the file (`aclFile`) and the
/// path, so an operator knows which setting to fix at start-up.
#[derive(Debug, thiserror::Error)]
pub enum AclFileError {
    #[error("cannot read ACL file {path} (aclFile): {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid ACL file {path} (aclFile): not UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("invalid ACL file {path} (aclFile): {source}")]
    Invalid { path: PathBuf, source: file::AclParseError },
}

/// Reads and parses the account file; also returns a fingerprint of its bytes.
pub(crate) fn load(path: &Path) -> Result<(Acl, u64), AclFileError> {
    let bytes = std::fs::read(path).map_err(|source| AclFileError::Read { path: path.into(), source })?;
    let fingerprint = fingerprint(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| AclFileError::NotUtf8 { path: path.into() })?;
    let acl = file::parse(&text).map_err(|source| AclFileError::Invalid { path: path.into(), source })?;
    Ok((acl, fingerprint))
}

fn fingerprint(bytes: &[u8]) -> u64 {
    ahash::RandomState::with_seeds(7, 11, 13, 17).hash_one(bytes)
}

/// The thread's state.
pub(crate) struct Reloader {
    pub path: PathBuf,
    pub cell: Arc<ArcSwap<Acl>>,
    pub metrics: Arc<AclMetrics>,
    /// The fingerprint of the last content looked at, good or bad.
    pub seen: u64,
}

impl Reloader {
    /// Until `stop` is dropped or signalled.
    pub(crate) fn run(mut self, stop: Receiver<()>) {
        loop {
            match stop.recv_timeout(PERIOD) {
                Err(RecvTimeoutError::Timeout) => self.check(),
                _ => return,
            }
        }
    }

    /// One look at the file.
    pub(crate) fn check(&mut self) {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) => {
                // A missing file is reported once (a fingerprint no content has), then again only after it changed.
                if self.seen != u64::MAX {
                    self.seen = u64::MAX;
                    self.metrics.reload_failures.fetch_add(1, Relaxed);
                    error!(path = %self.path.display(), error = %e, "cannot read ACL file; keeping the last good accounts");
                }
                return;
            }
        };
        let now = fingerprint(&bytes);
        if now == self.seen {
            return;
        }
        self.seen = now;
        match load(&self.path) {
            Ok((acl, fp)) => {
                self.seen = fp;
                info!(path = %self.path.display(), accounts = acl.accounts.len(), white = acl.global_white.len(), "ACL file reloaded");
                self.metrics.accounts.store(acl.accounts.len() as u64, Relaxed);
                self.cell.store(Arc::new(acl));
                self.metrics.reloads.fetch_add(1, Relaxed);
            }
            Err(e) => {
                self.metrics.reload_failures.fetch_add(1, Relaxed);
                error!(error = %e, "ACL file not reloaded; keeping the last good accounts");
            }
        }
    }
}
