//! namesrv — a drop-in replacement for the Apache RocketMQ NameServer.
//!
//! ```text
//!            ┌──────────── reactor 0 (pinned core 0) ────────────┐
//! sockets ──►│ mio Poll: accept, read, decode frames, dispatch    │──► replies
//!            │ reads: one snapshot load per request, answer now   │
//!            │ writes: WriteCommand ──► writer channel (try_send) │
//!            └──────────────▲─────────────────────────────────────┘
//!            ┌──────────────┴──── reactor N ... ─────────────────┐
//!            └──────────────▲────────────────────────────────────┘
//!                           │     large REGISTER_BROKER ──► decoder (one thread, nice 10) ──► writer
//!                           │ completions (per-reactor inbox + one mio::Waker wake per batch)
//!            ┌──────────────┴──── writer (one thread) ───────────┐
//!            │ drain a batch · apply to the tables · persist KV   │
//!            │ publish one Snapshot (ArcSwap::store) · reply      │
//!            │ expiry scan every scanNotActiveBrokerInterval      │
//!            └────────────────────────────────────────────────────┘
//! ```
//!
//! - `config`: the configuration, with the Java key names; `allow_list`: the `adminAllowList` matcher (pure).
//! - `model`: RocketMQ's vocabulary (`TopicRouteData`, `BrokerData`, `QueueData`, `DataVersion`, …).
//! - `protocol`: bytes ↔ frames and bodies; pure.
//! - `state`: route tables, live table, KV and the published `Snapshot`; pure, time passed in.
//! - `handlers`: the one dispatch `match` on the request code; reads answered from a snapshot, writes forwarded.
//! - `reactor`: a mio event loop per core; owns sockets, never mutates state, never blocks.
//! - `writer`: the single thread that mutates state and publishes snapshots; `write_command`: the messages to it and
//!   back.
//! - `decoder`: one low-priority thread that runs the handler of large registrations off the reactors.
//! - `persist`: durable files (KV store, config store).
//! - `metrics`, `http`: counters and the operator HTTP endpoint (its own thread): metrics, JSON, the web console.
//! - `health`: the health verdicts (groups without master, wiped writes, late heartbeats, lost brokers, unwritable
//!   topics, fleet drift) from a route view, the live table and recent removals; pure.
//! - `feed`: the route-change feed, a bounded ring the writer appends to after each publish and `/events` streams.
//! - `fleet`: the fleet view (`namesrvPeers`): a thread that compares us with the other name servers on an interval.
//!   `fleet_facts`: what it compares, pure — the digests of what a server knows and the FLEET_FACTS body.
//! - `controller`: the RIP-44 controller: replicated state, validation, elections, heartbeats; `raft`: its storage.
//!   `controller_node`: its thread, port and Raft transport.
//! - `kv_raft`: replicated KV (`kvReplicationEnabled`): the name servers' own Raft group for the KV table, on its
//!   own thread and port; committed changes reach the writer as ordinary KV writes.
//! - `server`: wiring and thread start-up; `clock`: wall time behind a trait; `conn_id`: a connection's identity.
//! - `limit`: byte budgets and the limits peers are held to; `clip`: text cut to a bounded length for logs and remarks.
//! - `tls`: `tls.server.mode` and the rustls configuration (the per-connection transport is
//!   [`crate::reactor::transport`]).
//! - `logging`: where logs go (stderr or a size-rolled file) and their format (text or JSON).
//! - `warm`: the route tables saved and replayed across restarts (opt-in).
//! - `registration`: the REGISTER_BROKER request ↔ `RegisterBroker`, both ways (the handlers and `warm`); pure.
//! - `acl`, `acl_reload`, `auth_sync`: authentication — the account file and its reload (ACL 1.0), the users
//!   learned from the brokers (ACL 2.0); `audit`: the audit trail; `critical`: threads the process needs to live.
//! - `cli`: `mqnamesrv admin …`, a client for operators (route, cluster, topics, kv, config, diff, write permission,
//!   topic deletion; mqadmin's command names too).
//! - `remoting`: the one blocking remoting client (bounded waits, answers by opaque, signed when asked), for the CLI,
//!   `auth_sync` and `fleet`.
//!
//! The public surface (decision 0031): everything is `pub(crate)` unless the binary, the benches, the perf harness
//! (`perf/`) or the fuzz targets (`fuzz/`) use it, so what is `pub` is the API and the rest is internal, and
//! `unreachable_pub` keeps it so. Public modules, and for whom:
//! - `acl`: the account file, signatures and address patterns (benches, perf, fuzz).
//! - `cli`: `mqnamesrv admin`'s arguments and runner (the binary).
//! - `clock`: the system clock the controller node is started with (the binary).
//! - `config`: `Config` and its file (the binary, benches, fuzz).
//! - `controller_node`: starting the controller alone, `mqnamesrv controller` (the binary).
//! - `handlers`: the route cache and the registration checksum (benches).
//! - `health`: the verdicts over a route view (benches).
//! - `logging`: log set-up (the binary).
//! - `model`: the registration body, topic configs, data versions (benches, perf, fuzz).
//! - `protocol`: frames, headers, codes and bodies (benches, perf, fuzz).
//! - `server`: start-up and the running server's handle (the binary).
//! - `state`: route tables and views (benches, perf).
//! - `test_support`: the few other items the project's own tests (`tests/`) need, re-exported; hidden, not an API.
//!
//! Invariants (tested; see docs/architecture.md): publish before reply; only the writer mutates; one snapshot load
//! per request; no reactor blocks; connection close is a write; replies matched by opaque, one-way gets nothing;
//! publishing costs O(what changed); route bodies are never built on the write path.

#![warn(unreachable_pub)]

/// `0.1.0 (commit)`: what `--version` and the `namesrv_build_info` metric say.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("NAMESRV_COMMIT"), ")");

pub mod acl;
pub(crate) mod acl_reload;
pub(crate) mod allow_list;
pub(crate) mod audit;
pub(crate) mod auth_sync;
pub mod cli;
pub(crate) mod clip;
pub mod clock;
pub mod config;
pub(crate) mod conn_id;
pub(crate) mod controller;
pub mod controller_node;
pub(crate) mod critical;
pub(crate) mod decoder;
pub(crate) mod feed;
pub(crate) mod fleet;
pub(crate) mod fleet_facts;
#[cfg(test)]
mod floors;
pub mod handlers;
pub mod health;
pub(crate) mod http;
pub(crate) mod kv_raft;
pub(crate) mod limit;
pub mod logging;
pub(crate) mod metrics;
pub mod model;
pub(crate) mod persist;
pub mod protocol;
pub(crate) mod reactor;
pub(crate) mod registration;
pub(crate) mod remoting;
pub mod server;
pub mod state;
#[doc(hidden)]
pub mod test_support;
pub(crate) mod tls;
pub(crate) mod warm;
pub(crate) mod write_command;
pub(crate) mod writer;
