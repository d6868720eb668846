//! The HTTP endpoint under attack (issue #45), against a real `mqnamesrv` process: the failure these guard against
//! is the process dying or hanging, which an in-process server would take the test binary down with. Each test
//! makes the attack, then asserts that the attacker got a clear answer (a status, or a closed connection) and that
//! everybody else — another HTTP client, the remoting port, a SIGTERM — is served as if nothing happened.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use namesrv::protocol::{RequestCode, ResponseCode};
use support::client::Client;
use support::proc::Managed;
use support::registration::new_cmd;

/// A `mqnamesrv` process with the HTTP endpoint on, and the settings of the test.
struct Node {
    proc: Managed,
    addr: SocketAddr,
    http: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Node {
    fn start(settings: &[(&str, &str)]) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let port = support::free_port();
        let http_port = std::iter::repeat_with(support::free_port).find(|p| *p != port).unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let http = SocketAddr::from(([127, 0, 0, 1], http_port));
        let mut props = vec![
            ("listenPort".to_string(), port.to_string()),
            ("bindAddress".to_string(), "127.0.0.1".to_string()),
            ("kvConfigPath".to_string(), dir.path().join("kvConfig.json").display().to_string()),
            ("httpAddress".to_string(), http.to_string()),
        ];
        props.extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let file = dir.path().join("namesrv.properties");
        support::write_properties(&file, &props);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"));
        cmd.arg("-c").arg(&file).current_dir(dir.path()).env("HOME", dir.path()).env("RUST_LOG", "info");
        let log: PathBuf = dir.path().join("mqnamesrv.log");
        let mut proc = Managed::spawn("mqnamesrv", cmd, &log);
        proc.wait_accepting(addr, Duration::from_secs(10));
        proc.wait_accepting(http, Duration::from_secs(10));
        Node { proc, addr, http, _dir: dir }
    }

    fn pid(&self) -> u32 {
        self.proc.pid().expect("running")
    }

    /// The process is alive, `/health` answers within a second, and the remoting port serves.
    fn assert_unharmed(&mut self, after: &str) {
        self.proc.assert_running();
        let started = Instant::now();
        let (status, _, _) = health(self.http).unwrap_or_else(|e| panic!("/health after {after}: {e}"));
        assert_eq!(status, 200, "/health after {after}");
        assert!(started.elapsed() < Duration::from_secs(1), "/health took {:?} after {after}", started.elapsed());
        let mut c = Client::connect(self.addr);
        let r = c.try_request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO), Duration::from_secs(5));
        assert_eq!(r.map(|r| r.code), Ok(ResponseCode::SUCCESS), "remoting port after {after}");
    }

    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.pid())).map(|d| d.count()).unwrap_or(0)
    }
}

fn health(http: SocketAddr) -> Result<(u16, String, String), String> {
    support::observe::http_response(http, "/health")
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The status of the first answer on `s` (reads its head only).
fn status_of(s: &mut TcpStream) -> Result<u16, String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            Ok(_) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&head))),
            Err(e) => return Err(format!("{e} after {:?}", String::from_utf8_lossy(&head))),
        }
    }
    let text = String::from_utf8_lossy(&head);
    text.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| text.to_string())
}

#[test]
fn a_huge_content_length_is_refused_unread_and_the_server_lives() {
    let _turn = crate::alone();
    let mut node = Node::start(&[]);
    for (method, length, want) in [
        ("POST", "9223372036854775808", 413),
        ("GET", "9223372036854775808", 413),
        ("POST", "1000000000000000", 413),
        ("POST", "18446744073709551613", 413),
        ("POST", "99999999999999999999999", 400),
        ("POST", "4097", 413),
    ] {
        let mut s = connect(node.http);
        write!(s, "{method} /health HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n").unwrap();
        assert_eq!(status_of(&mut s), Ok(want), "{method} with Content-Length {length}");
        node.assert_unharmed(&format!("{method} with Content-Length {length}"));
    }
    // A body of unknown length is not read either.
    let mut s = connect(node.http);
    write!(s, "POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n").unwrap();
    assert_eq!(status_of(&mut s), Ok(413), "a chunked body");
    node.assert_unharmed("a chunked body");
}

