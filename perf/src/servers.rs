//! Server processes under test: our release binary, the Java 5.5.0 name server (fetched by `tests/peers/fetch.sh`,
//! run from the cache with a small heap) and the no-work ceiling. Each runs as its own process on 127.0.0.1 so its
//! CPU time and RSS can be read from /proc; a shell watchdog kills it if this process dies without cleaning up.

use std::fmt;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::wire::BlockingConn;

/// The Java release we compare against.
pub const JAVA_VERSION: &str = "5.5.0";
const READY_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ours,
    /// Ours with `pinThreads=false`: what docs/operations.md advises when other busy processes share the cores —
    /// as the load generator does here.
    OursUnpinned,
    /// Ours with `reactorThreads=1`: the cores the one-thread load generator leaves on a 2-core machine.
    OursOneReactor,
    /// Ours with `aclEnable=true` (`acl.rs`): the account file first trusts 127.0.0.1 so the topology can be
    /// installed unsigned; the scenario then withdraws that and every query must be signed.
    OursAcl,
    /// Ours with `authenticationEnabled=true` (ACL 2.0, `acl.rs`): the perf reader is the initial user, and
    /// REGISTER_BROKER is whitelisted so the topology can be installed unsigned; every query must be signed.
    OursAcl2,
    Java,
    Ceiling,
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "ours" => Ok(Kind::Ours),
            "ours-unpinned" => Ok(Kind::OursUnpinned),
            "ours-1-reactor" => Ok(Kind::OursOneReactor),
            "ours-acl" => Ok(Kind::OursAcl),
            "ours-acl2" => Ok(Kind::OursAcl2),
            "java" => Ok(Kind::Java),
            "ceiling" => Ok(Kind::Ceiling),
            _ => Err(format!(
                "unknown server '{s}' (ours, ours-unpinned, ours-1-reactor, ours-acl, ours-acl2, java, ceiling)"
            )),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Ours => "ours",
            Kind::OursUnpinned => "ours-unpinned",
            Kind::OursOneReactor => "ours-1-reactor",
            Kind::OursAcl => "ours-acl",
            Kind::OursAcl2 => "ours-acl2",
            Kind::Java => "java",
            Kind::Ceiling => "ceiling",
        })
    }
}

/// How to start the servers.
#[derive(Clone, Debug)]
pub struct Launch {
    pub ours_bin: PathBuf,
    /// Java heap (`-Xms`/`-Xmx`).
    pub java_heap: String,
    /// Broker groups in the ceiling's canned route.
    pub ceiling_route_brokers: usize,
    pub ceiling_threads: usize,
    /// `KEY=VALUE` lines added to our server's properties file.
    pub ours_props: Vec<String>,
}

/// The workspace root (the `namesrv` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("perf/ has a parent").to_path_buf()
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            ours_bin: repo_root().join("target/release/mqnamesrv"),
            java_heap: "1g".into(),
            ceiling_route_brokers: 2,
            ceiling_threads: 2,
            ours_props: Vec::new(),
        }
    }
}

/// A running server process; killed on drop.
pub struct Server {
    pub kind: Kind,
    pub addr: SocketAddr,
    child: Child,
    watchdog: Option<Child>,
    /// From spawn to the first answered request.
    pub start_to_ready: Duration,
    dir: TempDir,
}

