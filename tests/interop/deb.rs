//! The Debian package (`docs/deploy/debian/build.sh`) made from this test build's binary, installed with `dpkg -i`,
//! its binary started as the package's user against the package's configuration, and purged: nothing may be left
//! (files, directories, the user, the group, dpkg's record). Needs root, like the fault tests: it fails, never
//! skips, without it. It refuses to run where a namesrv package or a `rocketmq` user already exists. Ignored: run
//! with `cargo test -- --ignored`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support;

use support::client::Client;
use support::interop::serial;
use support::observe::http_response;
use support::proc::Managed;

/// What the package installs or its scripts make, all of which purge must remove.
const LEFT_BEHIND: [&str; 7] = [
    "/usr/bin/mqnamesrv",
    "/lib/systemd/system/mqnamesrv.service",
    "/etc/systemd/system/multi-user.target.wants/mqnamesrv.service",
    "/var/lib/systemd/deb-systemd-helper-enabled/mqnamesrv.service.dsh-also",
    "/etc/rocketmq",
    "/var/lib/rocketmq",
    "/usr/share/doc/namesrv",
];

fn sh(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed with {}:\n{text}", out.status);
    text
}

fn exists(what: &str, args: &[&str]) -> bool {
    Command::new(what).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Undoes the install if the test fails half-way.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "namesrv"]).output();
    }
}

#[test]
#[ignore = "real peer: dpkg (root)"]
fn debian_package_installs_runs_as_its_user_and_purges_without_a_trace() {
    let _serial = serial();
    let uid = sh("id -u", Command::new("id").arg("-u"));
    assert_eq!(uid.trim(), "0", "installing a package needs root (CI runs as root)");
    assert!(!exists("dpkg", &["-s", "namesrv"]), "a namesrv package is installed already: not touching it");
    assert!(!exists("getent", &["passwd", "rocketmq"]), "a rocketmq user exists already: not touching it");
    for path in LEFT_BEHIND {
        assert!(!Path::new(path).exists(), "{path} exists already: not touching it");
    }

    let out = tempfile::tempdir().expect("temp dir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/debian/build.sh");
    let deb = sh(
        "build.sh",
        Command::new(&script).arg("--binary").arg(env!("CARGO_BIN_EXE_mqnamesrv")).arg("--out").arg(out.path()),
    );
    let deb = deb.lines().last().expect("the package's path").to_string();
    let _purge = Purge;
    let installed = sh("dpkg -i", Command::new("dpkg").args(["-i", &deb]));
    eprintln!("dpkg -i {deb}:\n{installed}");
    sh("the user", Command::new("getent").args(["passwd", "rocketmq"]));
    let conffiles = sh("dpkg-query", Command::new("dpkg-query").args(["-W", "-f=${Conffiles}", "namesrv"]));
    assert!(conffiles.contains("/etc/rocketmq/namesrv.properties"), "conffiles: {conffiles}");
    let unit = std::fs::read_to_string("/lib/systemd/system/mqnamesrv.service").expect("the unit");
    assert!(unit.contains("ExecStart=/usr/bin/mqnamesrv -c /etc/rocketmq/namesrv.properties"), "{unit}");

    // An operator's edit of the conffile (ports free on this machine), then the unit's command as its user.
    let (port, http_port) = (support::free_port(), support::free_port());
    let conf = "/etc/rocketmq/namesrv.properties";
    let text = std::fs::read_to_string(conf).expect("the conffile");
    assert!(text.contains("listenPort=9876\n"), "{text}");
    let text = text
        .replace("listenPort=9876", &format!("listenPort={port}"))
        .replace("httpAddress=127.0.0.1:9877", &format!("httpAddress=127.0.0.1:{http_port}"));
    std::fs::write(conf, text).expect("edit the conffile");
    let log = out.path().join("mqnamesrv.log");
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=rocketmq", "--regid=rocketmq", "--init-groups", "/usr/bin/mqnamesrv", "-c", conf])
        .env_clear()
        .env("HOME", "/var/lib/rocketmq")
        .env("RUST_LOG", "info")
        .current_dir("/");
    let mut server = Managed::spawn("installed mqnamesrv", cmd, &log);
    let ns = SocketAddr::from(([127, 0, 0, 1], port));
    server.wait_accepting(ns, Duration::from_secs(20));
    let (status, _, body) = http_response(SocketAddr::from(([127, 0, 0, 1], http_port)), "/ready").expect("/ready");
    assert_eq!(status, 200, "/ready: {body}");
    let mut c = Client::connect(ns);
    let put = c.cmd(100).with_ext("namespace", "DebNS").with_ext("key", "k").with_ext("value", "v");
    assert_eq!(c.request(put).code, 0, "PUT_KV_CONFIG\n{}", support::tail(&log, 40));
    let kv = Path::new("/var/lib/rocketmq/namesrv/kvConfig.json");
    assert!(std::fs::read_to_string(kv).is_ok_and(|t| t.contains("DebNS")), "the KV file under the user's HOME");
    let owner = sh("stat", Command::new("stat").args(["-c", "%U:%G", kv.to_str().unwrap()]));
    assert_eq!(owner.trim(), "rocketmq:rocketmq", "the KV file's owner");
    // UPDATE_NAMESRV_CONFIG saves the conffile through the server, which keeps the previous version beside it.
    let update = c.cmd(318).with_body(b"orderMessageEnable=true\n".to_vec());
    assert_eq!(c.request(update).code, 0, "UPDATE_NAMESRV_CONFIG\n{}", support::tail(&log, 40));
    assert!(Path::new("/etc/rocketmq/namesrv.properties.bak").exists(), "the saved configuration's previous version");
    let took = server.stop_within(Duration::from_secs(15));
    assert!(took.is_some(), "the installed server did not stop on SIGTERM\n{}", support::tail(&log, 40));
    eprintln!("installed server answered on {ns}, wrote {} as rocketmq, stopped in {took:?}", kv.display());

    // What a save killed half-way leaves beside the conffile (persist.rs names it `<file>.tmp.<pid>.<n>`).
    std::fs::write("/etc/rocketmq/namesrv.properties.tmp.4242.1", "listenPort=1\n").expect("a temp file");
    let purged = sh("dpkg --purge", Command::new("dpkg").args(["--purge", "namesrv"]));
    eprintln!("dpkg --purge namesrv:\n{purged}");
    let left: Vec<&str> = LEFT_BEHIND.into_iter().filter(|p| Path::new(p).exists()).collect();
    assert!(left.is_empty(), "left behind by the purge: {left:?}");
    assert!(!exists("getent", &["passwd", "rocketmq"]), "the user is still there after the purge");
    assert!(!exists("getent", &["group", "rocketmq"]), "the group is still there after the purge");
    assert!(!exists("dpkg", &["-s", "namesrv"]), "dpkg still knows the package after the purge");
}
