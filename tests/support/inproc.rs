//! The one in-process server fixture every suite uses: a server on 127.0.0.1, its files in a temporary directory,
//! a clock the test moves by hand, restart on the same files.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use namesrv::config::Config;
use namesrv::test_support::clock::ManualClock;
use namesrv::test_support::server::{self, ServerHandle};

/// 127.0.0.1 on a free port, two unpinned reactors, a 10 ms expiry scan, the KV and config files in `dir`, and a
/// `tls.config.file` that does not exist (so no file on the machine changes a test).
pub fn loopback_config(dir: &Path) -> Config {
    Config {
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        reactor_threads: 2,
        pin_threads: false,
        scan_not_active_broker_interval: 10,
        kv_config_path: dir.join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.join("namesrv.properties").to_string_lossy().into_owned(),
        tls_config_file: dir.join("no-tls.properties").to_string_lossy().into_owned(),
        ..Config::default()
    }
}

/// A server started from `loopback_config` (changed by the test's `tweak`) with a `ManualClock` at
/// `registration::T0`. Derefs to its `ServerHandle`.
pub struct InProc {
    server: Option<ServerHandle>,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
    pub config: Config,
}

impl InProc {
    pub fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = loopback_config(dir.path());
        tweak(&mut config);
        let clock = ManualClock::new(super::registration::T0);
        let server = server::start_with_clock(config.clone(), clock.clone()).expect("server starts");
        InProc { server: Some(server), clock, dir, config }
    }

    /// The running server.
    pub fn server(&self) -> &ServerHandle {
        self.server.as_ref().expect("the server is running")
    }

    pub fn addr(&self) -> SocketAddr {
        self.server().local_addr()
    }

    pub fn client(&self) -> super::client::Client {
        super::client::Client::connect(self.addr())
    }

    /// A file in the server's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Stops the server (what it saves at stop is on disk when this returns).
    pub fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }

    /// Graceful stop (`ServerHandle::shutdown_gracefully`); whether everything owed was delivered.
    pub fn stop_gracefully(&mut self) -> bool {
        self.take().shutdown_gracefully()
    }

    /// The running server, handed over (to stop it from another thread, say); `restart` starts a new one.
    pub fn take(&mut self) -> ServerHandle {
        self.server.take().expect("the server is running")
    }

    /// Stops the server (if it runs) and starts a new one on the same configuration, files and clock.
    pub fn restart(&mut self) {
        self.stop();
        let server = server::start_with_clock(self.config.clone(), self.clock.clone()).expect("server restarts");
        self.server = Some(server);
    }
}

impl std::ops::Deref for InProc {
    type Target = ServerHandle;

    fn deref(&self) -> &ServerHandle {
        self.server()
    }
}
