//! Warm restart (opt-in with `routeSnapshotPath`): the route tables saved as the REGISTER_BROKER frames that would
//! rebuild them — one per live broker, in the wire format, so the file is read back by the same codec and
//! decoder as live traffic. Each frame also carries when its broker was last heard from (`LAST_UPDATE_KEY`). At
//! start the registrations are replayed as *provisional*: routes are served at once (no TOPIC_NOT_EXIST after a
//! restart, apache/rocketmq #5322) until each broker re-registers or its timeout — counted from when it was last
//! heard from, not from the restart — passes, and `/ready` says so meanwhile.

use std::path::Path;

pub(crate) use crate::registration::saved::{decode, encode, Saved, WarmError};

/// Loads the file if there is one; `Ok(empty)` when missing.
pub(crate) fn load(path: &Path, max_frame: usize, max_inflated: usize) -> Result<Vec<Saved>, WarmError> {
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes, max_frame, max_inflated),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(WarmError::Read(e)),
    }
}
