//! The processes of the fault tests, each in its own namespace (`net.rs`) at a fixed port of its own address (no
//! port is shared with anything else on the machine): controller nodes of ours (`mqnamesrv controller`) or Java's,
//! name servers of ours or Java's, and Java 5.5.0 brokers: of one group in controller mode (the controller test) or
//! masters of groups of their own (the fleet test). Every process is a `Managed` child: SIGKILLed on drop and by a
//! watchdog if the test process dies without unwinding.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::net::Host;
use crate::support::broker;
use crate::support::java::JAVA_5X;
use crate::support::proc::{jvm_args, prepare_rocketmq_home, Managed};

pub const CLUSTER: &str = "JepsenCluster";
pub const GROUP: &str = "jepsen-broker";
/// The controller port, the same on every node's address.
pub const CTL_PORT: u16 = 9878;
pub const NS_PORT: u16 = 9876;
pub const BROKER_PORT: u16 = 10911;

/// How long a cold broker may take to boot on two busy cores.
const BROKER_BOOT: Duration = Duration::from_secs(180);

/// Sends `signal` (`STOP`, `CONT`) to a process.
fn signal(pid: u32, signal: &str) {
    let ok = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().is_ok_and(|s| s.success());
    assert!(ok, "kill -{signal} {pid}");
}

/// The `mqnamesrv` our controller nodes and name server run: the one cargo built for this test, or
/// `JEPSEN_NAMESRV_BIN` (a build with a `fault-*` feature, to show the checker catching its bug).
fn ours_binary() -> String {
    std::env::var("JEPSEN_NAMESRV_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_mqnamesrv").to_string())
}

/// A controller node or a name server in a namespace, started again on the same files after a kill: `mqnamesrv`
/// of ours, or Java 5.5.0's stand-alone controller (`JEPSEN_CONTROLLERS=java`, for the side-by-side runs).
pub struct Proc {
    pub name: String,
    pub host: Host,
    port: u16,
    dir: PathBuf,
    /// Extra arguments after `-c FILE` (`controller` for a controller node).
    args: Vec<String>,
    props: Vec<(String, String)>,
    proc: Option<Managed>,
    starts: u32,
    /// Java's classpath (`lib/`) and main class when this is a Java process; `None` for a program of ours.
    java: Option<(PathBuf, &'static str)>,
}

/// How long a node may take to accept connections: a cold JVM on two busy cores takes several seconds.
const START_OURS: Duration = Duration::from_secs(30);
const START_JAVA: Duration = Duration::from_secs(90);

impl Proc {
    /// A controller node `name` (`n0`…) of the group `peers` (`n0-ip:port;…`), files under `dir`.
    pub fn controller(name: &str, host: Host, peers: &str, dir: &Path) -> Proc {
        let props = [
            ("controllerDLegerGroup", "group1".to_string()),
            ("controllerDLegerPeers", peers.to_string()),
            ("controllerDLegerSelfId", name.to_string()),
            ("controllerStorePath", dir.join("store").display().to_string()),
        ];
        Self::new(name, host, CTL_PORT, dir, &["controller"], &props)
    }

    /// Java 5.5.0's `ControllerStartup` (DLedger, the default `controllerType`) as node `name` of `peers`, with
    /// the same group, ids and addresses as ours: the brokers, the recorder and the nemeses address it the same
    /// way. It serves the brokers on its DLedger address (controller-protocol.md §1), so `listenPort`, which only
    /// its unused second server binds, is moved off `CTL_PORT`.
    pub fn java_controller(name: &str, host: Host, peers: &str, dir: &Path, lib: &Path) -> Proc {
        prepare_rocketmq_home(dir);
        let props = [
            ("controllerDLegerGroup", "group1".to_string()),
            ("controllerDLegerPeers", peers.to_string()),
            ("controllerDLegerSelfId", name.to_string()),
            ("controllerStorePath", dir.join("store").display().to_string()),
            ("listenPort", (CTL_PORT + 1).to_string()),
            // 10 MiB DLedger files instead of 1 GiB: the disk and page cache are shared.
            ("mappedFileSize", "10485760".to_string()),
        ];
        let mut p = Self::new(name, host, CTL_PORT, dir, &[], &props);
        p.java = Some((lib.to_path_buf(), "org.apache.rocketmq.controller.ControllerStartup"));
        p
    }

