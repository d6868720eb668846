//! The real `mqadmin` (`rocketmq-tools`, `MQAdminStartup`) and a tiny real Java client program
//! (`tests/peers/java/InteropClient.java`, compiled at test time with `javac` against the fetched `rocketmq-client`
//! classpath). Both run as one-shot JVMs with small heaps, always with the name server given explicitly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use super::proc::{jvm_args, prepare_rocketmq_home, run, Managed, Output, RetryBudget};

const ADMIN_TIMEOUT: Duration = Duration::from_secs(120);

/// `mqadmin` of one version, with its own `ROCKETMQ_HOME` and `user.home` in a temp dir.
pub struct MqAdmin {
    pub version: String,
    lib: PathBuf,
    dir: TempDir,
    /// Extra `-Dkey=value` JVM flags (e.g. `-Dtls.enable=true`).
    pub jvm_props: Vec<String>,
}

impl MqAdmin {
    pub fn new(version: &str) -> MqAdmin {
        let lib = super::java::fetch(version, &["tools"]);
        let dir = tempfile::Builder::new().prefix("interop-mqadmin-").tempdir().expect("temp dir");
        prepare_rocketmq_home(dir.path());
        MqAdmin { version: version.to_string(), lib, dir, jvm_props: Vec::new() }
    }

    /// Runs `mqadmin SUBCOMMAND ARGS... -n NAMESRV`. Returns whatever it printed; callers assert on it.
    pub fn run(&self, namesrv: &str, args: &[&str]) -> Output {
        let cmd = self.command(namesrv, args);
        run(&format!("mqadmin {} {args:?}", self.version), cmd, self.dir.path(), ADMIN_TIMEOUT)
    }

    /// The command `run` runs, for a caller that watches mqadmin while it runs.
    pub fn command(&self, namesrv: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("java");
        cmd.args(jvm_args(&self.version, self.dir.path(), &["-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1"]))
            .arg(format!(
                "-Drmq.logback.configurationFile={}",
                self.dir.path().join("conf/rmq.tools.logback.xml").display()
            ))
            .args(&self.jvm_props)
            .arg("-cp")
            .arg(format!("{}:{}/*", self.dir.path().join("conf").display(), self.lib.display()))
            .arg("org.apache.rocketmq.tools.command.MQAdminStartup")
            .args(args)
            .arg("-n")
            .arg(namesrv)
            .current_dir(self.dir.path())
            .env("ROCKETMQ_HOME", self.dir.path())
            .env("NAMESRV_ADDR", namesrv)
            .env_remove("ROCKETMQ_SERIALIZE_TYPE");
        cmd
    }

    /// Its `ROCKETMQ_HOME`, a temp dir (room for a caller's log files).
    pub fn home(&self) -> &Path {
        self.dir.path()
    }

