//! Resource limits and the admin allow-list (issue #7 items 2 and 4; docs/decisions/0006), end to end over raw
//! frames on 127.0.0.1. Each test drives a peer over one limit and asserts both that the peer is told (code and
//! remark) or disconnected, and that another client keeps being served. Time is moved by hand (`ManualClock`).

use crate::support;

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use namesrv::protocol::{frame, RemotingCommand, RequestCode as C, ResponseCode};
use namesrv::test_support::limit::Limit;
use support::client::Client;
use support::eventually;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};

const BROKER: Broker = Broker { cluster: "LimitCluster", name: "limit-broker", addr: "127.0.0.1:10911", id: 0 };
/// A 5.x broker's request version.
const V5: i32 = 479;
const WAIT: Duration = Duration::from_secs(10);

fn topics(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:06}")).collect()
}

fn register(b: &Broker, names: &[String]) -> RemotingCommand {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    b.register(&refs, 1, V5)
}

fn route(c: &mut Client, topic: &str) -> RemotingCommand {
    c.request(new_cmd(C::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic))
}

/// Asserts `c` is still served: a cluster-info read succeeds.
fn assert_served(c: &mut Client, after: &str) {
    let r = c.request(new_cmd(C::GET_BROKER_CLUSTER_INFO));
    assert_eq!(r.code, ResponseCode::SUCCESS, "a healthy client is served after {after}");
}

/// Lines at WARN and above with `needle`, of every server in this test binary, captured from the first call on (a
/// global subscriber, `crate::captured`).
fn log_lines_with(needle: &str) -> usize {
    let text = String::from_utf8_lossy(&crate::captured().warn.lock().unwrap()).into_owned();
    text.lines().filter(|l| l.contains(needle)).count()
}

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut b = bytes::BytesMut::new();
    frame::encode(cmd, &mut b);
    b.to_vec()
}

#[test]
fn frame_over_max_frame_length_closes_only_that_connection() {
    let _turn = crate::shared();
    let fx = InProc::start(|c| c.max_frame_length = 64 * 1024);
    let mut healthy = fx.client();
    let mut small = fx.client();
    let fits = register(&BROKER, &topics("fits", 300));
    assert!(encode(&fits).len() < 64 * 1024);
    assert_eq!(small.request(fits).code, ResponseCode::SUCCESS);

    let mut big = fx.client();
    let too_big = encode(&register(&BROKER, &topics("too-big", 3000)));
    assert!(too_big.len() > 64 * 1024);
    big.send_raw(&too_big[..1024]); // the length prefix alone condemns it; the rest need not arrive
    big.expect_closed(WAIT);
    assert_served(&mut healthy, "an oversized frame");
    assert_eq!(route(&mut small, "fits-000000").code, ResponseCode::SUCCESS);
}

/// A zlib stream that inflates to `1 + 258 * matches + 3` zero bytes: a literal 0, `matches` copies of (length
/// 258, distance 1), three more literals, in one fixed-Huffman block. 13 bits per 258 bytes is the densest deflate
/// allows, so the bomb is built in a moment instead of compressing a gigabyte.
fn zlib_zeros(matches: usize) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }
    impl Bits {
        /// Deflate packs bits least significant first...
        fn put(&mut self, value: u64, count: u32) {
            self.acc |= value << self.n;
            self.n += count;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        /// ...but Huffman codes most significant bit first.
        fn code(&mut self, code: u32, len: u32) {
            self.put(u64::from(code.reverse_bits() >> (32 - len)), len);
        }
    }
    let mut b = Bits { out: Vec::with_capacity(matches * 13 / 8 + 16), acc: 0, n: 0 };
    b.out.extend_from_slice(&[0x78, 0x01]); // zlib header: deflate, 32 KiB window
    b.put(1, 1); // BFINAL
    b.put(1, 2); // BTYPE 01: fixed Huffman codes
    b.code(0x30, 8); // literal 0
    for _ in 0..matches {
        b.code(0xC5, 8); // length code 285: 258 bytes
        b.code(0, 5); // distance code 0: 1 byte back
    }
    for _ in 0..3 {
        b.code(0x30, 8);
    }
    b.code(0, 7); // end of block
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    // Adler-32 of n zeros: a stays 1, b adds it n times.
    let total = (1 + 258 * matches + 3) as u64;
    let adler = ((total % 65521) << 16) | 1;
    b.out.extend_from_slice(&(adler as u32).to_be_bytes());
    b.out
}

