//! A real Apache RocketMQ broker (Java), fetched by `tests/peers/fetch.sh` and run with small heaps on 127.0.0.1
//! against the name servers we give it. It can be stopped (SIGKILL or SIGTERM) and started again with the same
//! store and ports. Also: raw-protocol probes of a name server (cluster info, routes) for polling without starting a
//! JVM each time.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::client::Client;
use super::proc::{jvm_args, prepare_rocketmq_home, Managed};

/// The newest 4.9.x broker on Maven Central. `rocketmq-broker` and `rocketmq-namesrv` 4.9.8 were never published
/// there (only `tools`, `client` and the libraries are), so the 4.9 line runs broker 4.9.7 with tools and client
/// 4.9.8.
pub const BROKER_49: &str = "4.9.7";

/// How long a cold broker may take on two busy cores.
const BOOT_TIMEOUT: Duration = Duration::from_secs(180);

/// Picks `listenPort` such that `listenPort − 2` (the "VIP" channel), `listenPort` and `listenPort + 1` (HA) are
/// all free right now, outside the ephemeral range (see `free_port_block`).
pub fn free_broker_port() -> u16 {
    super::free_port_block(4) + 2
}

pub struct Broker {
    pub version: String,
    pub cluster: String,
    pub name: String,
    namesrv: String,
    port: u16,
    lib: PathBuf,
    dir: TempDir,
    proc: Option<Managed>,
    starts: u32,
    extra: Vec<(String, String)>,
}

impl Broker {
    /// Starts a master broker `name` in `cluster`, registering with `namesrv` (`host:port`, several separated by
    /// `;`) every 10 s (the minimum the broker accepts). Waits until it has booted.
    pub fn start(version: &str, cluster: &str, name: &str, namesrv: &str) -> Broker {
        Self::start_with(version, cluster, name, namesrv, &[])
    }

    /// Like `start`, with extra `broker.conf` properties (they override the defaults above).
    pub fn start_with(version: &str, cluster: &str, name: &str, namesrv: &str, extra: &[(&str, &str)]) -> Broker {
        let lib = super::java::fetch(version, &["broker"]);
        let dir = tempfile::Builder::new().prefix("interop-broker-").tempdir().expect("temp dir");
        prepare_rocketmq_home(dir.path());
        let mut b = Broker {
            version: version.to_string(),
            cluster: cluster.to_string(),
            name: name.to_string(),
            namesrv: namesrv.to_string(),
            port: free_broker_port(),
            lib,
            dir,
            proc: None,
            starts: 0,
            extra: extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        b.start_again();
        b
    }

    pub fn addr_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_running(&self) -> bool {
        self.proc.is_some()
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.out")
    }

    /// The broker's stdout/stderr and the tail of its `broker.log`, for failure messages.
    pub fn log(&self) -> String {
        format!(
            "--- broker.out (tail) ---\n{}\n--- broker.log (tail) ---\n{}",
            super::tail(&self.log_path(), 40),
            super::tail(&self.dir.path().join("home/logs/rocketmqlogs/broker.log"), 40)
        )
    }

    /// SIGKILL: the broker's connections close without an UNREGISTER_BROKER.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    /// SIGTERM: the broker's shutdown hook sends UNREGISTER_BROKER to every name server, then exits.
    pub fn shutdown(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.terminate(Duration::from_secs(30));
        }
    }

    /// Starts the broker again (same store, ports and name servers) and waits until it has booted.
    pub fn start_again(&mut self) {
        self.kill();
        self.starts += 1;
        let conf = self.dir.path().join("conf/broker.conf");
        let extra: Vec<(&str, &str)> = self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let props =
            properties(&self.cluster, &self.name, "127.0.0.1", self.port, &self.namesrv, self.dir.path(), &extra);
        super::write_properties(&conf, &props);
        let heap = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", "-XX:TieredStopAtLevel=1"];
        let cmd = command(Command::new("java"), &self.version, self.dir.path(), &self.lib, &conf, &self.namesrv, &heap);
        let what = format!("broker {} {} (start #{})", self.version, self.name, self.starts);
        let log = self.log_path();
        let marker = super::tail(&log, 100_000).matches("boot success").count();
        let mut p = Managed::spawn(&what, cmd, &log);
        p.wait_accepting(SocketAddr::from(([127, 0, 0, 1], self.port)), BOOT_TIMEOUT);
        // "The broker[broker-a, 127.0.0.1:10911] boot success. serializeType=JSON and name server is ..."
        let booted = super::eventually(BOOT_TIMEOUT, || {
            p.assert_running();
            super::tail(&log, 100_000).matches("boot success").count() > marker
        });
        assert!(booted, "{what} did not boot within {BOOT_TIMEOUT:?}\n{}", self.log());
        self.proc = Some(p);
    }
}

