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