#[test]
fn a_pipeliner_that_never_reads_holds_up_nobody_and_not_the_stop() {
    let _turn = crate::alone();
    let mut node = Node::start(&[]);
    // 200 requests for the console page (~30 KB each) on one connection, and never a byte read.
    let mut greedy = connect(node.http);
    let requests = "GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(200);
    greedy.write_all(requests.as_bytes()).unwrap();
    // Give its replies time to fill both socket buffers, then check that everybody else is served meanwhile.
    for round in 0..5 {
        node.assert_unharmed(&format!("round {round} of a pipeliner that does not read"));
    }
    let took = node.proc.stop_within(Duration::from_secs(5));
    assert!(took.is_some_and(|t| t < Duration::from_secs(2)), "SIGTERM took {took:?} with the pipeliner there");
    drop(greedy);
}

#[test]
fn a_head_that_never_ends_gets_431_and_costs_no_memory() {
    let _turn = crate::alone();
    let mut node = Node::start(&[("httpMaxHeaderBytes", "16384")]);
    // Exactly the limit, unfinished: the server reads it all and answers 431.
    let mut s = connect(node.http);
    let mut head = b"GET / HTTP/1.1\r\nX-Long: ".to_vec();
    head.resize(16384, b'a');
    s.write_all(&head).unwrap();
    assert_eq!(status_of(&mut s), Ok(431));
    node.assert_unharmed("a head at the limit");
    // 16 clients pushing 8 MiB of one header each: cut off at the limit, so memory does not follow.
    let before = support::observe::rss_bytes(node.pid());
    let http = node.http;
    let senders: Vec<_> = (0..16)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = connect(http);
                s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
                let _ = s.write_all(b"GET / HTTP/1.1\r\nX-Long: ");
                let chunk = vec![b'a'; 64 * 1024];
                let mut sent = 0usize;
                while sent < 8 << 20 {
                    match s.write(&chunk) {
                        Ok(n) => sent += n,
                        Err(_) => break,
                    }
                }
                sent
            })
        })
        .collect();
    let sent: Vec<usize> = senders.into_iter().map(|t| t.join().unwrap()).collect();
    let grown = support::observe::rss_bytes(node.pid()).saturating_sub(before);
    assert!(sent.iter().all(|&n| n < 8 << 20), "a sender got all 8 MiB in: {sent:?}");
    assert!(grown < 16 << 20, "RSS grew by {grown} bytes for 16 endless heads");
    node.assert_unharmed("16 endless heads");
}

#[test]
fn half_sent_requests_take_no_threads_are_capped_and_time_out() {
    let _turn = crate::alone();
    // The head timeout is long enough that none of the 64 admitted connections times out while the 600 are still
    // being opened on a loaded machine (a freed place would admit a later one instead of refusing it). Two reactors,
    // so that the server's own threads are a known few whatever the machine's cores.
    let settings = [
        ("httpMaxConnections", "64"),
        ("httpHeaderTimeoutSeconds", "5"),
        ("reactorThreads", "2"),
        ("pinThreads", "false"),
    ];
    let mut node = Node::start(&settings);
    let mut held = Vec::new();
    for _ in 0..600 {
        let mut s = connect(node.http);
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n");
        held.push(s);
    }
    // The server's thread count does not follow the connections: its own threads (main, 2 reactors, writer,
    // decoder, HTTP, the allocator's, some started lazily) stay well under 16; a thread per connection made 520.
    let threads = node.threads();
    assert!(threads <= 16, "{threads} threads with 600 half-sent requests");
    // Beyond the first 64, each newer one took the slot of the oldest (which was closed); the last 64 are closed
    // once their head is late (5 s). None is answered but with a timeout: none was complete.
    for s in &mut held {
        match status_of(s) {
            Ok(408) | Err(_) => {}
            Ok(other) => panic!("a half-sent request got {other}"),
        }
    }
    let metrics = support::observe::http_response(node.http, "/metrics").unwrap().2;
    let evicted = metrics.lines().find_map(|l| l.strip_prefix("namesrv_http_refused_total{reason=\"evicted\"} "));
    // 600 − 64 = 536 made room, and one more when the start-up probe's connection (`wait_accepting` connects and
    // closes) still held a slot as the flood began, its close not yet seen on a loaded machine: it is evicted first.
    let evicted: Option<u64> = evicted.and_then(|v| v.parse().ok());
    assert!(
        matches!(evicted, Some(536..=537)),
        "each connection over httpMaxConnections made room: {evicted:?} evicted\n{metrics}"
    );
    node.assert_unharmed("600 half-sent requests");
}

