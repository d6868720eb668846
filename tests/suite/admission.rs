//! Every byte a peer makes us hold is admitted first (decision 0032): half-sent frames on the name-server port, plain
//! or TLS, hold at most `decoderQueueBytes` plus one read per connection; a frame has a deadline; the controller
//! port reads every unfinished frame under its budget, closes late frames and idle connections, and keeps to its
//! share of the open-files limit. Memory is the spawned server's VmRSS, with small budgets so the tests stay fast.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use namesrv::protocol::RequestCode;
use namesrv::test_support::limit::Limit;
use support::client::Client;
use support::controller::controller_keys;
use support::eventually;
use support::inproc::InProc;
use support::ours::OurNamesrv;

const BUDGET: usize = 2 * 1024 * 1024;
/// What a connection may hold outside the budget: one read of a frame's start (64 KiB) and the buffers around it
/// (TLS: rustls's 16 KiB of plaintext and a record or two), rounded up.
const PER_CONN: usize = 128 * 1024;
/// The allocator's and the kernel's share that does not scale with the attack.
const SLACK: usize = 12 * 1024 * 1024;

fn rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    kb * 1024
}

/// The start of a frame announcing `len` bytes: its prefix and `sent - 4` bytes of it.
fn frame_start(len: usize, sent: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; sent];
    bytes[..4].copy_from_slice(&(len as u32 - 4).to_be_bytes());
    bytes
}

/// Sends what the server takes of `bytes` within `patience` on each of the streams, in parallel, and keeps them open.
fn send_all<S: Write + Send + 'static>(streams: Vec<S>, bytes: Vec<u8>) -> Vec<S> {
    let bytes = std::sync::Arc::new(bytes);
    let threads: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            let bytes = std::sync::Arc::clone(&bytes);
            std::thread::spawn(move || {
                for chunk in bytes.chunks(16 * 1024) {
                    // A server that stops reading is the point: a write timing out ends the sending.
                    if s.write_all(chunk).is_err() {
                        break;
                    }
                }
                let _ = s.flush();
                s
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("sender")).collect()
}

fn plain(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_write_timeout(Some(Duration::from_millis(1500))).unwrap();
    s
}

/// The growth of the server's RSS once the attack settled (no growth for a second), and the bound it must keep.
fn settled_growth(pid: u32, before: usize) -> usize {
    let mut last = rss(pid);
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(500)); // sampling a figure, not waiting for an event
        let now = rss(pid);
        if now.abs_diff(last) < 256 * 1024 {
            break;
        }
        last = now;
    }
    rss(pid).saturating_sub(before)
}

fn assert_bounded(what: &str, growth: usize, conns: usize, srv: &OurNamesrv) {
    let bound = BUDGET + conns * PER_CONN + SLACK;
    eprintln!("{what}: RSS grew by {} KiB (bound {} KiB)", growth / 1024, bound / 1024);
    assert!(growth <= bound, "{what}: RSS grew by {growth} bytes, over {bound}\n{}", srv.log());
}

/// Half-sent frames of 15 MB over TLS (the default permissive mode, built-in certificate) are admitted like plain
/// ones: without it every connection decrypted all it was sent into memory.
#[test]
fn tls_half_sent_big_frames_hold_at_most_the_budget() {
    let _turn = crate::heavy();
    const CONNS: usize = 40;
    let srv = OurNamesrv::start_with(&[("decoderQueueBytes", &BUDGET.to_string())]);
    let before = rss(srv.pid());
    let streams: Vec<_> = (0..CONNS)
        .map(|_| {
            let mut tcp = plain(srv.addr());
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let conn = rustls::ClientConnection::new(support::tls::trust_anything(), name).expect("TLS client");
            let mut stream = rustls::StreamOwned::new(conn, tcp.try_clone().unwrap());
            while stream.conn.is_handshaking() {
                stream.conn.complete_io(&mut tcp).expect("handshake");
            }
            stream
        })
        .collect();
    let held = send_all(streams, frame_start(15_000_000, 3 * 1024 * 1024));
    assert_bounded("TLS", settled_growth(srv.pid(), before), CONNS, &srv);
    drop(held);
}

