//! Load and fault tests against the real `mqnamesrv` binary, loopback only, each bounded in time (issue #7, item 5).
//! They assert what can fail without a clock: every well-behaved request answered correctly, bad connections closed
//! (or answered with a code), gauges back to their steady values, resident memory under a bound derived from the
//! code. Speed and latency under the same faults are measured by `namesrv-perf faults …` (docs/reliability.md).
//!
//! Each test starts its own server process (the fd limit is per process: 10k client sockets here, 10k there).

use crate::support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::{frame, RemotingCommand, RequestCode, ResponseCode};
use support::client::Client;
use support::observe::{loadavg, metric, mib, rss_bytes, wait_for_metric};
use support::ours::OurNamesrv;
use support::registration::{new_cmd, Broker};

const OPEN: &str = "namesrv_connections_open";
/// Upper bound on how long a test waits for the server to catch up (closes are applied asynchronously).
const SETTLE: Duration = Duration::from_secs(30);
const STEADY: Broker = Broker { cluster: "RelC", name: "steady", addr: "127.0.0.1:10911", id: 0 };

/// Our binary with the HTTP endpoint on, two unpinned reactors; returns it and the HTTP address.
fn start(extra: &[(&str, &str)]) -> (OurNamesrv, SocketAddr) {
    let http = SocketAddr::from(([127, 0, 0, 1], support::free_port()));
    let http_text = http.to_string();
    let mut props = vec![("httpAddress", http_text.as_str()), ("reactorThreads", "2"), ("pinThreads", "false")];
    props.extend_from_slice(extra);
    let srv = OurNamesrv::start_with(&props);
    (srv, http)
}

/// Registers the steady broker with two topics on a connection that stays open (its close would evict it).
fn steady_broker(srv: &OurNamesrv) -> Client {
    let mut c = Client::connect(srv.addr());
    let r = c.request(STEADY.register(&["RelTopicA", "RelTopicB"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    c
}

/// One well-behaved route query; panics unless it is the steady broker's route.
fn query_route(c: &mut Client) {
    let r = c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "RelTopicA"));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#), "wrong route: {body}");
}

/// 10k idle connections are held with bounded memory, each still answered; closing them brings the gauge back.
#[test]
fn ten_thousand_idle_connections() {
    let _turn = crate::heavy();
    const CONNS: usize = 10_000;
    let (srv, http) = start(&[]);
    let _steady = steady_broker(&srv);
    let before = rss_bytes(srv.pid());

    let mut idle: Vec<TcpStream> = Vec::with_capacity(CONNS);
    for i in 0..CONNS {
        let s = TcpStream::connect_timeout(&srv.addr(), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("connection {i}: {e}\n{}", srv.log()));
        idle.push(s);
    }
    let open = wait_for_metric(http, OPEN, (CONNS + 1) as f64, SETTLE);
    assert_eq!(open, (CONNS + 1) as f64, "the server did not adopt every connection\n{}", srv.log());

    // Every 33rd connection (304 of them) asks once: held connections are live ones, on both reactors.
    for (i, s) in idle.iter().enumerate().step_by(33) {
        let mut c = Client::from_stream(s.try_clone().expect("clone socket"));
        let r = c.try_request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "RelTopicA"), SETTLE);
        let r = r.unwrap_or_else(|e| panic!("idle connection {i}: {e}\n{}", srv.log()));
        assert_eq!(r.code, ResponseCode::SUCCESS, "idle connection {i}: {r:?}");
    }

    // A connection costs its `Conn` (socket and bookkeeping, a few hundred bytes), a slab slot and a mio
    // registration; its input buffer is only allocated by its first read (src/reactor/conn.rs). 2 KiB per
    // connection leaves room for allocator rounding: above it, something per idle connection is allocated that
    // the code does not mean to.
    let held = rss_bytes(srv.pid());
    let per_conn = held.saturating_sub(before) as f64 / CONNS as f64;
    println!(
        "idle: RSS {:.1} MiB before, {:.1} MiB with {CONNS} connections: {:.0} bytes per connection (load {})",
        mib(before),
        mib(held),
        per_conn,
        loadavg()
    );
    assert!(per_conn < 2.0 * 1024.0, "{per_conn:.0} bytes of RSS per idle connection");

    drop(idle);
    let open = wait_for_metric(http, OPEN, 1.0, SETTLE);
    assert_eq!(open, 1.0, "connections left open after the clients closed\n{}", srv.log());
}