#[test]
fn an_event_stream_burst_gets_503_at_once_and_a_slot_frees_when_its_client_goes() {
    let _turn = crate::alone();
    let mut node = Node::start(&[("eventFeedStreams", "4")]);
    let mut streams: Vec<(TcpStream, Result<u16, String>)> = (0..24)
        .map(|_| {
            let mut s = connect(node.http);
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            (s, Ok(0))
        })
        .collect();
    for (s, status) in &mut streams {
        *status = status_of(s);
    }
    let count = |code: u16| streams.iter().filter(|(_, st)| *st == Ok(code)).count();
    assert_eq!((count(200), count(503)), (4, 20), "{:?}", streams.iter().map(|(_, st)| st).collect::<Vec<_>>());
    // The clients of the open streams go away; a new stream is let in within a second.
    streams.clear();
    let gone = Instant::now();
    let admitted = support::eventually(Duration::from_secs(1), || {
        let mut s = connect(node.http);
        s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        status_of(&mut s) == Ok(200)
    });
    assert!(admitted, "no stream slot free {:?} after the clients left", gone.elapsed());
    node.assert_unharmed("a stream burst");
}

#[test]
fn connections_over_the_limit_are_told_503_and_the_rest_are_served() {
    let _turn = crate::alone();
    let mut node = Node::start(&[("httpMaxConnections", "8")]);
    // Every slot answering (an event stream is answered for as long as it is open): no idle one to make room with.
    let busy: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = connect(node.http);
            s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            assert_eq!(status_of(&mut s), Ok(200));
            s
        })
        .collect();
    let (status, _, body) = health(node.http).unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("httpMaxConnections=8"), "{body}");
    drop(busy);
    assert!(support::eventually(Duration::from_secs(2), || health(node.http).is_ok_and(|(s, _, _)| s == 200)));
    node.assert_unharmed("connections over the limit");
}

/// Every HTTP slot held by idle and half-sent connections, kept full by the attacker: each probe still gets 200
/// within a second (the oldest connection not being answered makes room), and the process lives.
#[test]
fn probes_are_answered_while_idle_and_half_sent_connections_hold_every_slot() {
    let _turn = crate::alone();
    let mut node = Node::start(&[("httpMaxConnections", "8")]);
    let mut held = Vec::new();
    let open = |half_sent: bool| {
        let mut s = connect(node.http);
        if half_sent {
            s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ").unwrap();
        }
        s
    };
    for i in 0..8 {
        held.push(open(i % 2 == 1));
    }
    for i in 0..20 {
        // The attacker tops the slots up before every probe.
        held.push(open(i % 2 == 0));
        for path in ["/health", "/ready"] {
            let started = Instant::now();
            let answer = support::observe::http_response(node.http, path);
            let took = started.elapsed();
            assert_eq!(answer.as_ref().map(|a| a.0), Ok(200), "probe {i} of {path}: {answer:?}");
            assert!(took < Duration::from_secs(1), "probe {i} of {path} took {took:?}");
        }
    }
    let metrics = support::observe::http_response(node.http, "/metrics").unwrap().2;
    let evicted: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("namesrv_http_refused_total{reason=\"evicted\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no eviction count in {metrics}"));
    assert!(evicted >= 20, "{evicted} evicted");
    drop(held);
    node.assert_unharmed("a slot flood");
}
