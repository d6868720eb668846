//! The integration tests that need nothing but Rust: one test binary, a module per area, `support` compiled once.
//! The real-peer tests among them (`admin_cli::java_peers`, `tls::java_peers`) are ignored; `cargo test --
//! --ignored` runs them with the suites of `tests/interop/` (README "Test it").

#[path = "../support/mod.rs"]
mod support;

mod admin;
mod admin_cli;
mod cli_habits;
mod console_api;
mod console_page;
mod controller;
mod core;
mod events;
mod fleet;
mod fuzz_pass;
mod health;
mod http_hardening;
mod kv_durability;
mod logs;
mod ops;
mod recorder;
mod reliability;
mod security;
mod state_model;
mod tls;
