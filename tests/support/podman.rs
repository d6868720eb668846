//! The container image of `docs/deploy/image/build.sh`, built from the test build's own binary and run with podman
//! as a user would. This machine kind's default OCI runtime (crun) cannot start containers (it fails on
//! `setrlimit RLIMIT_NOFILE`, then on hybrid cgroups), so containers run with Debian's runc
//! (`NAMESRV_OCI_RUNTIME`, default `/usr/sbin/runc`) and limits no higher than this process's own.
//! Everything made here (image, containers, volume) carries the test process's id and is removed on drop.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// An image built for one test, with the containers and the volume it runs them on.
pub struct Podman {
    pub image: String,
    pub volume: String,
    containers: Vec<String>,
}

/// What `podman` printed; panics with both streams unless it succeeded.
pub fn podman(args: &[&str]) -> String {
    let out = Command::new("podman")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run podman (apt-get install podman runc): {e}"));
    assert!(
        out.status.success(),
        "podman {} failed with {}:\n{}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The soft limit `name` of this process (a line of /proc/self/limits), or `fallback` when it is unlimited.
fn own_limit(name: &str, fallback: u64) -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l[name.len()..].split_whitespace().next()?.parse().ok())
        .unwrap_or(fallback)
}

impl Podman {
    /// Builds the image from `binary` with the project's script.
    pub fn build(binary: &Path) -> Podman {
        let id = std::process::id();
        let image = format!("localhost/namesrv-test:{id}");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/image/build.sh");
        let out = Command::new(&script)
            .arg("--binary")
            .arg(binary)
            .args(["--tag", &image, "--revision", "test"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed with {}:\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let volume = format!("namesrv-test-{id}");
        podman(&["volume", "create", &volume]);
        Podman { image, volume, containers: Vec::new() }
    }

    /// `podman image inspect` of one field, e.g. `{{.Size}}` or `{{.Config.User}}`.
    pub fn image_field(&self, format: &str) -> String {
        podman(&["image", "inspect", "--format", format, &self.image])
    }

    /// Starts a container `name` (detached, read-only root, the volume on /var/lib/rocketmq) with the remoting
    /// and HTTP ports published on 127.0.0.1.
    pub fn run(&mut self, name: &str, remoting: u16, http: u16) -> String {
        let runtime = std::env::var("NAMESRV_OCI_RUNTIME").unwrap_or_else(|_| "/usr/sbin/runc".into());
        let nofile = own_limit("Max open files", 20_000).min(20_000);
        let nproc = own_limit("Max processes", 1_000).min(1_000);
        let name = format!("{name}-{}", std::process::id());
        self.containers.push(name.clone());
        podman(&[
            "--runtime",
            &runtime,
            "run",
            "--detach",
            "--name",
            &name,
            "--read-only",
            "--ulimit",
            &format!("nofile={nofile}:{nofile}"),
            "--ulimit",
            &format!("nproc={nproc}:{nproc}"),
            "--publish",
            &format!("127.0.0.1:{remoting}:9876"),
            "--publish",
            &format!("127.0.0.1:{http}:9877"),
            "--volume",
            &format!("{}:/var/lib/rocketmq", self.volume),
            &self.image,
        ]);
        name
    }

    /// `podman stop` with `grace` before SIGKILL: how long it took and the container's exit code.
    pub fn stop(&self, name: &str, grace: Duration) -> (Duration, i32) {
        let started = Instant::now();
        podman(&["stop", "--time", &grace.as_secs().to_string(), name]);
        let took = started.elapsed();
        let code = podman(&["inspect", "--format", "{{.State.ExitCode}}", name]);
        (took, code.parse().unwrap_or_else(|_| panic!("exit code of {name}: {code:?}")))
    }

    /// The container's output (its log lines).
    pub fn logs(&self, name: &str) -> String {
        let out = Command::new("podman").args(["logs", name]).output().expect("podman logs");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }

    /// Removes a container (its volume stays).
    pub fn remove(&mut self, name: &str) {
        podman(&["rm", "--force", name]);
        self.containers.retain(|c| c != name);
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("podman").args(["rm", "--force", c]).output();
        }
        let _ = Command::new("podman").args(["volume", "rm", "--force", &self.volume]).output();
        let _ = Command::new("podman").args(["rmi", "--force", &self.image]).output();
    }
}
