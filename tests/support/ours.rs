//! Our `mqnamesrv` binary, started like the Java one: a temp directory, a Java-style properties file with the Java
//! key names, `-c FILE`, logs (stderr) to a file, ready when the port accepts. Killed on drop.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `mqnamesrv`.
pub struct OurNamesrv {
    child: Child,
    watchdog: Option<Child>,
    port: u16,
    dir: TempDir,
}

impl OurNamesrv {
    pub fn start() -> OurNamesrv {
        Self::start_with(&[])
    }

    /// Starts it with extra properties (Java key names, e.g. `scanNotActiveBrokerInterval`).
    pub fn start_with(extra: &[(&str, &str)]) -> OurNamesrv {
        let dir = tempfile::Builder::new().prefix("our-namesrv-").tempdir().expect("temp dir");
        let port = super::free_port();
        let mut props = vec![
            ("listenPort".to_string(), port.to_string()),
            ("bindAddress".to_string(), "127.0.0.1".to_string()),
            ("kvConfigPath".to_string(), dir.path().join("kvConfig.json").display().to_string()),
        ];
        props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let props_file = dir.path().join("namesrv.properties");
        super::write_properties(&props_file, &props);

        let log = dir.path().join("mqnamesrv.log");
        let out = File::create(&log).expect("create log");
        let err = out.try_clone().expect("clone log");
        let child = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
            .arg("-c")
            .arg(&props_file)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", env!("CARGO_BIN_EXE_mqnamesrv")));
        let watchdog = super::spawn_watchdog(child.id());
        let mut server = OurNamesrv { child, watchdog, port, dir };
        let addr = server.addr();
        super::wait_until_accepting("mqnamesrv", &mut server.child, addr, START_TIMEOUT, &log);
        server
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id, for reading its memory from /proc.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temp directory holding the properties file, `kvConfig.json` and `mqnamesrv.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The tail of the server's log, for failure messages.
    pub fn log(&self) -> String {
        format!("--- mqnamesrv.log (tail) ---\n{}", super::tail(&self.dir.path().join("mqnamesrv.log"), 80))
    }
}

impl Drop for OurNamesrv {
    fn drop(&mut self) {
        super::kill_and_reap(&mut self.child);
        if let Some(w) = self.watchdog.as_mut() {
            super::kill_and_reap(w);
        }
    }
}
