//! Helpers for integration tests that talk to real servers over TCP: the Java name server (`java`), our
//! `mqnamesrv` binary (`ours`), a blocking remoting client (`client`) and a TLS one (`tls`), reply normalisation
//! (`normalize`) and the Java-versus-ours comparison built on it (`differ`), a recording proxy and the replay of its
//! recordings (`recorder`, `replay`), a controller node with brokers that drive it (`controller`), and the real peers
//! (`broker`, `mqadmin`, `gopeer`, `native`), and the container image run with podman (`podman`).
//!
//! Used from integration tests with `mod support;`. Every test binary uses a different subset, hence the
//! `dead_code` allowance.
#![allow(dead_code)]

pub mod auth_broker;
pub mod broker;
pub mod client;
pub mod controller;
pub mod differ;
pub mod gopeer;
pub mod inproc;
pub mod interop;
pub mod java;
pub mod mqadmin;
pub mod native;
pub mod normalize;
pub mod observe;
pub mod ours;
pub mod podman;
pub mod proc;
pub mod recorder;
pub mod registration;
pub mod replay;
pub mod rng;
pub mod sse;
pub mod tls;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A port that was free a moment ago, for a server a test starts (often a JVM that binds it seconds later).
pub fn free_port() -> u16 {
    free_port_block(1)
}

/// The first of `n` consecutive ports that were all free a moment ago.
///
/// They come from below the kernel's ephemeral range (`ip_local_port_range`), never from `bind(0)`: between the
/// pick and a JVM's bind seconds later, the local end of any outgoing connection could take a port from the
/// ephemeral range (a Java broker once failed with `BindException` on its HA port that way), but never one below
/// it. The search starts at a place derived from the process id and moves on with every pick, so test threads and
/// test binaries running side by side do not pick the same block.
pub fn free_port_block(n: u16) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    const LOW: u32 = 10_240;
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral_low.saturating_sub(LOW + u32::from(n));
    assert!(span >= 1_000, "the ephemeral port range starts at {ephemeral_low}: too few ports below it for tests");
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..span {
        let base = LOW + NEXT.fetch_add(u32::from(n), Ordering::Relaxed) % span;
        let free = (base..base + u32::from(n))
            .all(|port| TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port as u16))).is_ok());
        if free {
            return base as u16;
        }
    }
    panic!("no {n} consecutive free ports below {ephemeral_low}");
}

/// Waits until `addr` accepts a TCP connection. Fails early when `child` exits, or after `timeout`; on failure the
/// panic message carries `what`, the reason and the tail of `log`.
pub(crate) fn wait_until_accepting(what: &str, child: &mut Child, addr: SocketAddr, timeout: Duration, log: &Path) {
    let accepting = eventually(timeout, || {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{what} exited with {status} before accepting on {addr}\n--- log {} ---\n{}",
                log.display(),
                tail(log, 100)
            );
        }
        false
    });
    if !accepting {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "{what} did not accept connections on {addr} within {timeout:?}\n--- log {} ---\n{}",
            log.display(),
            tail(log, 100)
        );
    }
}

/// The last `lines` lines of a text file (lossy UTF-8), or a note that it could not be read.
pub fn tail(path: &Path, lines: usize) -> String {
    let mut bytes = Vec::new();
    match std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)) {
        Ok(_) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Spawns a shell watchdog that SIGKILLs `pid` as soon as this test process is gone, so a JVM or server never
/// outlives a test binary that was itself killed (no unwinding, no `Drop`). The returned child is the watchdog; kill
/// it once `pid` has been stopped normally.
pub(crate) fn spawn_watchdog(pid: u32) -> Option<Child> {
    let me = std::process::id();
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while kill -0 {me} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 1; done; kill -9 {pid} 2>/dev/null"
        ))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

/// Writes a Java properties file: one `key=value` per line (values must not need escaping; tests use plain paths).
pub(crate) fn write_properties(path: &Path, props: &[(String, String)]) {
    let mut text = String::new();
    for (k, v) in props {
        assert!(!v.contains('\n') && !v.contains('\\'), "property {k} needs escaping: {v:?}");
        text.push_str(k);
        text.push('=');
        text.push_str(v);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Polls `f` every 2 ms until it holds or `limit` passes.
pub fn eventually(limit: Duration, f: impl FnMut() -> bool) -> bool {
    eventually_every(limit, QUICK_POLL, f)
}

/// `eventually` for a wait that needs what it found: polls `f` every 2 ms until it gives `Some`, or `limit` passes
/// (`None`). `f` is asked once more at the end, so a limit of zero still asks once.
pub fn eventually_some<T>(limit: Duration, f: impl FnMut() -> Option<T>) -> Option<T> {
    eventually_some_every(limit, QUICK_POLL, f)
}

/// How often `eventually` asks: cheap conditions (an in-process counter, a loopback request).
const QUICK_POLL: Duration = Duration::from_millis(2);

/// `eventually`, asking every `every`: for conditions that cost a request to a Java peer or a read of a large log
/// file each time (the fault tests), where asking every 2 ms would load what it watches.
pub fn eventually_every(limit: Duration, every: Duration, mut f: impl FnMut() -> bool) -> bool {
    eventually_some_every(limit, every, || f().then_some(())).is_some()
}

/// `eventually_some`, asking every `every` (see `eventually_every`). The one wait loop of the tests.
pub fn eventually_some_every<T>(limit: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(found) = f() {
            return Some(found);
        }
        std::thread::sleep(every);
    }
    f()
}

/// Kills a child process and reaps it, ignoring errors (already dead).
pub(crate) fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}