    /// A name server of ours, `name`, serving on `NS_PORT` of its host, with `extra` keys in its file.
    pub fn name_server(name: &str, host: Host, dir: &Path, extra: &[(&str, String)]) -> Proc {
        let mut props = vec![
            ("listenPort", NS_PORT.to_string()),
            ("bindAddress", host.addr.to_string()),
            ("kvConfigPath", dir.join("kvConfig.json").display().to_string()),
        ];
        props.extend(extra.iter().cloned());
        Self::new(name, host, NS_PORT, dir, &[], &props)
    }

    /// Java 5.5.0's name server (`NamesrvStartup`, the `namesrv` artifact at `lib`) as `name`, for the fleet test's
    /// side-by-side runs: the same port, address and files as ours.
    pub fn java_name_server(name: &str, host: Host, dir: &Path, lib: &Path) -> Proc {
        prepare_rocketmq_home(dir);
        let mut p = Self::name_server(name, host, dir, &[]);
        p.java = Some((lib.to_path_buf(), "org.apache.rocketmq.namesrv.NamesrvStartup"));
        p
    }

    fn new(name: &str, host: Host, port: u16, dir: &Path, args: &[&str], props: &[(&str, String)]) -> Proc {
        std::fs::create_dir_all(dir).expect("mkdir");
        Proc {
            name: name.to_string(),
            host,
            port,
            dir: dir.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            props: props.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            proc: None,
            starts: 0,
            java: None,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.host.addr, self.port))
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("out.log")
    }

    /// `controllerStorePath`: our node's Raft files (`raft-log`, `raft-meta.json`), or Java's DLedger store.
    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }

    /// Starts the process and waits until it accepts connections (through the bridge, as everyone reaches it).
    pub fn start(&mut self) {
        assert!(self.proc.is_none(), "{} is running", self.name);
        self.starts += 1;
        let file = self.dir.join("node.properties");
        crate::support::write_properties(&file, &self.props);
        let cmd = match &self.java {
            None => {
                let mut cmd = self.host.command(&ours_binary());
                cmd.arg("-c").arg(&file).args(&self.args).current_dir(&self.dir).env("HOME", &self.dir);
                if std::env::var_os("RUST_LOG").is_none() {
                    cmd.env("RUST_LOG", "info");
                }
                cmd
            }
            Some((lib, main)) => {
                let mut cmd = self.host.command("java");
                cmd.args(jvm_args(
                    JAVA_5X,
                    &self.dir,
                    &["-Xms64m", "-Xmx192m", "-XX:MaxDirectMemorySize=128m", "-XX:TieredStopAtLevel=1"],
                ))
                .arg("-cp")
                .arg(format!("{}:{}/*", self.dir.join("conf").display(), lib.display()))
                .arg(main)
                .arg("-c")
                .arg(&file)
                .current_dir(&self.dir)
                // ControllerStartup exits without ROCKETMQ_HOME.
                .env("ROCKETMQ_HOME", &self.dir)
                .env_remove("ROCKETMQ_SERIALIZE_TYPE");
                cmd
            }
        };
        let log = self.log_path();
        if let Ok(mut f) = std::fs::File::options().create(true).append(true).open(&log) {
            let _ = std::io::Write::write_all(&mut f, format!("=== start #{} ===\n", self.starts).as_bytes());
        }
        let mut p = Managed::spawn(&format!("{} ({})", self.name, self.host.ns), cmd, &log);
        p.wait_accepting(self.addr(), if self.java.is_some() { START_JAVA } else { START_OURS });
        self.proc = Some(p);
    }

    /// SIGKILL: gone at once, with whatever it had not written.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    fn pid(&self) -> u32 {
        self.proc.as_ref().and_then(Managed::pid).unwrap_or_else(|| panic!("{} is not running", self.name))
    }

    /// SIGSTOP: the process stops where it is; its sockets stay open and the kernel still accepts connections.
    pub fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    pub fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    pub fn log_tail(&self, lines: usize) -> String {
        format!("--- {} ---\n{}", self.name, crate::support::tail(&self.log_path(), lines))
    }
}

