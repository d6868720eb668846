//! What readers see: one `Arc<Snapshot>` per request holds the routes, the KV table and the runtime config.

use std::collections::BTreeMap;
use std::net::IpAddr;
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
    /// The GET_ALL_TOPIC_LIST body, encoded by the first reader that asks (never on the write path) and dropped
    /// with the snapshot: listing 100k topics costs one encode per publish, not one per request.
    pub all_topics_body: std::sync::OnceLock<bytes::Bytes>,
    /// ACL 2.0: the brokers whose last registration was signed with the inner credential, by address, with the IP
    /// that registration came from — the only brokers `auth_sync` asks for users. Kept by the writer.
    pub inner_signed: Arc<BTreeMap<String, IpAddr>>,
}

impl Snapshot {
    pub(crate) fn new(generation: u64, routes: RouteView, kv: Arc<KvTable>, config: Arc<Config>) -> Snapshot {
        let inner_signed = Arc::default();
        Snapshot { generation, routes, kv, config, all_topics_body: std::sync::OnceLock::new(), inner_signed }
    }
}