    /// Like `run`, and panics unless it succeeded: exit status 0 and no "command failed" (mqadmin reports a failed
    /// sub-command on stderr but still exits with 0). A client-side timeout (a cold JVM on a busy machine can miss
    /// mqadmin's 3 s RPC timeout) is retried once.
    pub fn ok(&self, namesrv: &str, args: &[&str]) -> String {
        let failed = |o: &Output| {
            !o.success() || o.stderr.contains("command failed") || o.stderr.contains("SubCommandException")
        };
        let mut out = self.run(namesrv, args);
        if failed(&out) && format!("{}{}", out.stdout, out.stderr).contains("RemotingTimeoutException") {
            eprintln!("mqadmin {args:?} timed out on the client side; retrying once:\n{}", out.stderr);
            out = self.run(namesrv, args);
        }
        assert!(
            !failed(&out),
            "mqadmin {} {args:?} -n {namesrv} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.version,
            out.status,
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// The ACL credentials mqadmin signs with: `Some((accessKey, secretKey))` writes `$ROCKETMQ_HOME/conf/tools.yml`,
    /// which `MQAdminStartup` (4.9.x and 5.x alike) reads on every run and turns into an `AclClientRPCHook` for the
    /// sub-command's `DefaultMQAdminExt`; `None` removes it (mqadmin then signs nothing).
    pub fn set_credentials(&self, credentials: Option<(&str, &str)>) {
        let path = self.dir.path().join("conf/tools.yml");
        match credentials {
            Some((ak, sk)) => std::fs::write(&path, format!("accessKey: {ak}\nsecretKey: {sk}\n"))
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display())),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// A Java client program from `tests/peers/java` (`InteropClient.java` unless told otherwise) compiled against
/// `rocketmq-client` of one version.
pub struct JavaClient {
    pub version: String,
    program: String,
    lib: PathBuf,
    classes: PathBuf,
    dir: TempDir,
    /// Extra `-Dkey=value` JVM flags (e.g. `-Dtls.enable=true`).
    pub jvm_props: Vec<String>,
}

impl JavaClient {
    /// Fetches the client, compiles `InteropClient.java` (once per version; the classes live under the cargo target
    /// dir).
    pub fn new(version: &str) -> JavaClient {
        Self::program(version, "InteropClient", &["client"])
    }

    /// `BootstrapProbe.java`: producers started one after another against one name server for a while, each
    /// reporting whether it found a route (`run` it: `probe NS TOPIC SECONDS`).
    pub fn bootstrap_probe(version: &str) -> JavaClient {
        Self::program(version, "BootstrapProbe", &["client"])
    }

    /// `AclInteropClient.java` (producer, push consumer and route lookup signed by `AclClientRPCHook`): run it with
    /// `run`. 4.x keeps `AclClientRPCHook` in `rocketmq-acl`, 5.x in `rocketmq-client`.
    pub fn acl(version: &str) -> JavaClient {
        let artifacts: &[&str] = if version.starts_with("4.") { &["client", "acl"] } else { &["client"] };
        let mut client = Self::program(version, "AclInteropClient", artifacts);
        // 5.x: warnings and errors to stderr instead of the broker jar's configuration found on the shared classpath
        // (whose status dump fills stdout).
        let logback = client.dir.path().join("conf/rmq.tools.logback.xml");
        client.jvm_props.push(format!("-Drmq.logback.configurationFile={}", logback.display()));
        client
    }

    /// `GrpcInteropClient.java` (the gRPC client `rocketmq-client-java`, a producer and a simple consumer that talk
    /// to a 5.x proxy, signed with `StaticSessionCredentialsProvider`): run it with `run`, the proxy's gRPC endpoint
    /// in place of the name server. `version` is the client's own (5.0.x), not the server's.
    pub fn grpc(version: &str) -> JavaClient {
        Self::program(version, "GrpcInteropClient", &["client-java"])
    }

    /// Fetches `artifacts` of `version` and compiles `tests/peers/java/<program>.java` against them (once per
    /// version and program).
    fn program(version: &str, program: &str, artifacts: &[&str]) -> JavaClient {
        let lib = super::java::fetch(version, artifacts);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/peers/java/{program}.java"));
        let classes = if program == "InteropClient" {
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-java-client/{version}"))
        } else {
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-java-client/{program}/{version}"))
        };
        let dir = tempfile::Builder::new().prefix("interop-client-").tempdir().expect("temp dir");
        prepare_rocketmq_home(dir.path());
        // Tests of one binary run side by side: one compiles while the others wait, then find it done (a second
        // compile would swap the directory under a JVM already running from it).
        static COMPILING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _compiling = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
        let stale = match (std::fs::metadata(&src), std::fs::metadata(classes.join(format!("{program}.class")))) {
            (Ok(s), Ok(c)) => s.modified().ok() > c.modified().ok(),
            _ => true,
        };
        if stale {
            // Compile into a fresh directory, then swap it in, so concurrent test binaries never see half a build.
            std::fs::create_dir_all(classes.parent().unwrap()).expect("mkdir classes parent");
            let tmp = tempfile::Builder::new().prefix(".javac-").tempdir_in(classes.parent().unwrap()).expect("tmp");
            let mut cmd = Command::new("javac");
            cmd.arg("-J-Xmx256m")
                .arg("-nowarn")
                .arg("-cp")
                .arg(format!("{}/*", lib.display()))
                .arg("-d")
                .arg(tmp.path())
                .arg(&src);
            let out = run(&format!("javac {program}.java"), cmd, dir.path(), Duration::from_secs(180));
            assert!(out.success(), "javac failed against {version}:\n{}\n{}", out.stdout, out.stderr);
            let staged = tmp.keep();
            let _ = std::fs::remove_dir_all(&classes);
            if std::fs::rename(&staged, &classes).is_err() {
                let _ = std::fs::remove_dir_all(&staged);
            }
        }
        JavaClient {
            version: version.to_string(),
            program: program.to_string(),
            lib,
            classes,
            dir,
            jvm_props: Vec::new(),
        }
    }

    /// Runs the program with `args` (the name server is among them) and returns whatever it printed; callers assert
    /// on it.
    pub fn run(&self, args: &[&str], timeout: Duration) -> Output {
        let mut cmd = self.command(args);
        if let Some(ns) = args.get(1) {
            cmd.env("NAMESRV_ADDR", ns);
        }
        run(&format!("java {} {}", self.program, args.first().unwrap_or(&"")), cmd, self.dir.path(), timeout)
    }

    /// Runs the program with no name server of its own (no `NAMESRV_ADDR`, no `-n`): the client asks the address
    /// server at `http` (`-Drocketmq.namesrv.domain=host:port`, which wins over the default `jvm_args` gives).
    pub fn run_via_address_server(&self, http: std::net::SocketAddr, args: &[&str], timeout: Duration) -> Output {
        // After `jvm_args` on the command line: the JVM takes the last -D of a name.
        let mut cmd = self.command_with(args, &[format!("-Drocketmq.namesrv.domain={http}")]);
        cmd.env_remove("NAMESRV_ADDR");
        run(&format!("java {} {}", self.program, args.first().unwrap_or(&"")), cmd, self.dir.path(), timeout)
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_with(args, &[])
    }

    /// The JVM command with `extra` flags after the usual ones.
    fn command_with(&self, args: &[&str], extra: &[String]) -> Command {
        let mut cmd = Command::new("java");
        cmd.args(jvm_args(&self.version, self.dir.path(), &["-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1"]))
            .args(&self.jvm_props)
            .args(extra)
            .arg("-cp")
            .arg(format!(
                "{}:{}:{}/*",
                self.classes.display(),
                self.dir.path().join("conf").display(),
                self.lib.display()
            ))
            .arg(&self.program)
            .args(args)
            .current_dir(self.dir.path())
            .env("ROCKETMQ_HOME", self.dir.path())
            .env_remove("ROCKETMQ_SERIALIZE_TYPE");
        cmd
    }

    /// Sends `count` messages with bodies `PREFIX-0 … PREFIX-(count−1)`. Panics unless all were SEND_OK without
    /// a retry; returns the names of the brokers that took them, one per message.
    pub fn produce(&self, namesrv: &str, topic: &str, count: usize, prefix: &str) -> Vec<String> {
        self.produce_within(namesrv, topic, count, prefix, RetryBudget::NONE)
    }

    /// Like `produce`, with the retries `budget` allows.
    pub fn produce_within(
        &self,
        namesrv: &str,
        topic: &str,
        count: usize,
        prefix: &str,
        budget: RetryBudget,
    ) -> Vec<String> {
        let mut cmd = self.command(&["produce", namesrv, topic, &count.to_string(), prefix]);
        cmd.env("NAMESRV_ADDR", namesrv);
        let out = run("java producer", cmd, self.dir.path(), Duration::from_secs(240));
        out.expect_sent_within(&format!("Java {} producer ({prefix})", self.version), budget);
        let brokers: Vec<String> = out
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("SENT "))
            .map(|l| l.split(' ').nth(2).unwrap_or_default().to_string())
            .collect();
        assert_eq!(brokers.len(), count, "producer output:\n{}", out.stdout);
        brokers
    }

    /// Starts a push consumer of `group` in the background (output appended to `log`), for a test that needs a
    /// client connected while something else happens; it ends after `count` bodies `PREFIX-…` or `secs`.
    pub fn spawn_consumer(
        &self,
        namesrv: &str,
        topic: &str,
        group: &str,
        (count, prefix, secs): (usize, &str, u64),
        log: &Path,
    ) -> Managed {
        let mut cmd = self.command(&["consume", namesrv, topic, group, &count.to_string(), prefix, &secs.to_string()]);
        cmd.env("NAMESRV_ADDR", namesrv);
        Managed::spawn(&format!("java consumer {group}"), cmd, log)
    }

    /// The client's `user.home` (`home/`, where the Java client writes `logs/rocketmqlogs/rocketmq_client.log`).
    pub fn user_home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Asks for `topic`'s route as a producer does before sending; returns `(brokerName, queueId)` per writable
    /// queue. Panics unless the client got a route.
    pub fn route(&self, namesrv: &str, topic: &str) -> Vec<(String, i32)> {
        let mut cmd = self.command(&["route", namesrv, topic]);
        cmd.env("NAMESRV_ADDR", namesrv);
        let out = run("java route", cmd, self.dir.path(), Duration::from_secs(120));
        out.expect_ok(&format!("Java {} route lookup", self.version));
        out.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("QUEUE "))
            .filter_map(|l| l.split_once(' '))
            .map(|(b, q)| (b.to_string(), q.parse().expect("queue id")))
            .collect()
    }

    /// Consumes with a push consumer of a new `group` until every body `PREFIX-0 … PREFIX-(count−1)` arrived.
    /// Panics if they did not within `timeout`. Returns the bodies received.
    pub fn consume(
        &self,
        namesrv: &str,
        topic: &str,
        group: &str,
        count: usize,
        prefix: &str,
        timeout: Duration,
    ) -> Vec<String> {
        self.consume_within(namesrv, topic, group, count, prefix, timeout, RetryBudget::NONE)
    }

    /// Like `consume`; in a phase where one of the name servers is dead, `budget.restarts` allows starting the
    /// consumer again when its first pick was the dead one.
    #[allow(clippy::too_many_arguments)]
    pub fn consume_within(
        &self,
        namesrv: &str,
        topic: &str,
        group: &str,
        count: usize,
        prefix: &str,
        timeout: Duration,
        budget: RetryBudget,
    ) -> Vec<String> {
        let secs = timeout.as_secs().max(1).to_string();
        // With one of several name servers down, the Java client's first route lookup picks one at random and a
        // push consumer whose pick is the dead one fails to start (client behaviour, the same with Java name
        // servers). A new process picks again, so that case is started again, as often as the phase allows (with
        // every name server up it must not happen at all).
        let mut attempts = 0;
        let out = loop {
            attempts += 1;
            let mut cmd = self.command(&["consume", namesrv, topic, group, &count.to_string(), prefix, &secs]);
            cmd.env("NAMESRV_ADDR", namesrv);
            let out = run("java consumer", cmd, self.dir.path(), timeout + Duration::from_secs(60));
            let text = format!("{}{}", out.stdout, out.stderr);
            let picked_dead = !out.success()
                && text.contains("RemotingConnectException: connect to")
                && text.contains("DefaultMQPushConsumerImpl.start");
            if !picked_dead || attempts > budget.restarts {
                break out;
            }
            eprintln!(
                "         Java {} consumer ({prefix}): its first pick was a dead name server ({}); starting it again",
                self.version,
                budget.phase.unwrap_or("?")
            );
        };
        let restarts = attempts - 1;
        eprintln!(
            "         Java {} consumer ({prefix}): {restarts} restarts (allowed: {})",
            self.version, budget.restarts
        );
        out.expect_ok(&format!("Java {} consumer ({prefix}, {attempts} attempts)", self.version));
        let mut bodies: Vec<String> =
            out.stdout.lines().filter_map(|l| l.strip_prefix("RECV ")).map(str::to_string).collect();
        bodies.sort();
        bodies
    }
}

/// The bodies `PREFIX-0 … PREFIX-(count−1)`, sorted as strings (as `JavaClient::consume` returns them).
pub fn expected_bodies(prefix: &str, count: usize) -> Vec<String> {
    let mut v: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    v.sort();
    v
}