/// The kinds of garbage a connection sends, and what the server must do about it.
#[derive(Clone, Copy, Debug)]
enum Garbage {
    /// Bytes from a PRNG, first byte non-zero: a length prefix over the 16 MiB limit.
    Random,
    /// Someone speaks HTTP to the port.
    WrongProtocol,
    /// A length prefix of 2^31 − 1.
    Oversized,
    /// A length prefix shorter than the header-length word.
    TooShort,
    /// A header length past the end of the frame.
    HeaderPastFrame,
    /// A JSON header that is not JSON.
    BadJson,
    /// A header-type byte that is neither JSON (0) nor ROCKETMQ (1).
    BadHeaderType,
    /// A valid frame with a request code nobody knows: answered REQUEST_CODE_NOT_SUPPORTED, connection kept.
    UnknownCode,
    /// Half a frame, then nothing: the server waits for the rest (until the idle timeout).
    HalfFrame,
}

const KINDS: [Garbage; 9] = [
    Garbage::Random,
    Garbage::WrongProtocol,
    Garbage::Oversized,
    Garbage::TooShort,
    Garbage::HeaderPastFrame,
    Garbage::BadJson,
    Garbage::BadHeaderType,
    Garbage::UnknownCode,
    Garbage::HalfFrame,
];

impl Garbage {
    /// Java closes the channel on a decode failure; these kinds are all decode failures.
    fn closes(self) -> bool {
        !matches!(self, Garbage::UnknownCode | Garbage::HalfFrame)
    }

    fn bytes(self, seed: u64) -> Vec<u8> {
        let frame = |word: u32, rest: &[u8]| {
            let mut v = ((rest.len() + 4) as u32).to_be_bytes().to_vec();
            v.extend_from_slice(&word.to_be_bytes());
            v.extend_from_slice(rest);
            v
        };
        match self {
            Garbage::Random => {
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut v: Vec<u8> = (0..2048)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                v[0] |= 0x02; // ≥ 32 MiB declared: over the limit whatever follows
                v
            }
            Garbage::WrongProtocol if seed.is_multiple_of(2) => {
                b"GET /cluster HTTP/1.1\r\nHost: namesrv\r\n\r\n".to_vec()
            }
            // The start of a TLS 1.2 ClientHello record.
            // HTTP: "GET " read as a length prefix is over the frame limit. (A first byte 0x16 would be a TLS
            // ClientHello, which the default permissive TLS mode waits to complete.)
            Garbage::WrongProtocol => b"GET / HTTP/1.1\r\nHost: namesrv\r\n\r\n".to_vec(),
            Garbage::Oversized => {
                let mut v = 0x7fff_ffffu32.to_be_bytes().to_vec();
                v.extend_from_slice(&[0u8; 64]);
                v
            }
            Garbage::TooShort => vec![0, 0, 0, 2, 0, 0],
            Garbage::HeaderPastFrame => frame(500, b"{}"),
            Garbage::BadJson => frame(9, b"{\"code\":,"),
            Garbage::BadHeaderType => frame((7 << 24) | 2, b"{}"),
            Garbage::UnknownCode => {
                let mut out = BytesMut::new();
                frame::encode(&RemotingCommand::request(9999, seed as i32), &mut out);
                out.to_vec()
            }
            Garbage::HalfFrame => {
                let mut out = BytesMut::new();
                let cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1).with_ext("topic", "x");
                frame::encode(&cmd, &mut out);
                out[..out.len() / 2].to_vec()
            }
        }
    }
}

/// What the server did to one garbage connection within `within`.
#[derive(Debug, PartialEq)]
enum Fate {
    Closed,
    Answered(i32),
    Silent,
}

fn fate(s: &mut TcpStream, within: Duration) -> Fate {
    s.set_read_timeout(Some(within)).expect("read timeout");
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return Fate::Closed,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Ok(Some(r)) = frame::decode(&mut buf, 1 << 20) {
                    return Fate::Answered(r.code);
                }
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Fate::Closed,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Fate::Silent,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Well-behaved clients querying routes on their own connections until `stop`; returns the answers counted.
fn spawn_queriers(addr: SocketAddr, n: usize, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<usize>> {
    (0..n)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut answered = 0;
                while !stop.load(Ordering::Relaxed) {
                    query_route(&mut c);
                    answered += 1;
                }
                answered
            })
        })
        .collect()
}

