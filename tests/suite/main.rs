//! The integration tests that need nothing but Rust: one test binary, a module per area, `support` compiled once.
//! The real-peer tests among them (`admin_cli::java_peers`, `tls::java_peers`) are ignored; `cargo test --
//! --ignored` runs them with the suites of `tests/interop/` (README "Test it").

#[path = "../support/mod.rs"]
mod support;

mod acl2_trust;
mod admin;
mod admin_cli;
mod admission;
mod bootstrap;
mod cli_habits;
mod console_api;
mod console_page;
mod controller;
mod core;
mod decode_cost;
mod events;
mod fleet;
mod fuzz_pass;
mod health;
mod http_hardening;
mod kv_durability;
mod kv_replication;
mod logs;
mod ops;
mod recorder;
mod reliability;
mod runtime_bounds;
mod security;
mod state_model;
mod tls;

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Turns between the tests of this binary that bound a wait by wall time (a verdict, an answer within a second) and
/// those that load the machine (thousands of connections, SIGKILL loops, Raft clusters, fuzzing): the first run
/// with none of the second beside them (`alone`); the second run side by side (`heavy`). Every other test runs when
/// the harness has a thread for it, as before.
static TURNS: RwLock<()> = RwLock::new(());

pub fn alone() -> RwLockWriteGuard<'static, ()> {
    TURNS.write().unwrap_or_else(|e| e.into_inner())
}

pub fn heavy() -> RwLockReadGuard<'static, ()> {
    TURNS.read().unwrap_or_else(|e| e.into_inner())
}
