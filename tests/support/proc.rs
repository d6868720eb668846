//! Process plumbing for the interop tests: long-running peers that are killed on drop (and by a watchdog if the test
//! process dies without unwinding), one-shot commands with a hard timeout, the JVM flags every Java peer gets, and
//! our `mqnamesrv` on a fixed port so that it can be stopped and started again at the same address.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// JVM flags for a small, shared two-core machine, plus `user.home` and `rocketmq.home.dir` inside `home`.
/// `heap` is e.g. `["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"]`. 4.x peers also get the `--add-opens`
/// flags Java 17 needs.
pub fn jvm_args(version: &str, home: &Path, heap: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = heap.iter().map(|s| s.to_string()).collect();
    args.extend(
        ["-XX:+UseSerialGC", "-XX:ActiveProcessorCount=2", "-XX:-OmitStackTraceInFastThrow", "-Xss512k"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.push(format!("-Duser.home={}", home.join("home").display()));
    args.push(format!("-Drocketmq.home.dir={}", home.display()));
    // Never look a name server up over HTTP, even if something forgets `-n`.
    args.push("-Drocketmq.namesrv.domain=127.0.0.1".to_string());
    if version.starts_with("4.") {
        args.extend(super::java::JAVA17_FLAGS_FOR_49.iter().map(|a| a.to_string()));
    }
    args
}

/// Prepares `home/` and `conf/` under `dir` for a Java peer; 4.x startups insist on logback files in
/// `$ROCKETMQ_HOME/conf`.
pub fn prepare_rocketmq_home(dir: &Path) {
    std::fs::create_dir_all(dir.join("home")).expect("mkdir home");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).expect("mkdir conf");
    for f in ["logback_namesrv", "logback_broker", "logback_tools"] {
        std::fs::write(
            conf.join(format!("{f}.xml")),
            r#"<configuration><appender name="O" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{1} - %m%n</pattern></encoder></appender><root level="WARN"><appender-ref ref="O"/></root></configuration>"#,
        )
        .expect("write logback config");
    }
    // 5.x tools and clients: warnings and errors to stderr, instead of the bundled configuration (whose
    // deprecation warnings make logback dump its status to stdout).
    std::fs::write(
        conf.join("rmq.tools.logback.xml"),
        r#"<configuration><appender name="E" class="ch.qos.logback.core.ConsoleAppender"><target>System.err</target><encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{1} - %m%n</pattern></encoder></appender><root level="WARN"><appender-ref ref="E"/></root></configuration>"#,
    )
    .expect("write logback config");
}

/// A long-running child process with its output in a log file. Killed (SIGKILL) on drop.
pub struct Managed {
    pub what: String,
    child: Option<Child>,
    watchdog: Option<Child>,
    pub log: PathBuf,
}

impl Managed {
    /// Spawns `cmd` with stdout and stderr appended to `log`.
    pub fn spawn(what: &str, mut cmd: Command, log: &Path) -> Managed {
        let out = File::options().create(true).append(true).open(log).expect("open log");
        let err = out.try_clone().expect("clone log");
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let watchdog = super::spawn_watchdog(child.id());
        Managed { what: what.to_string(), child: Some(child), watchdog, log: log.to_path_buf() }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Panics (with the log tail) if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                panic!(
                    "{} exited with {status}\n--- {} ---\n{}",
                    self.what,
                    self.log.display(),
                    super::tail(&self.log, 80)
                );
            }
        }
    }

    /// Waits until `addr` accepts connections; fails early if the process exits.
    pub fn wait_accepting(&mut self, addr: SocketAddr, timeout: Duration) {
        let what = self.what.clone();
        let child = self.child.as_mut().expect("process was stopped");
        super::wait_until_accepting(&what, child, addr, timeout, &self.log);
    }

    /// Waits up to `limit` for the process to exit by itself: its exit status, or `None` if it is still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let c = self.child.as_mut()?;
        super::eventually_some(limit, || c.try_wait().ok().flatten())
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            super::kill_and_reap(&mut c);
        }
        if let Some(mut w) = self.watchdog.take() {
            super::kill_and_reap(&mut w);
        }
    }

    /// SIGTERM, then how long the process took to exit by itself, or `None` if it was still there after `limit`
    /// (it is then killed).
    pub fn stop_within(&mut self, limit: Duration) -> Option<Duration> {
        let c = self.child.as_mut()?;
        let started = Instant::now();
        let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
        let took = super::eventually_some(limit, || matches!(c.try_wait(), Ok(Some(_))).then(|| started.elapsed()));
        self.kill();
        took
    }

    /// SIGTERM (a Java peer runs its shutdown hooks, e.g. a broker unregisters), then SIGKILL after `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        if let Some(c) = self.child.as_mut() {
            let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            super::eventually(grace, || matches!(c.try_wait(), Ok(Some(_))));
        }
        self.kill();
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The outcome of a one-shot command.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// The retries a producer program of tests/peers reported on its line `RETRIES <early> <late>`: `early` before its
/// first successful send, `late` after it (docs/interop.md, "Retries").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retries {
    pub early: u32,
    pub late: u32,
}