#[test]
fn zlib_zeros_is_a_valid_stream_of_zeros() {
    let _turn = crate::shared();
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib_zeros(1000)[..]).read_to_end(&mut out).expect("valid zlib");
    assert_eq!(out.len(), 1 + 258 * 1000 + 3);
    assert!(out.iter().all(|b| *b == 0));
}

/// Peak resident memory of this process (the in-process server's included), from /proc.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).expect("VmHWM value") * 1024
}

#[test]
fn zlib_bomb_registration_is_refused_at_max_inflated_body() {
    let _turn = crate::shared();
    log_lines_with(""); // capture from here on
    let fx = InProc::start(|_| {}); // the default maxInflatedBody, 64 MiB
    let mut healthy = fx.client();
    let mut bomber = fx.client();
    let bomb = zlib_zeros(4_161_790); // exactly 1 GiB of zeros in 6.8 MB
    assert!(bomb.len() < 7 * 1024 * 1024);
    let crc = namesrv::handlers::broker::crc32_masked(&bomb).to_string();
    for _ in 0..2 {
        let req =
            register(&BROKER, &[]).with_ext("compressed", "true").with_ext("bodyCrc32", &crc).with_body(bomb.clone());
        let r = bomber.request(req);
        assert_eq!(r.code, ResponseCode::SYSTEM_ERROR);
        assert_eq!(r.remark.as_deref(), Some("[LIMIT] decompressed body exceeds maxInflatedBody=67108864 bytes"));
    }
    // Inflating it would have taken a gigabyte; the whole test process stayed far below.
    let peak = peak_rss_bytes();
    assert!(peak < 512 * 1024 * 1024, "peak RSS {peak} bytes");
    assert_eq!(fx.metrics().limit_hits(Limit::InflatedBody), 2);
    assert_eq!(log_lines_with("inflated_body"), 1, "logged once per connection, counted each time");
    assert_eq!(route(&mut bomber, "any").code, ResponseCode::TOPIC_NOT_EXIST, "the bomber's connection still works");
    assert_eq!(fx.snapshot().routes.topic_count(), 0, "nothing was applied");
    assert_served(&mut healthy, "a zlib bomb");
}

#[test]
fn registration_over_max_topics_is_refused_whole() {
    let _turn = crate::shared();
    let fx = InProc::start(|c| c.max_topics_per_registration = 100);
    let mut healthy = fx.client();
    let mut broker = fx.client();
    let r = broker.request(register(&BROKER, &topics("over", 101)));
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR);
    let remark = "[LIMIT] registration of broker limit-broker carries 101 topics, more than \
                  maxTopicsPerRegistration=100; nothing applied";
    assert_eq!(r.remark.as_deref(), Some(remark));
    assert_eq!(route(&mut healthy, "over-000000").code, ResponseCode::TOPIC_NOT_EXIST, "nothing applied");
    assert_eq!(fx.metrics().limit_hits(Limit::TopicsPerRegistration), 1);

    assert_eq!(broker.request(register(&BROKER, &topics("at", 100))).code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut healthy, "at-000099").code, ResponseCode::SUCCESS, "exactly the limit is fine");
}

#[test]
fn connections_beyond_max_connections_are_closed_and_counted() {
    let _turn = crate::shared();
    log_lines_with(""); // capture from here on
    let fx = InProc::start(|c| c.max_connections = 2);
    let mut a = fx.client();
    let mut b = fx.client();
    assert_served(&mut a, "opening");
    assert_served(&mut b, "opening");
    for _ in 0..3 {
        fx.client().expect_closed(WAIT);
    }
    assert_eq!(fx.metrics().limit_hits(Limit::Connections), 3);
    // One line per burst and reactor (two here), not one per connection.
    let lines = log_lines_with("maxConnections reached");
    assert!((1..=2).contains(&lines), "{lines} log lines for 3 refused connections");
    assert_served(&mut a, "refused connections");
    drop(a);
    // The server notices the close asynchronously; then a new connection has room again.
    let admitted = eventually(WAIT, || {
        let mut c = fx.client();
        c.try_request(new_cmd(C::GET_BROKER_CLUSTER_INFO), Duration::from_secs(2)).is_ok_and(|r| r.code == 0)
    });
    assert!(admitted, "a connection is admitted once one has closed");
    assert_served(&mut b, "the limit was reached again");
}

/// A client socket with a small receive window, so replies pile up on the server instead of in our kernel.
fn small_window_client(addr: std::net::SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    socket.connect_timeout(&addr.into(), WAIT).expect("connect");
    socket.into()
}