/// 200 connections send every kind of garbage while four clients query routes: every query is answered correctly,
/// each broken connection is closed (and counted once as a broken frame), unknown codes are answered with
/// REQUEST_CODE_NOT_SUPPORTED on a connection that stays usable, half frames are waited for.
#[test]
fn garbage_connections_are_closed_while_clients_are_served() {
    let _turn = crate::heavy();
    const CONNS: usize = 198; // 22 of each of the 9 kinds
    let (srv, http) = start(&[]);
    let _steady = steady_broker(&srv);
    let stop = Arc::new(AtomicBool::new(false));
    let queriers = spawn_queriers(srv.addr(), 4, stop.clone());

    let mut conns: Vec<(Garbage, TcpStream)> = (0..CONNS)
        .map(|i| {
            let kind = KINDS[i % KINDS.len()];
            let mut s = TcpStream::connect(srv.addr()).expect("connect");
            s.write_all(&kind.bytes(i as u64)).expect("send garbage");
            (kind, s)
        })
        .collect();
    let mut closing = 0;
    for (i, (kind, s)) in conns.iter_mut().enumerate() {
        let kind = *kind;
        // A half frame gets no answer: a short look is enough to see nothing came (it may stay open for good).
        let within = if matches!(kind, Garbage::HalfFrame) { Duration::from_millis(200) } else { SETTLE };
        let got = fate(s, within);
        let want = match kind {
            k if k.closes() => Fate::Closed,
            Garbage::UnknownCode => Fate::Answered(ResponseCode::REQUEST_CODE_NOT_SUPPORTED),
            _ => Fate::Silent,
        };
        assert_eq!(got, want, "garbage connection {i} ({kind:?})\n{}", srv.log());
        closing += usize::from(kind.closes());
    }
    // The unknown-code connections are still good for a real request.
    for (_, s) in conns.iter().filter(|(k, _)| matches!(k, Garbage::UnknownCode)) {
        query_route(&mut Client::from_stream(s.try_clone().expect("clone")));
    }

    stop.store(true, Ordering::Relaxed);
    let answered: usize = queriers.into_iter().map(|h| h.join().expect("a well-behaved client failed")).sum();
    assert!(answered > 0);
    assert_eq!(metric(http, "namesrv_broken_frames_total"), closing as f64, "{}", srv.log());
    let still_open = CONNS - closing + 1; // + the steady broker
    assert_eq!(wait_for_metric(http, OPEN, still_open as f64, SETTLE), still_open as f64, "{}", srv.log());
    drop(conns);
    assert_eq!(wait_for_metric(http, OPEN, 1.0, SETTLE), 1.0, "{}", srv.log());
    println!("garbage: {closing} connections closed, {answered} well-behaved queries answered (load {})", loadavg());
}

/// Clients that pipeline requests with large answers and never read: the server stops reading them once their
/// pending replies pass 16 MiB (`maxPendingWriteBytes`; the close after `slowReaderCloseSeconds` is tested in
/// tests/log_capture/limits.rs), so its memory stays bounded; everyone else is served.
#[test]
fn slow_readers_are_paused_and_memory_stays_bounded() {
    let _turn = crate::heavy();
    const READERS: usize = 4;
    const TOPICS: usize = 5_000;
    let (srv, http) = start(&[]);
    let mut steady = steady_broker(&srv);
    // One broker with 5k topics makes GET_ALL_TOPIC_LIST_FROM_NAMESERVER answer ~130 KB to a 110-byte request.
    let names: Vec<String> = (0..TOPICS).map(|i| format!("slow-reader-topic-{i:05}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let big = Broker { cluster: "RelC", name: "big", addr: "127.0.0.1:20911", id: 0 };
    assert_eq!(steady.request(big.register(&refs, 1, 513)).code, ResponseCode::SUCCESS);
    let before = rss_bytes(srv.pid());

    // Each reader sends up to 24 MiB of requests (~220k of them: tens of GB of answers if all were buffered) and reads
    // nothing; socket buffers take at most ~10 MiB (tcp_rmem + tcp_wmem maxima), the rest waits for the server.
    let mut req = BytesMut::new();
    frame::encode(&RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 1), &mut req);
    let batch: Vec<u8> = req.iter().copied().cycle().take(req.len() * ((24 << 20) / req.len())).collect();
    let batch = Arc::new(batch);
    let sent = Arc::new(AtomicUsize::new(0));
    let readers: Vec<TcpStream> = (0..READERS)
        .map(|_| {
            let s = TcpStream::connect(srv.addr()).expect("connect");
            let mut w = s.try_clone().expect("clone");
            let (batch, sent) = (batch.clone(), sent.clone());
            // The write blocks once the server stops reading and the kernel buffers fill; the thread is left
            // blocked and ends when the test drops the socket.
            std::thread::spawn(move || {
                let mut at = 0;
                while at < batch.len() {
                    let end = (at + 64 * 1024).min(batch.len());
                    match w.write(&batch[at..end]) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            at += n;
                            sent.fetch_add(n, Ordering::Relaxed);
                        }
                    }
                }
            });
            s
        })
        .collect();

    // Meanwhile, a fresh client is served as usual, again and again.
    let mut other = Client::connect(srv.addr());
    for _ in 0..200 {
        query_route(&mut other);
    }
    // Let the readers' traffic settle: the server has stopped reading once sending stalls.
    let mut last = usize::MAX;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(200));
        let now = sent.load(Ordering::Relaxed);
        if now == last {
            break;
        }
        last = now;
    }
    for _ in 0..200 {
        query_route(&mut other);
    }
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < READERS * batch.len(), "the server read everything from readers that never read");

    // Per reader: 16 MiB of replies before the pause, plus the replies to the frames already read in that pass
    // (at most one 1 MiB read budget of input is decoded per pass), plus that input: 48 MiB is generous.
    let held = rss_bytes(srv.pid());
    let growth = held.saturating_sub(before);
    println!(
        "slow readers: {READERS} sent {:.1} MiB of requests in all; server RSS {:.1} → {:.1} MiB (load {})",
        mib(sent as u64),
        mib(before),
        mib(held),
        loadavg()
    );
    assert!(growth < READERS as u64 * (48 << 20), "RSS grew {:.0} MiB for {READERS} slow readers", mib(growth));
    assert_eq!(metric(http, OPEN), (READERS + 2) as f64);

    // Shut down, not only drop: the writer threads hold duplicates of these sockets. Closing with unread replies
    // resets the connection, which the server must notice although it no longer reads from it.
    for s in &readers {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    drop(readers);
    drop(other);
    assert_eq!(wait_for_metric(http, OPEN, 1.0, SETTLE), 1.0, "{}", srv.log());
}