/// Retries after a process's first successful send: a route that worked and then failed. Never legitimate.
pub const LATE_RETRIES_ALLOWED: u32 = 0;

/// What one step may retry. Outside a named phase, nothing: the route is there before a test sends (it waits for
/// it), so any retry means a route query went wrong. In a phase where the test killed a name server, a producer may
/// retry a few times before its first send works (its first lookup may go to the dead one) and a push consumer
/// may be started again when its first pick was the dead one; a retry after a send worked is never allowed.
#[derive(Clone, Copy, Debug)]
pub struct RetryBudget {
    /// The phase that allows retries, for the messages; `None` for none allowed.
    pub phase: Option<&'static str>,
    /// Producer retries before the first successful send.
    pub early: u32,
    /// Push consumer processes started again after picking a dead name server (`JavaClient::consume_within`).
    pub restarts: u32,
}

impl RetryBudget {
    /// No retry at all.
    pub const NONE: RetryBudget = RetryBudget { phase: None, early: 0, restarts: 0 };

    /// A phase in which one of the clients' two name servers is dead. A producer may retry twice before its first
    /// send (measured in 8 runs: 0 or 1): when the Java client's first pick is the dead name server, its first send
    /// fails (`RemotingConnectException`) and the next pick is the other one; the second retry is a margin for the
    /// client's scheduled route refresh taking a pick in between. A push consumer may be started again up to 13
    /// times: each start picks one of the two name servers at random (the client's first index is random), so 14
    /// dead picks in a row happen by chance once in 2^14 ≈ 16,000 phases, and a CI run has two such phases
    /// (measured restarts: 0 to 5 in 8 runs, 7 in one CI run out of ~25, which failed the earlier bound of 7).
    pub const fn name_server_down(phase: &'static str) -> RetryBudget {
        RetryBudget { phase: Some(phase), early: 2, restarts: 13 }
    }
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Panics, with `what` and the whole output, unless the peer exited with 0 and printed a line `OK` (how every
    /// peer program in tests/peers says it did all it was asked). If it reported retries (`RETRIES`), none may
    /// have happened (`expect_ok_within` for a phase that allows some).
    pub fn expect_ok(&self, what: &str) {
        self.expect_ok_within(what, RetryBudget::NONE);
    }

    /// Like `expect_ok`, with the retries `budget` allows.
    pub fn expect_ok_within(&self, what: &str, budget: RetryBudget) {
        assert!(
            self.success() && self.stdout.lines().any(|l| l == "OK"),
            "{what} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        if let Some(retries) = self.retries() {
            self.check_retries(what, retries, budget);
        }
    }

    /// Like `expect_ok_within`, for a producer program: it must also have reported its retries.
    pub fn expect_sent_within(&self, what: &str, budget: RetryBudget) {
        self.expect_ok_within(what, budget);
        assert!(
            self.retries().is_some(),
            "{what} reported no RETRIES line:\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout,
            self.stderr
        );
    }

    /// The `RETRIES <early> <late>` line a producer program of tests/peers prints last, if there is one.
    pub fn retries(&self) -> Option<Retries> {
        let line = self.stdout.lines().filter_map(|l| l.strip_prefix("RETRIES ")).next_back()?;
        let mut n = line.split(' ').map(|w| w.parse::<u32>().unwrap_or_else(|e| panic!("RETRIES {line}: {e}")));
        match (n.next(), n.next(), n.next()) {
            (Some(early), Some(late), None) => Some(Retries { early, late }),
            _ => panic!("malformed line RETRIES {line}"),
        }
    }

    /// Prints the retries (visible with `--nocapture` and in a failed test's output) and panics, with the peer's
    /// `RETRY` lines and its whole output, if `budget` does not cover them.
    fn check_retries(&self, what: &str, r: Retries, budget: RetryBudget) {
        let allowed = match budget.phase {
            Some(phase) => format!("{} before the first send ({phase}), {LATE_RETRIES_ALLOWED} after", budget.early),
            None => format!("0 before the first send, {LATE_RETRIES_ALLOWED} after"),
        };
        eprintln!("         {what}: {} retries before the first send, {} after (allowed: {allowed})", r.early, r.late);
        let retry_lines: Vec<&str> = self.stdout.lines().filter(|l| l.starts_with("RETRY ")).collect();
        for line in &retry_lines {
            eprintln!("           {line}");
        }
        let why = if r.late > LATE_RETRIES_ALLOWED {
            format!("{} retries after a send had worked: a route that worked failed again", r.late)
        } else if r.early > budget.early {
            match budget.phase {
                Some(phase) => format!("{} retries before the first send worked, more than {phase} explains", r.early),
                None => format!("{} retries before the first send worked, though the route was there", r.early),
            }
        } else {
            return;
        };
        panic!(
            "{what}: {why} (allowed: {allowed})\n--- RETRY lines ---\n{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            retry_lines.join("\n"),
            self.stdout,
            self.stderr
        );
    }
}

/// Runs `cmd` to completion with output captured in files under `dir` (no pipe can fill up), killing it after
/// `timeout`. Panics on timeout, with the output so far.
pub fn run(what: &str, mut cmd: Command, dir: &Path, timeout: Duration) -> Output {
    let started = Instant::now();
    let out_tmp = tempfile::NamedTempFile::new_in(dir).expect("temp stdout");
    let err_tmp = tempfile::NamedTempFile::new_in(dir).expect("temp stderr");
    cmd.stdin(Stdio::null()).stdout(out_tmp.reopen().expect("reopen")).stderr(err_tmp.reopen().expect("reopen"));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut watchdog = super::spawn_watchdog(child.id());
    let status =
        super::eventually_some(timeout.saturating_sub(started.elapsed()), || child.try_wait().expect("try_wait"));
    if status.is_none() {
        super::kill_and_reap(&mut child);
    }
    if let Some(w) = watchdog.as_mut() {
        super::kill_and_reap(w);
    }
    let stdout = std::fs::read_to_string(out_tmp.path()).unwrap_or_default();
    let stderr = std::fs::read_to_string(err_tmp.path()).unwrap_or_default();
    match status {
        Some(status) => Output { status, stdout, stderr, elapsed: started.elapsed() },
        None => panic!("{what} did not finish within {timeout:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"),
    }
}

/// Our `mqnamesrv` on a port chosen once, so that it can be stopped and started again at the same address (the
/// broker keeps the address in its `namesrvAddr`), with its HTTP endpoint (`/metrics`) on another such port. Logs
/// at `RUST_LOG=debug` unless `RUST_LOG` is set.
pub struct OurNode {
    port: u16,
    http_port: u16,
    dir: TempDir,
    proc: Option<Managed>,
    starts: u32,
    /// More keys for its `-c` file, on every start.
    extra: Vec<(String, String)>,
}

impl OurNode {
    pub fn start() -> OurNode {
        Self::start_at(super::free_port(), &[])
    }

