//! The real Apache RocketMQ name server (Java), fetched by `tests/peers/fetch.sh` and run with small heaps on
//! 127.0.0.1. The JVM is killed when the handle is dropped (including during a panic), and by a watchdog if the test
//! process dies without unwinding.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

/// The 5.x release the differential tests answer against: the newest one with namesrv, broker, tools and client
/// all on Maven Central (5.5.1 has no namesrv, tools or client artifacts). `MQVersion.CURRENT_VERSION` = 513.
pub const JAVA_5X: &str = "5.5.0";
/// What 4.9.x needs to run on Java 17 (`MappedFile.clean` reflects on `DirectByteBuffer.cleaner()`).
pub const JAVA17_FLAGS_FOR_49: &[&str] = &[
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
];

/// The newest 4.9.x tools and client on Maven Central (there is no 4.9.8 namesrv or broker artifact there).
pub const JAVA_49: &str = "4.9.8";

/// How long the JVM may take to accept connections (a cold JVM on two cores takes ~3 s).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `tests/peers/fetch.sh VERSION ARTIFACT...` and returns the lib directory. Panics with the script's
/// output when it fails.
pub fn fetch(version: &str, artifacts: &[&str]) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/fetch.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(version)
        .args(artifacts)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} {version} {artifacts:?} failed ({}):\n{stdout}\n{stderr}",
        script.display(),
        out.status
    );
    let lib = PathBuf::from(stdout.trim());
    assert!(lib.is_dir(), "fetch.sh printed {lib:?}, which is not a directory");
    lib
}

/// A running Java name server.
pub struct JavaNamesrv {
    child: Child,
    watchdog: Option<Child>,
    port: u16,
    version: String,
    dir: TempDir,
}

impl JavaNamesrv {
    /// Starts the Java name server of `version` with default settings.
    pub fn start(version: &str) -> JavaNamesrv {
        Self::start_with(version, &[])
    }

    /// Starts it with extra properties (Java key names) in its `-c` file.
    pub fn start_with(version: &str, extra: &[(&str, &str)]) -> JavaNamesrv {
        let lib = fetch(version, &["namesrv"]);
        let dir = tempfile::Builder::new().prefix("java-namesrv-").tempdir().expect("temp dir");
        let home = dir.path().join("home");
        let conf = dir.path().join("conf");
        std::fs::create_dir_all(&home).expect("mkdir home");
        std::fs::create_dir_all(&conf).expect("mkdir conf");
        if version.starts_with("4.") {
            // 4.9.x startups insist on $ROCKETMQ_HOME/conf/logback_namesrv.xml.
            std::fs::write(
                conf.join("logback_namesrv.xml"),
                r#"<configuration><appender name="O" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{1} - %m%n</pattern></encoder></appender><root level="INFO"><appender-ref ref="O"/></root></configuration>"#,
            )
            .expect("write logback config");
        }

        // A `listenPort` among `extra` is kept (a name server replaced on the address its brokers know).
        let port = extra.iter().find(|(k, _)| *k == "listenPort").and_then(|(_, v)| v.parse().ok());
        let port = port.unwrap_or_else(super::free_port);
        let mut props = vec![
            ("listenPort".to_string(), port.to_string()),
            ("bindAddress".to_string(), "127.0.0.1".to_string()),
            ("kvConfigPath".to_string(), home.join("namesrv/kvConfig.json").display().to_string()),
        ];
        props.extend(extra.iter().filter(|(k, _)| *k != "listenPort").map(|(k, v)| (k.to_string(), v.to_string())));
        let props_file = conf.join("namesrv.properties");
        super::write_properties(&props_file, &props);

        let log = dir.path().join("namesrv.out");
        let out = File::create(&log).expect("create log");
        let err = out.try_clone().expect("clone log");
        let mut cmd = Command::new("java");
        cmd.args([
            "-Xms128m",
            "-Xmx256m",
            "-Xss512k",
            "-XX:+UseSerialGC",
            "-XX:ActiveProcessorCount=2",
            "-XX:TieredStopAtLevel=1",
            "-XX:-OmitStackTraceInFastThrow",
        ])
        .arg(format!("-Duser.home={}", home.display()))
        .arg(format!("-Drocketmq.home.dir={}", dir.path().display()));
        if version.starts_with("4.") {
            cmd.args(JAVA17_FLAGS_FOR_49);
        }
        cmd.arg("-cp")
            .arg(format!("{}:{}/*", conf.display(), lib.display()))
            .arg("org.apache.rocketmq.namesrv.NamesrvStartup")
            .arg("-c")
            .arg(&props_file)
            .current_dir(dir.path())
            .env_remove("NAMESRV_ADDR")
            .env_remove("ROCKETMQ_SERIALIZE_TYPE")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start java (is Java 17 installed?): {e}"));
        let watchdog = super::spawn_watchdog(child.id());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let what = format!("Java namesrv {version}");
        // On failure, make sure the watchdog goes too.
        let mut guard = WatchdogGuard(watchdog);
        super::wait_until_accepting(&what, &mut child, addr, START_TIMEOUT, &log);
        JavaNamesrv { child, watchdog: guard.0.take(), port, version: version.to_string(), dir }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// The temp directory holding `home/` (its `user.home`), `conf/` and `namesrv.out`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// stdout/stderr of the JVM plus the tail of its `namesrv.log`, for failure messages.
    pub fn log(&self) -> String {
        let rocketmq_log = self.dir.path().join("home/logs/rocketmqlogs/namesrv.log");
        format!(
            "--- namesrv.out ---\n{}\n--- namesrv.log (tail) ---\n{}",
            super::tail(&self.dir.path().join("namesrv.out"), 50),
            super::tail(&rocketmq_log, 50)
        )
    }
}

impl Drop for JavaNamesrv {
    fn drop(&mut self) {
        super::kill_and_reap(&mut self.child);
        if let Some(w) = self.watchdog.as_mut() {
            super::kill_and_reap(w);
        }
    }
}

struct WatchdogGuard(Option<Child>);

impl Drop for WatchdogGuard {
    fn drop(&mut self) {
        if let Some(w) = self.0.as_mut() {
            super::kill_and_reap(w);
        }
    }
}