impl Server {
    pub fn start(kind: Kind, launch: &Launch) -> Result<Server, String> {
        let dir =
            tempfile::Builder::new().prefix(&format!("namesrv-perf-{kind}-")).tempdir().map_err(|e| e.to_string())?;
        let port = free_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut cmd = match kind {
            Kind::Ours => ours_command(launch, dir.path(), port, "")?,
            Kind::OursUnpinned => ours_command(launch, dir.path(), port, "pinThreads=false\n")?,
            Kind::OursOneReactor => ours_command(launch, dir.path(), port, "reactorThreads=1\n")?,
            Kind::OursAcl => {
                let file = dir.path().join("plain_acl.yml");
                std::fs::write(&file, acl_accounts(true)).map_err(|e| e.to_string())?;
                ours_command(launch, dir.path(), port, &format!("aclEnable=true\naclFile={}\n", file.display()))?
            }
            Kind::OursAcl2 => {
                let (user, password) = ACL_READER;
                let keys = format!(
                    "authenticationEnabled=true\ninnerClientAuthenticationCredentials={{\"accessKey\":\"perf-inner\",\"secretKey\":\"perf-inner-secret\"}}\n\
                     initAuthenticationUser={{\"username\":\"{user}\",\"password\":\"{password}\"}}\nauthenticationWhitelist=103\n\
                     authUsersPath={}\n",
                    dir.path().join("authUsers.json").display()
                );
                ours_command(launch, dir.path(), port, &keys)?
            }
            Kind::Java => java_command(launch, dir.path(), port)?,
            Kind::Ceiling => {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let mut c = Command::new(exe);
                c.args(["ceiling", "--port", &port.to_string()])
                    .args(["--route-brokers", &launch.ceiling_route_brokers.to_string()])
                    .args(["--threads", &launch.ceiling_threads.to_string()]);
                c
            }
        };
        let log = std::fs::File::create(dir.path().join("server.out")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let child = cmd
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot start {kind}: {e}"))?;
        let watchdog = spawn_watchdog(child.id());
        let mut server = Server { kind, addr, child, watchdog, start_to_ready: Duration::ZERO, dir };
        server.wait_ready(t0)?;
        Ok(server)
    }

    /// The server's temporary directory (its config, logs and, for `ours-acl`, `plain_acl.yml`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until a route query gets any answer.
    fn wait_ready(&mut self, t0: Instant) -> Result<(), String> {
        loop {
            if let Ok(mut c) = BlockingConn::connect(self.addr, Duration::from_millis(200)) {
                if c.route("perf-ready-probe").is_ok() {
                    self.start_to_ready = t0.elapsed();
                    return Ok(());
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{} exited with {status} before answering:\n{}", self.kind, self.log_tail()));
            }
            if t0.elapsed() > READY_TIMEOUT {
                return Err(format!("{} did not answer within {READY_TIMEOUT:?}:\n{}", self.kind, self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("server.out")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Resident set size in bytes.
    pub fn rss(&self) -> Option<u64> {
        rss_of(self.pid())
    }

    /// User + system CPU time consumed so far.
    pub fn cpu(&self) -> Option<Duration> {
        cpu_of(self.pid())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(w) = self.watchdog.as_mut() {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

/// The account the ACL scenario signs with.
pub const ACL_READER: (&str, &str) = ("perf-reader", "perf-reader-secret");

/// The `ours-acl` account file; `trust_loopback` lets unsigned setup traffic in.
pub fn acl_accounts(trust_loopback: bool) -> String {
    let white = if trust_loopback { "127.0.0.1" } else { "10.255.255.255" };
    format!(
        "globalWhiteRemoteAddresses:\n  - {white}\naccounts:\n  - accessKey: {}\n    secretKey: {}\n    admin: false\n",
        ACL_READER.0, ACL_READER.1
    )
}

/// Our server on `port` with its defaults, plus the `extra` properties lines.
fn ours_command(launch: &Launch, dir: &Path, port: u16, extra: &str) -> Result<Command, String> {
    if !launch.ours_bin.is_file() {
        return Err(format!("{} not found: run `cargo build --release` first", launch.ours_bin.display()));
    }
    let props = dir.join("namesrv.properties");
    let set: String = launch.ours_props.iter().map(|kv| format!("{kv}\n")).collect();
    let text = format!(
        "listenPort={port}\nbindAddress=127.0.0.1\n{extra}{set}kvConfigPath={}\nconfigStorePath={}\n",
        dir.join("kvConfig.json").display(),
        dir.join("namesrv-store.properties").display()
    );
    std::fs::write(&props, text).map_err(|e| e.to_string())?;
    let mut c = Command::new(&launch.ours_bin);
    c.arg("-c").arg(&props).env("RUST_LOG", "warn");
    Ok(c)
}

/// `tests/peers/fetch.sh 5.5.0 namesrv` → the cached lib directory (jars stay there).
pub fn java_lib() -> Result<PathBuf, String> {
    let script = repo_root().join("tests/peers/fetch.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args([JAVA_VERSION, "namesrv"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed: {}", script.display(), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn java_command(launch: &Launch, dir: &Path, port: u16) -> Result<Command, String> {
    let lib = java_lib()?;
    let home = dir.join("home");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&conf).map_err(|e| e.to_string())?;
    let props = conf.join("namesrv.properties");
    let text = format!(
        "listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={}\n",
        home.join("namesrv/kvConfig.json").display()
    );
    std::fs::write(&props, text).map_err(|e| e.to_string())?;
    let mut c = Command::new("java");
    // The heap is small on purpose (the setting); the GC is the one runserver.sh picks.
    c.arg(format!("-Xms{}", launch.java_heap))
        .arg(format!("-Xmx{}", launch.java_heap))
        .args(["-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow"])
        .arg(format!("-Duser.home={}", home.display()))
        .arg(format!("-Drocketmq.home.dir={}", dir.display()))
        .arg("-cp")
        .arg(format!("{}:{}/*", conf.display(), lib.display()))
        .arg("org.apache.rocketmq.namesrv.NamesrvStartup")
        .arg("-c")
        .arg(&props)
        .env_remove("NAMESRV_ADDR")
        .env_remove("ROCKETMQ_SERIALIZE_TYPE");
    Ok(c)
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn spawn_watchdog(pid: u32) -> Option<Child> {
    let me = std::process::id();
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while kill -0 {me} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 1; done; kill -9 {pid} 2>/dev/null"
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// VmRSS from /proc/PID/status.
pub fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// utime + stime from /proc/PID/stat (clock ticks of 1/100 s, the Linux USER_HZ).
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