/// The `broker.conf` of broker `name` of `cluster` serving on `ip:port` (HA on `port + 1`), registering with
/// `namesrv` (`a;b`) every 10 s, its store under `dir/store`: a master (brokerId 0, `ASYNC_MASTER`) with small files,
/// then `extra` in order — a key given replaces the default (and goes last), an empty value removes it.
pub fn properties(
    cluster: &str,
    name: &str,
    ip: &str,
    port: u16,
    namesrv: &str,
    dir: &Path,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let store = dir.join("store");
    let mut props: Vec<(String, String)> = [
        ("brokerClusterName", cluster.to_string()),
        ("brokerName", name.to_string()),
        ("brokerId", "0".into()),
        ("brokerRole", "ASYNC_MASTER".into()),
        ("flushDiskType", "ASYNC_FLUSH".into()),
        ("brokerIP1", ip.to_string()),
        ("brokerIP2", ip.to_string()),
        ("listenPort", port.to_string()),
        ("haListenPort", (port + 1).to_string()),
        ("namesrvAddr", namesrv.to_string()),
        ("fetchNamesrvAddrByAddressServer", "false".into()),
        ("registerNameServerPeriod", "10000".into()),
        ("storePathRootDir", store.display().to_string()),
        ("storePathCommitLog", store.join("commitlog").display().to_string()),
        ("autoCreateTopicEnable", "true".into()),
        ("autoCreateSubscriptionGroup", "true".into()),
        ("mappedFileSizeCommitLog", "67108864".into()),
        ("mappedFileSizeConsumeQueue", "600000".into()),
        ("timerWheelEnable", "false".into()),
        ("diskMaxUsedSpaceRatio", "95".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in extra {
        props.retain(|(pk, _)| pk != k);
        if !v.is_empty() {
            props.push((k.to_string(), v.to_string()));
        }
    }
    props
}

/// The `extra` keys of controller mode (RIP-44) for `properties`: the controllers (`a;b;c`) assign brokerId and
/// brokerRole, so those are left out, and a master acknowledges a message only once every replica of its
/// SyncStateSet has it (`allAckInSyncStateSet`).
pub fn controller_mode(controllers: &str) -> Vec<(&'static str, String)> {
    vec![
        ("brokerId", String::new()),
        ("brokerRole", String::new()),
        ("enableControllerMode", "true".into()),
        ("controllerAddr", controllers.to_string()),
        ("allAckInSyncStateSet", "true".into()),
    ]
}

/// `cmd` (`java`, or `java` run inside a network namespace) set up to run broker `version`'s `BrokerStartup` with
/// `conf`, the jars of `lib`, its home and logs in `dir`, and the JVM options `heap`.
pub fn command(
    mut cmd: Command,
    version: &str,
    dir: &Path,
    lib: &Path,
    conf: &Path,
    namesrv: &str,
    heap: &[&str],
) -> Command {
    cmd.args(jvm_args(version, dir, heap))
        .arg("-Drocketmq.broker.diskSpaceWarningLevelRatio=0.98")
        .arg("-cp")
        .arg(format!("{}:{}/*", dir.join("conf").display(), lib.display()))
        .arg("org.apache.rocketmq.broker.BrokerStartup")
        .arg("-c")
        .arg(conf)
        .current_dir(dir)
        .env("ROCKETMQ_HOME", dir)
        .env("NAMESRV_ADDR", namesrv)
        .env_remove("ROCKETMQ_SERIALIZE_TYPE");
    cmd
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// GET_BROKER_CLUSTER_INFO (106) from `ns`, the body as text; `None` if the server cannot be reached.
pub fn cluster_info(ns: SocketAddr) -> Option<String> {
    let stream = std::net::TcpStream::connect_timeout(&ns, Duration::from_secs(2)).ok()?;
    drop(stream);
    let mut c = Client::connect(ns);
    let cmd = c.cmd(106);
    let r = c.try_request(cmd, Duration::from_secs(5)).ok()?;
    (r.code == 0).then(|| String::from_utf8_lossy(&r.body).into_owned())
}

/// GET_ROUTEINFO_BY_TOPIC (105, version 513) from `ns`: the route JSON, or `None` (no route, or unreachable).
pub fn route(ns: SocketAddr, topic: &str) -> Option<String> {
    let stream = std::net::TcpStream::connect_timeout(&ns, Duration::from_secs(2)).ok()?;
    drop(stream);
    let mut c = Client::connect(ns);
    let cmd = c.cmd(105).with_ext("topic", topic);
    let r = c.try_request(cmd, Duration::from_secs(5)).ok()?;
    (r.code == 0).then(|| String::from_utf8_lossy(&r.body).into_owned())
}

/// Polls `probe` (`super::eventually_some`) until it returns `Some`, with how long that took; panics after
/// `timeout` with `what` and `context()`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    probe: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> (T, Duration) {
    let started = Instant::now();
    let found = super::eventually_some(timeout, probe);
    let found = found.unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}\n{}", context()));
    (found, started.elapsed())
}

/// Waits until `ns` lists `broker` (by address) in its cluster info.
pub fn wait_registered(ns: SocketAddr, broker: &Broker, timeout: Duration) -> Duration {
    let addr = broker.addr_string();
    let (_, took) = wait_for(
        &format!("{} at {addr} to register with {ns}", broker.name),
        timeout,
        || cluster_info(ns).filter(|body| body.contains(&addr)),
        || format!("cluster info: {:?}\n{}", cluster_info(ns), broker.log()),
    );
    took
}