#[test]
fn peer_that_does_not_read_is_paused_then_closed() {
    let _turn = crate::shared();
    log_lines_with(""); // capture from here on
    let fx = InProc::start(|c| {
        c.max_pending_write_bytes = 256 * 1024;
        c.slow_reader_close_seconds = 1;
    });
    let mut healthy = fx.client();
    let mut broker = fx.client();
    assert_eq!(broker.request(register(&BROKER, &topics("slow-reader-topic", 4000))).code, 0);
    let list = healthy.request(new_cmd(C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER));
    let reply_len = encode(&list).len();
    assert!(reply_len > 64 * 1024, "{reply_len}");

    // 300 pipelined requests ask for ~30 MB of replies, far more than both kernels' socket buffers hold.
    let mut slow = small_window_client(fx.local_addr());
    let requests: Vec<u8> = (0..300).flat_map(|_| encode(&new_cmd(C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER))).collect();
    std::io::Write::write_all(&mut slow, &requests).expect("send requests");
    let metrics = fx.metrics();
    assert!(eventually(WAIT, || metrics.limit_hits(Limit::PendingWritePaused) >= 1), "the slow reader is paused");
    assert_eq!(log_lines_with("does not read its replies"), 1, "one connection, one line");
    assert_served(&mut healthy, "a peer stopped reading");
    assert_eq!(metrics.limit_hits(Limit::PendingWriteClosed), 0, "not closed before slowReaderCloseSeconds");

    fx.clock.advance_ms(2_000);
    assert!(eventually(WAIT, || metrics.limit_hits(Limit::PendingWriteClosed) == 1), "closed after the grace");
    // What it gets is what was in flight, then the close: nowhere near the 300 replies it asked for.
    let mut got = 0usize;
    let mut chunk = vec![0u8; 64 * 1024];
    slow.set_read_timeout(Some(WAIT)).unwrap();
    loop {
        match slow.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read from the server: {e} after {got} bytes"),
        }
    }
    assert!(got < 300 * reply_len / 2, "got {got} bytes of {}", 300 * reply_len);
    // The server stopped decoding the requests it had already read, too: most were never answered (queued).
    let answered = topic_list_replies(&fx);
    assert!(answered < 150, "{answered} topic lists answered");
    assert_served(&mut healthy, "a slow reader was closed");
    assert_eq!(broker.request(new_cmd(C::GET_BROKER_CLUSTER_INFO)).code, 0);
}

/// GET_ALL_TOPIC_LIST requests answered so far, from /metrics' text.
fn topic_list_replies(fx: &InProc) -> u64 {
    sample(fx, "namesrv_requests_total{code=\"GET_ALL_TOPIC_LIST_FROM_NAMESERVER\",result=\"success\"}")
}