/// Frames between 64 KiB and 256 KiB, half-sent, on many connections: each takes its room like a big one, so they
/// hold the budget and one read each, not what they announced (500 × 250 KiB would be 125 MB).
#[test]
fn half_sent_middle_sized_frames_hold_at_most_the_budget() {
    let _turn = crate::heavy();
    const CONNS: usize = 500;
    let srv = OurNamesrv::start_with(&[("decoderQueueBytes", &BUDGET.to_string())]);
    let before = rss(srv.pid());
    let streams: Vec<_> = (0..CONNS).map(|_| plain(srv.addr())).collect();
    let held = send_all(streams, frame_start(250 * 1024, 240 * 1024));
    assert_bounded("plain, 250 KiB frames", settled_growth(srv.pid(), before), CONNS, &srv);
    let mut c = Client::connect(srv.addr());
    let cmd = c.cmd(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    c.request(cmd);
    drop(held);
}

/// A peer that announces a big frame and trickles it is closed at the frame deadline, its room and buffer given
/// back; a byte now and then is no progress. Before, its admission was revoked after a second and it kept its
/// buffer for ever, never idle.
#[test]
fn a_trickled_frame_is_closed_at_its_deadline() {
    let _turn = crate::heavy();
    let srv = OurNamesrv::start_with(&[
        ("decoderQueueBytes", &BUDGET.to_string()),
        ("frameReadTimeoutSeconds", "2"),
        ("frameMinBytesPerSecond", "0"),
    ]);
    let mut s = plain(srv.addr());
    s.write_all(&frame_start(15_000_000, 200_000)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    // A byte every 300 ms (the read timeout paces it) until the server closes.
    let closed = eventually(Duration::from_secs(8), || {
        if s.write_all(&[0]).is_err() {
            return true;
        }
        match s.read(&mut [0u8; 16]) {
            Ok(n) => n == 0,
            Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    });
    assert!(closed, "the trickling connection is still open\n{}", srv.log());
    assert!(eventually(Duration::from_secs(2), || srv.log().contains("frame_deadline")), "logged\n{}", srv.log());
}

fn controller(tweak: impl FnOnce(&mut namesrv::config::Config)) -> (InProc, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let srv = InProc::start(|c| {
        controller_keys(c, "n0-127.0.0.1:0", "n0", store.path());
        c.extra.insert("controllerFrameBytes".into(), (1024 * 1024).to_string());
        tweak(c);
    });
    (srv, store)
}

/// On the controller port every unfinished frame takes room, whatever its size: 200 connections half-sending
/// 100 KiB frames hold the budget and a small buffer each (before, 256 KiB and under were read freely, and each
/// connection reserved its frame's length).
#[test]
fn controller_half_sent_small_frames_are_read_under_the_budget() {
    let _turn = crate::heavy();
    const CONNS: usize = 200;
    let (srv, _store) = controller(|_| {});
    let m = srv.metrics().controller.clone();
    let addr = srv.controller_addr().unwrap();
    let streams: Vec<_> = (0..CONNS).map(|_| plain(addr)).collect();
    let held = send_all(streams, frame_start(100 * 1024, 60 * 1024));
    let bound = (1024 * 1024 + CONNS * 32 * 1024) as u64;
    let settled = eventually(Duration::from_secs(10), || m.frames_waiting.load(Relaxed) > 0);
    let buffers = m.read_buffer_bytes.load(Relaxed);
    eprintln!("controller read buffers: {} KiB (bound {} KiB)", buffers / 1024, bound / 1024);
    assert!(settled, "some wait for room");
    assert!(buffers <= bound, "read buffers hold {buffers} bytes, over {bound}");
    drop(held);
}

/// A controller-port frame that does not arrive within `controllerFrameTimeoutSeconds` closes its connection and
/// gives its room back; a connection with no frame for `controllerIdleSeconds` is closed; past
/// `controllerMaxConnections` new connections are closed at once. All counted in `namesrv_limit_hits_total`.
#[test]
fn controller_frames_have_a_deadline_idle_connections_close_and_connections_are_capped() {
    let _turn = crate::heavy();
    let (srv, _store) = controller(|c| {
        c.extra.insert("controllerFrameTimeoutSeconds".into(), "1".into());
        c.extra.insert("controllerIdleSeconds".into(), "2".into());
        c.extra.insert("controllerMaxConnections".into(), "8".into());
    });
    let metrics = srv.metrics();
    let addr = srv.controller_addr().unwrap();
    let mut late = plain(addr);
    late.write_all(&frame_start(1024 * 1024, 100_000)).unwrap();
    let mut idle = Client::connect(addr);
    assert!(
        eventually(Duration::from_secs(5), || metrics.controller.frame_room_bytes.load(Relaxed) > 0),
        "the frame took room"
    );
    let mut late = Client::from_stream(late);
    late.expect_closed(Duration::from_secs(5));
    assert_eq!(metrics.controller.frame_room_bytes.load(Relaxed), 0, "its room given back");
    assert!(metrics.limit_hits(Limit::FrameDeadline) >= 1);
    idle.expect_closed(Duration::from_secs(6));

    let open: Vec<_> = (0..12).map(|_| TcpStream::connect(addr).unwrap()).collect();
    assert!(
        eventually(Duration::from_secs(5), || metrics.limit_hits(Limit::ControllerConnections) >= 4),
        "over the cap: closed at accept"
    );
    assert_eq!(metrics.controller.connections.load(Relaxed), 8);
    drop(open);
}

/// Under a 256-file limit, a flood of controller-port connections leaves the name-server port its descriptors:
/// the controller keeps to its share (`limit::fd_shares`), and a route query is still answered.
#[test]
fn a_controller_flood_cannot_take_the_name_server_ports_descriptors() {
    let _turn = crate::heavy();
    let dir = tempfile::tempdir().unwrap();
    let (ctl_port, ns_port, http_port) = (support::free_port(), support::free_port(), support::free_port());
    let props = dir.path().join("namesrv.properties");
    std::fs::write(
        &props,
        format!(
            "listenPort={ns_port}\nbindAddress=127.0.0.1\nenableControllerInNamesrv=true\n\
             controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:{ctl_port}\ncontrollerDLegerSelfId=n0\n\
             controllerStorePath={}\nkvConfigPath={}\nhttpAddress=127.0.0.1:{http_port}\n",
            dir.path().join("store").display(),
            dir.path().join("kv.json").display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n 256; exec {} -c {}", env!("CARGO_BIN_EXE_mqnamesrv"), props.display()))
        .env("HOME", dir.path())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let (ns, ctl) = (SocketAddr::from(([127, 0, 0, 1], ns_port)), SocketAddr::from(([127, 0, 0, 1], ctl_port)));
    let up = eventually(Duration::from_secs(15), || TcpStream::connect(ns).is_ok() && TcpStream::connect(ctl).is_ok());
    let flood: Vec<_> =
        (0..300).filter_map(|_| TcpStream::connect_timeout(&ctl, Duration::from_secs(1)).ok()).collect();
    // Every connection of the flood kept or refused (`/metrics`) before a route query asks for a descriptor too.
    let http = SocketAddr::from(([127, 0, 0, 1], http_port));
    let metric = |name: &str| -> Option<usize> {
        let text = support::observe::http_get(http, "/metrics").ok()?;
        text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok())
    };
    let settled = eventually(Duration::from_secs(10), || {
        let kept = metric("namesrv_controller_connections ").unwrap_or(0);
        let refused = metric("namesrv_limit_hits_total{limit=\"controller_connections\"} ").unwrap_or(0);
        kept + refused >= flood.len()
    });
    let answered = (0..5).any(|_| {
        let Ok(s) = TcpStream::connect_timeout(&ns, Duration::from_secs(1)) else { return false };
        let mut c = Client::from_stream(s);
        let cmd = c.cmd(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
        c.try_request(cmd, Duration::from_secs(2)).is_ok()
    });
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    assert!(up, "started\n{text}");
    assert!(settled, "the controller port kept or refused every connection of the flood\n{text}");
    assert!(answered, "the name-server port answered with {} controller connections open\n{text}", flood.len());
}
