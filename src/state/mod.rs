//! Tables ↔ snapshots. Pure: no I/O, no clock (time is passed in as milliseconds), no threads. Only the writer
//! thread owns the mutable tables; reactors read the immutable `Snapshot` it publishes.
//!
//! - `routes`: the route tables (topics, broker groups, clusters, filter servers, static-topic mappings) and every
//!   operation on them (register, unregister, evict, perms, topic admin), plus read-only queries on a `RouteView`.
//! - `liveness`: the writer-private broker live table (heartbeats, data versions, owning connection, expiry).
//! - `kv`: the KV config namespaces.
//! - `snapshot`: what readers see — routes, KV and runtime config in one `Arc`, loaded once per request.

pub(crate) mod kv;
pub(crate) mod liveness;
pub mod routes;
pub(crate) mod snapshot;

pub(crate) use kv::KvTable;
pub use routes::{RouteTables, RouteView};
pub(crate) use snapshot::{PreparedFacts, Snapshot};

/// The tables remember which connection registered each broker (connection-close eviction matches it exactly).
pub use crate::conn_id::ConnId;