/// The value of one sample of /metrics' text (`name` with its labels), 0 if there is none.
fn sample(fx: &InProc, name: &str) -> u64 {
    let text = fx.metrics().render(&fx.snapshot(), 0);
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The idle timeout closes a connection for its silence alone: the clock moves past the idle limit (5 s) but
/// nowhere near the broker's expiry (120 s), so nothing but the idle check can close the broker's connection; a
/// connection that never registered a broker is closed too; and the broker goes as a closed connection's, not as
/// an expired one.
#[test]
fn idle_connection_is_closed_and_its_broker_evicted() {
    let _turn = crate::shared();
    let fx = InProc::start(|c| c.server_channel_max_idle_time_seconds = 5);
    let mut broker = fx.client();
    let r = broker.request(register(&BROKER, &topics("idle", 2)));
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let mut quiet = fx.client();
    assert_served(&mut quiet, "connecting");
    // Each connection was last stamped active with the clock a reactor read before writing the reply we got: the
    // start. One step of 6 s makes both idle.
    fx.clock.advance_ms(6_000);
    broker.expect_closed(WAIT);
    quiet.expect_closed(WAIT);
    // The broker's close reaches the writer asynchronously; counted once its eviction is published.
    let closes = &fx.metrics().writer.connection_closes;
    assert!(eventually(WAIT, || closes.load(Ordering::Acquire) >= 1), "the broker's close is applied");
    let mut fresh = fx.client();
    assert_eq!(
        route(&mut fresh, "idle-000000").code,
        ResponseCode::TOPIC_NOT_EXIST,
        "the idle broker's routes are gone"
    );
    assert_eq!(sample(&fx, "namesrv_evictions_total{cause=\"connection_closed\"}"), 1);
    assert_eq!(sample(&fx, "namesrv_evictions_total{cause=\"expired\"}"), 0);
    assert_served(&mut fresh, "an idle close");
}

/// Every state-changing request code, with enough fields that it would succeed if allowed.
fn writes() -> Vec<RemotingCommand> {
    let kv = |code| new_cmd(code).with_ext("namespace", "ns").with_ext("key", "k").with_ext("value", "v");
    let broker = |code| {
        new_cmd(code)
            .with_ext("clusterName", BROKER.cluster)
            .with_ext("brokerAddr", BROKER.addr)
            .with_ext("brokerName", BROKER.name)
            .with_ext("brokerId", "0")
    };
    vec![
        kv(C::PUT_KV_CONFIG),
        kv(C::DELETE_KV_CONFIG),
        register(&BROKER, &topics("allow", 2)),
        broker(C::UNREGISTER_BROKER),
        broker(C::BROKER_HEARTBEAT),
        broker(C::QUERY_DATA_VERSION),
        new_cmd(C::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", BROKER.name),
        new_cmd(C::ADD_WRITE_PERM_OF_BROKER).with_ext("brokerName", BROKER.name),
        new_cmd(C::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "allow-000000"),
        new_cmd(C::REGISTER_TOPIC_IN_NAMESRV).with_ext("topic", "t"),
        new_cmd(C::UPDATE_NAMESRV_CONFIG).with_body(&b"orderMessageEnable=true"[..]),
    ]
}

#[test]
fn allow_list_refuses_writes_from_unlisted_peers_and_serves_reads() {
    let _turn = crate::shared();
    log_lines_with(""); // capture from here on
    let fx = InProc::start(|c| c.admin_allow_list = list("10.0.0.0/8"));
    let mut c = fx.client();
    let all = writes();
    let n = all.len() as u64;
    for req in all {
        let code = req.code;
        let r = c.request(req);
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "code {code}");
        let name = namesrv::test_support::protocol::code::request_name(code);
        let remark = format!("[ADMIN_ALLOW_LIST] 127.0.0.1 may not send {name} ({code}); allowed: 10.0.0.0/8");
        assert_eq!(r.remark.as_deref(), Some(remark.as_str()));
    }
    // A refused one-way write gets no bytes: the next reply on the connection is the next request's.
    c.oneway(kv_put());
    assert_eq!(c.request(new_cmd(C::GET_NAMESRV_CONFIG)).code, ResponseCode::SUCCESS);
    assert!(c.strays.is_empty(), "{:?}", c.strays);
    assert_eq!(fx.metrics().limit_hits(Limit::AdminAllowList), n + 1);
    assert_eq!(log_lines_with("admin_allow_list"), 1, "logged once per connection, counted each time");
    // Reads stay open, and nothing was applied.
    let get_kv = new_cmd(C::GET_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k");
    assert_eq!(c.request(get_kv).code, ResponseCode::QUERY_NOT_FOUND);
    assert_eq!(route(&mut c, "allow-000000").code, ResponseCode::TOPIC_NOT_EXIST);
    assert_served(&mut c, "refused writes");
    assert!(!fx.snapshot().config.order_message_enable);
}

fn kv_put() -> RemotingCommand {
    new_cmd(C::PUT_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k").with_ext("value", "v")
}

#[test]
fn allow_list_with_loopback_accepts_writes_and_cannot_be_changed_by_request() {
    let _turn = crate::shared();
    let fx = InProc::start(|c| c.admin_allow_list = list("10.0.0.0/8, 127.0.0.0/8"));
    let mut c = fx.client();
    assert_eq!(c.request(register(&BROKER, &topics("allowed", 2))).code, ResponseCode::SUCCESS);
    assert_eq!(c.request(kv_put()).code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut c, "allowed-000000").code, ResponseCode::SUCCESS);
    // UPDATE_NAMESRV_CONFIG may not open (or close) the list: it is not runtime-updatable.
    for body in ["adminAllowList=", "adminAllowList=0.0.0.0/0", "orderMessageEnable=true\nadminAllowList=::/0"] {
        let r = c.request(new_cmd(C::UPDATE_NAMESRV_CONFIG).with_body(body.as_bytes().to_vec()));
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{body}");
        let remark = "Can not update config in black list. Not changeable at runtime: adminAllowList";
        assert_eq!(r.remark.as_deref(), Some(remark));
    }
    let config = fx.snapshot().config.clone();
    assert_eq!(config.admin_allow_list.to_string(), "10.0.0.0/8,127.0.0.0/8");
    assert!(!config.order_message_enable, "a refused update applies nothing");
}

/// A valid allow-list from text.
fn list(text: &str) -> namesrv::test_support::allow_list::AllowList {
    namesrv::test_support::allow_list::AllowList::parse(text).expect("valid allow-list")
}
