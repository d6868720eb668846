//! The producer and the consumer of the fault tests: `JepsenClient.java` compiled against rocketmq-client 5.5.0,
//! run in the root namespace (they reach the name server and the brokers through the bridge), their output in
//! files the test reads while they run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::proc::{jvm_args, prepare_rocketmq_home, run, Managed};

pub struct Clients {
    lib: PathBuf,
    classes: PathBuf,
    dir: PathBuf,
}

impl Clients {
    /// Fetches the client and compiles the program (again only when the source is newer than the classes).
    pub fn new(dir: &Path) -> Clients {
        let lib = crate::support::java::fetch(crate::support::java::JAVA_5X, &["client"]);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jepsen/JepsenClient.java");
        let classes = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jepsen/client-classes");
        std::fs::create_dir_all(dir).expect("mkdir");
        prepare_rocketmq_home(dir);
        let stale = match (std::fs::metadata(&src), std::fs::metadata(classes.join("JepsenClient.class"))) {
            (Ok(s), Ok(c)) => s.modified().ok() > c.modified().ok(),
            _ => true,
        };
        if stale {
            let _ = std::fs::remove_dir_all(&classes);
            std::fs::create_dir_all(&classes).expect("mkdir classes");
            let mut cmd = Command::new("javac");
            cmd.arg("-J-Xmx256m").arg("-nowarn").arg("-cp").arg(format!("{}/*", lib.display()));
            cmd.arg("-d").arg(&classes).arg(&src);
            let out = run("javac JepsenClient.java", cmd, dir, Duration::from_secs(180));
            assert!(out.success(), "javac failed:\n{}\n{}", out.stdout, out.stderr);
        }
        Clients { lib, classes, dir: dir.to_path_buf() }
    }

    fn spawn(&self, what: &str, args: &[&str], log: &Path) -> Managed {
        let mut cmd = Command::new("java");
        cmd.args(jvm_args(
            crate::support::java::JAVA_5X,
            &self.dir,
            &["-Xms64m", "-Xmx192m", "-XX:TieredStopAtLevel=1"],
        ))
        .arg("-cp")
        .arg(format!("{}:{}:{}/*", self.classes.display(), self.dir.join("conf").display(), self.lib.display()))
        .arg("JepsenClient")
        .args(args)
        .current_dir(&self.dir)
        .env("ROCKETMQ_HOME", &self.dir)
        .env_remove("ROCKETMQ_SERIALIZE_TYPE");
        Managed::spawn(what, cmd, log)
    }

    /// Sends one message at a time until killed (or for an hour), each sent again up to `retries` times by the
    /// client itself (JepsenClient.java).
    pub fn producer(&self, ns: &str, topic: &str, retries: u32) -> (Managed, PathBuf) {
        let log = self.dir.join("producer.out");
        (self.spawn("producer", &["produce", ns, topic, "3600", &retries.to_string()], &log), log)
    }

    /// Reads the topic from the first offset with a new group until killed.
    pub fn consumer(&self, ns: &str, topic: &str, group: &str) -> (Managed, PathBuf) {
        let log = self.dir.join("consumer.out");
        (self.spawn("consumer", &["consume", ns, topic, group], &log), log)
    }
}

/// The message numbers after `prefix ` on lines of `file` ("ACK 12", "READ j-12").
pub fn numbers(file: &Path, prefix: &str) -> BTreeSet<u64> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| rest.split_whitespace().next()?.trim_start_matches("j-").parse().ok())
        .collect()
}