/// Brokers connect, register three topics of their own and drop the connection, in three equal phases: afterwards
/// only the steady broker and its topics are left, every flapping broker was evicted by its connection's close, and
/// the server's memory after phase 3 is no more than after phase 1 plus a small allowance (a leak grows with work).
#[test]
fn flapping_brokers_leave_nothing_behind() {
    let _turn = crate::heavy();
    const THREADS: usize = 4;
    const PER_PHASE: usize = 400; // per thread
    let (srv, http) = start(&[]);
    let _steady = steady_broker(&srv);
    let addr = srv.addr();
    let phase = |p: usize| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..PER_PHASE {
                        let name = format!("flap-{p}-{t}-{i}");
                        let baddr = format!("127.0.{}.{}:10911", t + 1, i % 250 + 1);
                        let topics = [format!("{name}-a"), format!("{name}-b"), format!("{name}-c")];
                        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
                        let b = Broker { cluster: "FlapC", name: &name, addr: &baddr, id: 0 };
                        let mut c = Client::connect(addr);
                        let r = c.request(b.register(&topics, 1, 513));
                        assert_eq!(r.code, ResponseCode::SUCCESS, "{name}: {r:?}");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a flapping broker failed");
        }
        let brokers = wait_for_metric(http, "namesrv_brokers", 1.0, SETTLE);
        let topics = wait_for_metric(http, "namesrv_topics", 2.0, SETTLE);
        let open = wait_for_metric(http, OPEN, 1.0, SETTLE);
        assert_eq!((brokers, topics, open), (1.0, 2.0, 1.0), "after phase {p}\n{}", srv.log());
        rss_bytes(srv.pid())
    };
    let after1 = phase(1);
    let after2 = phase(2);
    let after3 = phase(3);
    let cycles = 3 * THREADS * PER_PHASE;
    let evicted = metric(http, "namesrv_evictions_total{cause=\"connection_closed\"}");
    assert_eq!(evicted, cycles as f64, "{}", srv.log());
    println!(
        "flapping: {cycles} connect-register-drop cycles; RSS after phases 1/2/3: {:.1} / {:.1} / {:.1} MiB (load {})",
        mib(after1),
        mib(after2),
        mib(after3),
        loadavg()
    );
    // A leaked connection (its buffers, once used, are ≥ 4 KiB resident) or broker per cycle would be ≥ 12 MiB over phases
    // 2 and 3; after equal work the allocator reuses what phase 1 freed.
    let growth = after3.saturating_sub(after1);
    assert!(growth < 8 << 20, "RSS grew {:.1} MiB between phase 1 and phase 3", mib(growth));
}