    /// Starts it on `port` with `extra` keys in its `-c` file (`namesrvPeers` naming a port chosen beforehand).
    pub fn start_at(port: u16, extra: &[(&str, &str)]) -> OurNode {
        let dir = tempfile::Builder::new().prefix("interop-namesrv-").tempdir().expect("temp dir");
        let http_port = std::iter::repeat_with(super::free_port).find(|p| *p != port).expect("a second port");
        let extra = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut node = OurNode { port, http_port, dir, proc: None, starts: 0, extra };
        node.restart();
        node
    }

    /// SIGKILL, then every file of its directory but its log removed (a replaced pod, a wiped disk).
    pub fn kill_and_wipe(&mut self) {
        self.kill();
        let log = self.log_path();
        for entry in std::fs::read_dir(self.dir.path()).expect("read dir").flatten() {
            if entry.path() != log {
                let _ = std::fs::remove_file(entry.path()).or_else(|_| std::fs::remove_dir_all(entry.path()));
            }
        }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn addr_string(&self) -> String {
        self.addr().to_string()
    }

    /// The HTTP endpoint (`httpAddress`): `/metrics` for `observe::metric`.
    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.http_port))
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("mqnamesrv.log")
    }

    pub fn log(&self) -> String {
        format!("--- our mqnamesrv log (tail) ---\n{}", super::tail(&self.log_path(), 60))
    }

    pub fn is_running(&self) -> bool {
        self.proc.is_some()
    }

    /// SIGKILL: the process is gone with all of its state, as after a crash.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    /// (Re)starts the server on the same port with an empty route table.
    pub fn restart(&mut self) {
        self.kill();
        self.starts += 1;
        let props = vec![
            ("listenPort".to_string(), self.port.to_string()),
            ("bindAddress".to_string(), "127.0.0.1".to_string()),
            ("kvConfigPath".to_string(), self.dir.path().join("kvConfig.json").display().to_string()),
            ("httpAddress".to_string(), self.http_addr().to_string()),
        ]
        .into_iter()
        .chain(self.extra.iter().cloned())
        .collect::<Vec<_>>();
        let props_file = self.dir.path().join("namesrv.properties");
        super::write_properties(&props_file, &props);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"));
        cmd.arg("-c").arg(&props_file).current_dir(self.dir.path()).env("HOME", self.dir.path());
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "debug");
        }
        let log = self.log_path();
        if let Ok(mut f) = File::options().create(true).append(true).open(&log) {
            let _ = std::io::Write::write_all(&mut f, format!("=== start #{} ===\n", self.starts).as_bytes());
        }
        let mut p = Managed::spawn("mqnamesrv", cmd, &log);
        // Binding right after a kill: SO_REUSEADDR makes this quick, but allow a few seconds.
        p.wait_accepting(self.addr(), Duration::from_secs(20));
        self.proc = Some(p);
    }
}
