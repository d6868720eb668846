//! The Go client peer: `tests/peers/go` (`github.com/apache/rocketmq-client-go/v2` v2.1.2 from the Go module
//! proxy), built with `go build` at test time into the cargo target dir; the module cache stays outside git.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use super::proc::{run, Output, RetryBudget};

/// Builds the peer once per test process and returns the binary.
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/go");
        let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-gopeer");
        std::fs::create_dir_all(&out_dir).expect("mkdir gopeer dir");
        // Build under a private name and rename, so concurrent test processes never run half a binary.
        let bin = out_dir.join("gopeer");
        let staged = out_dir.join(format!(".gopeer-{}", std::process::id()));
        let mut cmd = Command::new("go");
        cmd.arg("build").arg("-o").arg(&staged).arg(".").current_dir(&src);
        let out = run("go build (tests/peers/go)", cmd, &out_dir, Duration::from_secs(900));
        assert!(
            out.success(),
            "go build of tests/peers/go failed (Go 1.21+ and access to the Go module proxy are needed):\n{}\n{}",
            out.stdout,
            out.stderr
        );
        std::fs::rename(&staged, &bin).expect("rename gopeer");
        bin
    })
    .clone()
}

/// Runs `gopeer SUBCOMMAND -n NAMESRV ARGS...` and returns its output (callers assert on it).
pub fn run_peer(sub: &str, namesrv: &str, args: &[&str], timeout: Duration) -> Output {
    let bin = binary();
    let dir = tempfile::Builder::new().prefix("interop-gopeer-").tempdir().expect("temp dir");
    let mut cmd = Command::new(&bin);
    cmd.arg(sub)
        .arg("-n")
        .arg(namesrv)
        .args(args)
        .current_dir(dir.path())
        // The Go client writes its logs and local offset store under $HOME.
        .env("HOME", dir.path())
        .env("NAMESRV_ADDR", namesrv);
    run(&format!("gopeer {sub}"), cmd, dir.path(), timeout + Duration::from_secs(30))
}

/// Like `run_peer`, and panics unless it printed `OK` and exited with 0 — and for `produce`, unless it reported
/// no retry (`RETRIES 0 0`; docs/interop.md, "Retries"); returns stdout.
pub fn ok(sub: &str, namesrv: &str, args: &[&str], timeout: Duration) -> String {
    let out = run_peer(sub, namesrv, args, timeout);
    let what = format!("gopeer {sub} {args:?} -n {namesrv}");
    if sub == "produce" {
        out.expect_sent_within(&what, RetryBudget::NONE);
    } else {
        out.expect_ok(&what);
    }
    out.stdout
}

/// A Go push consumer in `group` that must receive exactly the messages `<prefix>-0` … `<prefix>-<count-1>` of
/// `topic` (in any order) within two minutes; panics otherwise.
pub fn consume_all(namesrv: &str, topic: &str, group: &str, prefix: &str, count: usize) {
    let n = count.to_string();
    let out = ok(
        "consume",
        namesrv,
        &["-t", topic, "-g", group, "-count", &n, "-prefix", prefix, "-timeout", "120s"],
        Duration::from_secs(120),
    );
    let mut got: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("RECV ")).collect();
    got.sort();
    let mut want: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    want.sort();
    assert_eq!(got, want, "Go push consumer:\n{out}");
}