/// A Java 5.5.0 broker at `BROKER_PORT` of its host: of `GROUP` in controller mode (`allAckInSyncStateSet=true`),
/// or the master of a group of its own (`master`).
pub struct JavaBroker {
    pub name: String,
    pub host: Host,
    lib: PathBuf,
    dir: PathBuf,
    namesrv: String,
    /// The group (`brokerName`).
    pub group: String,
    /// The controllers' addresses in controller mode; `None` for a master of its own group.
    controllers: Option<String>,
    proc: Option<Managed>,
    /// "boot success" lines in the log before the current start: the start is done when there is one more.
    boots_before: usize,
    starts: u32,
}

impl JavaBroker {
    pub fn new(name: &str, host: Host, lib: &Path, dir: &Path, namesrv: &str, controllers: &str) -> JavaBroker {
        Self::make(name, GROUP, host, lib, dir, namesrv, Some(controllers.to_string()))
    }

    /// The master (brokerId 0, `ASYNC_MASTER`) of a group `group` of its own, registering with `namesrv`
    /// (`a;b;c`). It runs in slave-acting-master mode, for what that mode makes it send: a heartbeat timeout of
    /// 10 s (`brokerNotActiveTimeoutMillis`) with every registration and a heartbeat every second, so that a name
    /// server drops it 10 s after it goes silent instead of the 120 s default.
    pub fn master(name: &str, group: &str, host: Host, lib: &Path, dir: &Path, namesrv: &str) -> JavaBroker {
        Self::make(name, group, host, lib, dir, namesrv, None)
    }

    fn make(
        name: &str,
        group: &str,
        host: Host,
        lib: &Path,
        dir: &Path,
        namesrv: &str,
        controllers: Option<String>,
    ) -> JavaBroker {
        prepare_rocketmq_home(dir);
        JavaBroker {
            name: name.to_string(),
            host,
            lib: lib.to_path_buf(),
            dir: dir.to_path_buf(),
            namesrv: namesrv.to_string(),
            group: group.to_string(),
            controllers,
            proc: None,
            boots_before: 0,
            starts: 0,
        }
    }

    pub fn addr_string(&self) -> String {
        format!("{}:{BROKER_PORT}", self.host.addr)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("broker.out")
    }

    /// Its `broker.conf`: the fixture's broker (support/broker.rs) with the namespace's address (the controllers and
    /// the other broker reach it there), in controller mode, or the master of a group of its own in
    /// slave-acting-master mode.
    fn conf(&self) -> Vec<(String, String)> {
        let extra: Vec<(&str, String)> = match &self.controllers {
            Some(controllers) => broker::controller_mode(controllers),
            None => vec![("enableSlaveActingMaster", "true".into())],
        };
        let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let ip = self.host.addr.to_string();
        broker::properties(CLUSTER, &self.group, &ip, BROKER_PORT, &self.namesrv, &self.dir, &extra)
    }

    /// Starts the JVM (same store, ports and identity file as before) without waiting for it: `wait_booted`.
    pub fn spawn(&mut self) {
        assert!(self.proc.is_none(), "{} is running", self.name);
        self.starts += 1;
        let conf = self.dir.join("conf/broker.conf");
        crate::support::write_properties(&conf, &self.conf());
        let heap = ["-Xms128m", "-Xmx384m", "-XX:MaxDirectMemorySize=384m", "-XX:TieredStopAtLevel=1"];
        let java = self.host.command("java");
        let cmd = broker::command(java, JAVA_5X, &self.dir, &self.lib, &conf, &self.namesrv, &heap);
        let log = self.log_path();
        self.boots_before = crate::support::tail(&log, 1_000_000).matches("boot success").count();
        self.proc = Some(Managed::spawn(&format!("broker {} (start #{})", self.name, self.starts), cmd, &log));
    }

