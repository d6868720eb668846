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
    /// FLEET_FACTS' answer pieces, built by the first asker ([`crate::fleet_facts::prepared`]) and dropped with the
    /// snapshot, for the same reason: a check costs one walk of the tables per publish, not one per request.
    pub fleet_facts: std::sync::OnceLock<PreparedFacts>,
}

/// What FLEET_FACTS answers from, per aspect (in [`crate::fleet_facts::Aspect`] order): its digest and its items as
/// one JSON object, ready to copy into an answer; `None` for an aspect not told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreparedFacts {
    pub aspects: [Option<(u64, bytes::Bytes)>; 4],
}

impl Snapshot {
    pub(crate) fn new(generation: u64, routes: RouteView, kv: Arc<KvTable>, config: Arc<Config>) -> Snapshot {
        Snapshot {
            generation,
            routes,
            kv,
            config,
            all_topics_body: std::sync::OnceLock::new(),
            fleet_facts: std::sync::OnceLock::new(),
            inner_signed: Arc::default(),
        }
    }
}
