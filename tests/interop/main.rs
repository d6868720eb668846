//! The real-peer suites: Java 5.5.0/4.9.x brokers, name server, controller, proxy, mqadmin and clients, the Go,
//! C++ and JavaScript clients, a browser, and the deployment files of `docs/deploy` (the container image under podman,
//! the Helm chart against the Kubernetes API types, the Debian package under dpkg) (`docs/interop.md`). Every test here is ignored, so that a plain `cargo
//! test` needs nothing but Rust; `cargo test -- --ignored` runs them, and fails (never skips) when a peer cannot
//! run. Tests of one module take its lock (`support::interop::serial`) and run one after another; modules run side
//! by side, at most `NAMESRV_PEER_SLOTS` (default 2) tests with brokers at once. A test waiting for its module's lock
//! holds a harness thread: `--test-threads=16` lets the others go on meanwhile (`.ci/run` passes it).

#[path = "../support/mod.rs"]
mod support;

mod acl;
mod acl2;
mod bootstrap;
mod chart;
mod clients;
mod console;
mod container;
mod controller;
mod deb;
mod differential;
mod differential_controller;
mod go;
mod java49;
mod java5;
mod nsaddr;