    /// Waits until the broker started by `spawn` has booted ("boot success" logged); panics if it exits.
    pub fn wait_booted(&mut self) {
        let log = self.log_path();
        let (proc, boots_before) = (&mut self.proc, self.boots_before);
        let booted = crate::support::eventually_every(BROKER_BOOT, Duration::from_millis(200), || {
            proc.as_mut().expect("spawned").assert_running();
            crate::support::tail(&log, 1_000_000).matches("boot success").count() > boots_before
        });
        assert!(booted, "{} did not boot within {BROKER_BOOT:?}\n{}", self.name, self.log_tail(40));
    }

    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    fn pid(&self) -> u32 {
        self.proc.as_ref().and_then(Managed::pid).unwrap_or_else(|| panic!("broker {} is not running", self.name))
    }

    /// SIGSTOP of the broker's JVM: its connections stay open, nothing is answered or sent.
    pub fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    pub fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    pub fn log_tail(&self, lines: usize) -> String {
        format!(
            "--- broker {} out ---\n{}\n--- broker.log ---\n{}",
            self.name,
            crate::support::tail(&self.log_path(), lines),
            crate::support::tail(&self.dir.join("home/logs/rocketmqlogs/broker.log"), lines)
        )
    }
}

/// The brokers run with the `broker.conf` they had when the harness wrote its own (the keys and values of a run's
/// `b0/conf/broker.conf` then, in controller mode in that order; the fleet test's masters as a set).
#[test]
fn the_brokers_conf_is_the_one_the_harness_wrote_before_the_fixture() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path().display();
    let host = Host { ns: "jepsen-b0".into(), addr: std::net::Ipv4Addr::new(10, 231, 0, 20) };
    let lib = Path::new("/nonexistent");
    let controllers = "10.231.0.10:9878;10.231.0.11:9878;10.231.0.12:9878";
    let before = |mode: &[&str]| -> Vec<String> {
        let mut lines: Vec<String> = [
            "brokerClusterName=JepsenCluster",
            "brokerName=jepsen-broker",
            "flushDiskType=ASYNC_FLUSH",
            "brokerIP1=10.231.0.20",
            "brokerIP2=10.231.0.20",
            "listenPort=10911",
            "haListenPort=10912",
            "namesrvAddr=10.231.0.30:9876",
            "fetchNamesrvAddrByAddressServer=false",
            "registerNameServerPeriod=10000",
            &format!("storePathRootDir={d}/store"),
            &format!("storePathCommitLog={d}/store/commitlog"),
            "autoCreateTopicEnable=true",
            "autoCreateSubscriptionGroup=true",
            "mappedFileSizeCommitLog=67108864",
            "mappedFileSizeConsumeQueue=600000",
            "timerWheelEnable=false",
            "diskMaxUsedSpaceRatio=95",
        ]
        .iter()
        .map(|l| l.to_string())
        .collect();
        lines.extend(mode.iter().map(|l| l.to_string()));
        lines
    };
    let lines = |b: &JavaBroker| -> Vec<String> { b.conf().into_iter().map(|(k, v)| format!("{k}={v}")).collect() };

    let b = JavaBroker::new("b0", host.clone(), lib, dir.path(), "10.231.0.30:9876", controllers);
    let controller_mode =
        ["enableControllerMode=true", &format!("controllerAddr={controllers}"), "allAckInSyncStateSet=true"];
    assert_eq!(lines(&b), before(&controller_mode));

    let m = JavaBroker::master("b0", GROUP, host, lib, dir.path(), "10.231.0.30:9876");
    let mut got = lines(&m);
    let mut want = before(&["brokerId=0", "brokerRole=ASYNC_MASTER", "enableSlaveActingMaster=true"]);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}
