//! What readers see: one `Arc<Snapshot>` per request holds the routes, the KV table and the runtime config.

use std::sync::Arc;

use super::{KvTable, RouteView};
use crate::config::Config;

/// Immutable; published by the writer with `ArcSwap::store`.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Increases by one per publish.
    pub generation: u64,
    pub routes: RouteView,
    pub kv: Arc<KvTable>,
    pub config: Arc<Config>,
}
