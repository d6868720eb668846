//! The non-JVM client peers: the native RocketMQ C++ client through its Python bindings (PyPI packages that bundle
//! `librocketmq.so`) and ali-ons (npm, pure JavaScript); also playwright-core (npm), which drives a browser for the
//! console test. Each is installed at test time into its own directory of the peers cache
//! (`${NAMESRV_PEERS_CACHE:-~/.cache/namesrv-peers}`), never into the repository, and reused by later runs. The
//! programs that drive them are `tests/peers/python/cpp_producer.py`, `tests/peers/js/` and `tests/peers/browser/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::proc::{run, Output};

/// A PyPI package bundling a native C++ client: (package, version).
pub type PyPeer = (&'static str, &'static str);
/// Apache rocketmq-client-python 2.x API over the C++ client 2.1.0 (route requests with version 333).
pub const CPP_21: PyPeer = ("rocketmq-python-cvs", "2.1.0.3");
/// The older `rocketmq` bindings over the C++ client 1.x (route requests with version 63).
pub const CPP_1X: PyPeer = ("rocketmq", "0.4.4");

const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

fn cache() -> PathBuf {
    match std::env::var_os("NAMESRV_PEERS_CACHE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/namesrv-peers"),
    }
}

/// Builds `dir` with `install(staging)` unless it is already complete (a `.complete` marker), staging it next to
/// `dir` and renaming it into place, so that an interrupted install or a concurrent test never leaves half of one.
fn install_once(dir: &Path, what: &str, install: impl FnOnce(&Path) -> Output) -> PathBuf {
    if dir.join(".complete").is_file() {
        return dir.to_path_buf();
    }
    let parent = dir.parent().expect("cache parent");
    std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
    // Unique to the process and the call: tests of one binary may install the same peer side by side.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = dir.file_name().unwrap().to_string_lossy();
    let staging = parent.join(format!(".{name}-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).expect("mkdir staging");
    let out = install(&staging);
    assert!(
        out.success(),
        "installing {what} into the peers cache failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    std::fs::write(staging.join(".complete"), what).expect("write marker");
    let _ = std::fs::remove_dir_all(dir);
    if std::fs::rename(&staging, dir).is_err() {
        // Someone else finished first; theirs is as good.
        let _ = std::fs::remove_dir_all(&staging);
    }
    dir.to_path_buf()
}

/// A Python virtualenv with `peer` installed from PyPI; returns its `python`.
pub fn python(peer: PyPeer) -> PathBuf {
    let (package, version) = peer;
    let dir = cache().join("python").join(format!("{package}-{version}"));
    let scratch = tempfile::tempdir().expect("temp dir");
    let venv = install_once(&dir, &format!("{package}=={version}"), |staging| {
        let mut venv = Command::new("python3");
        venv.arg("-m").arg("venv").arg(staging);
        let out = run("python3 -m venv", venv, scratch.path(), INSTALL_TIMEOUT);
        if !out.success() {
            return out;
        }
        let mut pip = Command::new(staging.join("bin/python"));
        pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q"])
            .arg(format!("{package}=={version}"));
        run(&format!("pip install {package}=={version}"), pip, scratch.path(), INSTALL_TIMEOUT)
    });
    venv.join("bin/python")
}

/// Runs `tests/peers/python/cpp_producer.py NAMESRV TOPIC COUNT PREFIX START` with the C++ client of `peer`.
/// `HOME` is a temp dir (the C++ client logs under `$HOME/logs/rocketmq-cpp`).
pub fn cpp_produce(peer: PyPeer, namesrv: &str, topic: &str, count: usize, prefix: &str, start: usize) -> Output {
    let python = python(peer);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/python/cpp_producer.py");
    let home = tempfile::Builder::new().prefix("interop-cpp-").tempdir().expect("temp dir");
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .args([namesrv, topic, &count.to_string(), prefix, &start.to_string()])
        .current_dir(home.path())
        .env("HOME", home.path());
    run(&format!("C++ producer ({} {})", peer.0, peer.1), cmd, home.path(), Duration::from_secs(120))
}

/// `node_modules` with ali-ons installed exactly as pinned by `tests/peers/js/package-lock.json` (`npm ci`).
pub fn ali_ons() -> PathBuf {
    npm_ci("js")
}

/// `node_modules` with playwright-core installed as pinned by `tests/peers/browser/package-lock.json`, for the
/// console test. It drives the system's chromium: playwright-core downloads no browser.
pub fn playwright_core() -> PathBuf {
    npm_ci("browser")
}

/// `node_modules` of `tests/peers/{sub}` installed with `npm ci` into the peers cache.
fn npm_ci(sub: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(sub);
    let lock = std::fs::read(src.join("package-lock.json"))
        .unwrap_or_else(|e| panic!("read tests/peers/{sub}/package-lock.json: {e}"));
    // The directory is named by a hash of the lock file, so changing the pins installs afresh.
    let dir = cache().join("node").join(format!("{sub}-peers-{:08x}", crc32fast::hash(&lock)));
    let scratch = tempfile::tempdir().expect("temp dir");
    let root = install_once(&dir, &format!("tests/peers/{sub} (npm ci)"), |staging| {
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(src.join(f), staging.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
        }
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix"]).arg(staging);
        run(&format!("npm ci (tests/peers/{sub})"), npm, scratch.path(), INSTALL_TIMEOUT)
    });
    root.join("node_modules")
}

/// Runs `tests/peers/js/ons_route.js NAMESRV TOPIC COUNT PREFIX START` with ali-ons.
pub fn ons(namesrv: &str, topic: &str, count: usize, prefix: &str, start: usize) -> Output {
    let modules = ali_ons();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/js/ons_route.js");
    let home = tempfile::Builder::new().prefix("interop-ons-").tempdir().expect("temp dir");
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .args([namesrv, topic, &count.to_string(), prefix, &start.to_string()])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("NODE_PATH", modules);
    run("ali-ons", cmd, home.path(), Duration::from_secs(120))
}
