//! In-process servers for tests: the configuration every such test starts from.

use std::path::Path;

use namesrv::config::Config;

/// 127.0.0.1 on a free port, two unpinned reactors, a 10 ms expiry scan, and the KV and config files in `dir`.
pub fn loopback_config(dir: &Path) -> Config {
    Config {
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        reactor_threads: 2,
        pin_threads: false,
        scan_not_active_broker_interval: 10,
        kv_config_path: dir.join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.join("namesrv.properties").to_string_lossy().into_owned(),
        ..Config::default()
    }
}

/// A server started from `loopback_config` with a `ManualClock` at `registration::T0`, and its temporary directory.
pub struct InProc {
    pub server: namesrv::server::ServerHandle,
    pub clock: std::sync::Arc<namesrv::clock::ManualClock>,
    pub dir: tempfile::TempDir,
}

impl InProc {
    pub fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = loopback_config(dir.path());
        tweak(&mut config);
        let clock = namesrv::clock::ManualClock::new(super::registration::T0);
        let server = namesrv::server::start_with_clock(config, clock.clone()).expect("server starts");
        InProc { server, clock, dir }
    }

    pub fn client(&self) -> super::client::Client {
        super::client::Client::connect(self.server.local_addr())
    }
}
