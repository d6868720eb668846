//! End-to-end tests of the core over raw frames on 127.0.0.1: registration, routes in both dialects and header
//! encodings, eviction, pipelining, one-way requests, malformed frames, and the architecture's invariants.
//! Time is moved by hand (`ManualClock`). A check that something did not happen first waits for the event that
//! could have made it happen (the writer's counts in `WriterMetrics`, a later reply), never for a fixed time.

use crate::support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode, SerializeType};
use support::client::Client;
use support::eventually;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};

fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(tweak)
}

/// Waits for what the writer has done, by its counts.
trait Waits {
    fn wait_for_closes(&self, n: u64);
    fn wait_for_a_fresh_scan(&self);
}

impl Waits for InProc {
    /// Waits until the writer has applied `n` closes of broker connections in all, and checks it is not more. A
    /// count is published before it is counted, so every route read after this sees what those closes did.
    fn wait_for_closes(&self, n: u64) {
        let closes = &self.metrics().writer.connection_closes;
        wait_for_count(closes, n, "broker connection closes");
    }

    /// Waits for an expiry scan that read the clock after the caller last moved it. The scan counted next may have
    /// read the clock before that; the one after it began once that one was counted, i.e. after this call began.
    fn wait_for_a_fresh_scan(&self) {
        let scans = &self.metrics().writer.expiry_scans;
        let want = scans.load(Ordering::Acquire) + 2;
        assert!(eventually(LIMIT, || scans.load(Ordering::Acquire) >= want), "no expiry scan within {LIMIT:?}");
    }
}

/// Bounds a wait for something the server must do; only a failing test waits this long.
const LIMIT: Duration = Duration::from_secs(10);

/// Waits until `counter` reaches `n` and asserts it did not go past it.
fn wait_for_count(counter: &AtomicU64, n: u64, what: &str) {
    eventually(LIMIT, || counter.load(Ordering::Acquire) >= n);
    assert_eq!(counter.load(Ordering::Acquire), n, "{what}");
}

const MASTER: Broker = Broker { cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.1:10911", id: 0 };
const SLAVE: Broker = Broker { cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.2:10911", id: 1 };

fn route(c: &mut Client, topic: &str, version: i32, encoding: SerializeType) -> RemotingCommand {
    let mut cmd = new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    cmd.version = version;
    cmd.serialize_type = encoding;
    c.request(cmd)
}

fn body_text(r: &RemotingCommand) -> String {
    String::from_utf8(r.body.to_vec()).unwrap()
}

#[test]
fn register_route_reregister_unregister() {
    let fx = start(|_| {});
    let mut broker = fx.client();
    let mut client = fx.client();

    let r = broker.request(MASTER.register(&["TopicTest", "T2"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    assert_eq!(r.ext_fields.as_ref().map(|e| e.len()), Some(0), "a master gets extFields:{{}}");

    // Standard dialect for version >= 401: quoted brokerAddrs keys.
    let r = route(&mut client, "TopicTest", 513, SerializeType::Json);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(
        body_text(&r),
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    // Default dialect below 401: bare keys. And a ROCKETMQ-encoded request gets a ROCKETMQ-encoded answer.
    let r = route(&mut client, "TopicTest", 317, SerializeType::RocketMq);
    assert_eq!(r.serialize_type, SerializeType::RocketMq);
    assert!(body_text(&r).contains(r#""brokerAddrs":{0:"127.0.0.1:10911"}"#), "{}", body_text(&r));
    // acceptStandardJsonOnly switches an old client to the standard dialect.
    let mut cmd =
        new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T2").with_ext("acceptStandardJsonOnly", "true");
    cmd.version = 317;
    assert!(body_text(&client.request(cmd)).contains(r#"{"0":"#));

    // Unchanged re-registration publishes nothing.
    let generation = fx.snapshot().generation;
    let r = broker.request(MASTER.register(&["TopicTest", "T2"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(fx.snapshot().generation, generation);

    // Changed data version with a new topic set: the new topic appears.
    let r = broker.request(MASTER.register(&["TopicTest", "T2", "T3"], 2, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(route(&mut client, "T3", 513, SerializeType::Json).code, ResponseCode::SUCCESS);

    let r = broker.request(MASTER.unregister());
    assert_eq!(r.code, ResponseCode::SUCCESS);
    let r = route(&mut client, "TopicTest", 513, SerializeType::Json);
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST);
    assert_eq!(
        r.remark.as_deref(),
        Some("No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")
    );
    let r = client.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC));
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST);
    assert!(r.remark.unwrap().contains("for the topic: null\n"));
}

#[test]
fn slave_registration_gets_master_and_ha_address() {
    let fx = start(|_| {});
    let mut m = fx.client();
    let mut s = fx.client();
    assert_eq!(m.request(MASTER.register(&["T", "TBW102"], 1, 513)).code, ResponseCode::SUCCESS);
    let r = s.request(SLAVE.register(&["T", "TBW102"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(r.ext("masterAddr"), Some("127.0.0.1:10911"));
    assert_eq!(r.ext("haServerAddr"), Some("127.0.0.1:10912"));
    let r = route(&mut m, "T", 513, SerializeType::Json);
    assert!(body_text(&r).contains(r#"{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}"#), "{}", body_text(&r));
}

#[test]
fn connection_close_evicts_only_the_current_connection() {
    let fx = start(|_| {});
    let mut client = fx.client();
    let mut old = fx.client();
    assert_eq!(old.request(MASTER.register(&["T", "TBW102"], 1, 513)).code, ResponseCode::SUCCESS);
    let mut new = fx.client();
    assert_eq!(new.request(MASTER.register(&["T", "TBW102"], 1, 513)).code, ResponseCode::SUCCESS);
    drop(old);
    // The old connection no longer owns the live entry: once its close is applied, the broker is still there.
    fx.wait_for_closes(1);
    assert_eq!(
        route(&mut client, "T", 513, SerializeType::Json).code,
        ResponseCode::SUCCESS,
        "the close of a connection the broker left evicted it"
    );
    drop(new);
    fx.wait_for_closes(2);
    assert_eq!(route(&mut client, "T", 513, SerializeType::Json).code, ResponseCode::TOPIC_NOT_EXIST);
}

/// A broker whose last request and close arrive together (one readiness event, or the close just after it) is
/// evicted: the reactor may end a read early on a short read, but never misses a close. The idle timeout (120 s)
/// cannot be what evicts them here.
#[test]
fn a_close_right_behind_a_request_is_noticed() {
    let fx = start(|_| {});
    let mut client = fx.client();
    let names: Vec<String> = (0..20).map(|i| format!("broker-{i}")).collect();
    let addrs: Vec<String> = (0..20).map(|i| format!("127.0.0.1:{}", 20000 + i)).collect();
    for (i, name) in names.iter().enumerate() {
        let broker = Broker { cluster: "C", name, addr: &addrs[i], id: 0 };
        let topic = format!("T{i}");
        let mut c = fx.client();
        let r = c.request(broker.register(&[&topic, "TBW102"], 1, 513));
        assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
        // A one-way request and the close, back to back (one-way: no reply, so no reset comes back to reveal it).
        let mut last = new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic.as_str());
        last.flag |= 2;
        c.send_raw(&encode(&last));
        drop(c);
    }
    for i in 0..20 {
        let topic = format!("T{i}");
        assert!(
            eventually(Duration::from_secs(5), || route(&mut client, &topic, 513, SerializeType::Json).code
                == ResponseCode::TOPIC_NOT_EXIST),
            "broker-{i} was not evicted"
        );
    }
}

#[test]
fn silent_broker_expires_after_its_timeout() {
    let fx = start(|_| {});
    let mut broker = fx.client();
    let mut client = fx.client();
    let mut cmd = MASTER.register(&["T", "TBW102"], 1, 513);
    cmd = cmd.with_ext("heartbeatTimeoutMillis", "10000");
    assert_eq!(broker.request(cmd).code, ResponseCode::SUCCESS);
    fx.clock.advance_ms(9_000);
    fx.wait_for_a_fresh_scan();
    assert_eq!(
        route(&mut client, "T", 513, SerializeType::Json).code,
        ResponseCode::SUCCESS,
        "expired after 9 s of a 10 s timeout"
    );
    // A heartbeat refreshes the entry.
    let hb = broker.request(
        new_cmd(RequestCode::BROKER_HEARTBEAT)
            .with_ext("clusterName", MASTER.cluster)
            .with_ext("brokerAddr", MASTER.addr),
    );
    assert_eq!(hb.code, ResponseCode::SUCCESS);
    fx.clock.advance_ms(9_000);
    fx.wait_for_a_fresh_scan();
    assert_eq!(
        route(&mut client, "T", 513, SerializeType::Json).code,
        ResponseCode::SUCCESS,
        "expired 9 s after a heartbeat, 18 s after registering"
    );
    fx.clock.advance_ms(2_000);
    fx.wait_for_a_fresh_scan();
    assert_eq!(route(&mut client, "T", 513, SerializeType::Json).code, ResponseCode::TOPIC_NOT_EXIST);
    // Java closes the expired broker's channel too.
    broker.expect_closed(Duration::from_secs(5));
}

#[test]
fn pipelined_requests_are_answered_by_opaque_and_oneway_gets_nothing() {
    let fx = start(|_| {});
    let mut broker = fx.client();
    assert_eq!(broker.request(MASTER.register(&["T", "TBW102"], 1, 513)).code, ResponseCode::SUCCESS);
    let mut c = fx.client();
    let mut expected = Vec::new();
    let mut bytes = bytes::BytesMut::new();
    for i in 0..50 {
        let mut cmd = if i % 3 == 0 {
            new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO)
        } else {
            new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", if i % 2 == 0 { "T" } else { "missing" })
        };
        if i % 5 == 0 {
            cmd.flag |= namesrv::test_support::protocol::command::FLAG_ONEWAY;
        } else {
            expected.push((cmd.opaque, cmd.code, i % 3 != 0 && i % 2 != 0));
        }
        namesrv::protocol::frame::encode(&cmd, &mut bytes);
    }
    c.send_raw(&bytes);
    let mut got = std::collections::HashMap::new();
    while got.len() < expected.len() {
        let r = c.recv(Duration::from_secs(5)).expect("reply");
        assert!(got.insert(r.opaque, r).is_none(), "one reply per opaque");
    }
    for (opaque, code, missing) in expected {
        let r = &got[&opaque];
        let want = if missing { ResponseCode::TOPIC_NOT_EXIST } else { ResponseCode::SUCCESS };
        assert_eq!(r.code, want, "opaque {opaque} code {code}");
    }
    // Requests are answered in order, so had a one-way request been answered, its reply would come before the
    // next request's: the next frame must be that reply.
    let next = new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO);
    c.send_raw(&encode(&next));
    let r = c.recv(Duration::from_secs(5)).expect("reply");
    assert_eq!((r.opaque, r.code), (next.opaque, ResponseCode::SUCCESS), "a one-way request was answered: {r:?}");
    // An unknown one-way code gets nothing either; the same as a normal request gets code 3.
    let mut cmd = new_cmd(9999);
    cmd.flag |= namesrv::test_support::protocol::command::FLAG_ONEWAY;
    c.send_raw(&encode(&cmd));
    let r = c.request(new_cmd(9999));
    assert!(c.strays.is_empty(), "the one-way request was answered: {:?}", c.strays);
    assert_eq!(r.code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
    assert_eq!(r.remark.as_deref(), Some(" request type 9999 not supported"));
    assert_eq!(r.flag & 1, 1);
}

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut b = bytes::BytesMut::new();
    namesrv::protocol::frame::encode(cmd, &mut b);
    b.to_vec()
}

#[test]
fn malformed_frames_close_only_their_connection() {
    let fx = start(|c| c.max_frame_length = 1024 * 1024);
    let mut healthy = fx.client();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("zero length", vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("over the limit", vec![0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("header beyond frame", [&[0, 0, 0, 8, 0, 0, 0, 100][..], b"{}{}"].concat()),
        ("header type 2", [&[0, 0, 0, 6, 2, 0, 0, 2][..], b"{}"].concat()),
        ("bad JSON", [&[0, 0, 0, 13, 0, 0, 0, 9][..], b"{\"code\":}"].concat()),
        ("JSON null", [&[0, 0, 0, 8, 0, 0, 0, 4][..], b"null"].concat()),
        ("truncated binary header", [&[0, 0, 0, 9, 1, 0, 0, 5][..], &[0, 105, 0, 1, 0xdf][..]].concat()),
    ];
    for (name, bytes) in cases {
        let mut bad = fx.client();
        bad.send_raw(&bytes);
        bad.expect_closed(Duration::from_secs(5));
        let r = healthy.request(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO));
        assert_eq!(r.code, ResponseCode::SUCCESS, "after {name}");
    }
}

#[test]
fn publish_before_reply_across_reactors() {
    let fx = start(|_| {});
    let mut broker = fx.client();
    let mut readers: Vec<Client> = (0..4).map(|_| fx.client()).collect();
    for i in 0..40 {
        let topic = format!("T{i}");
        // Two topics at least: a first registration with exactly one topic is refused (Java's rule).
        let topics: Vec<String> = (0..=i + 1).map(|j| format!("T{j}")).collect();
        let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
        let r = broker.request(MASTER.register(&refs, i64::from(i) + 1, 513));
        assert_eq!(r.code, ResponseCode::SUCCESS);
        // Whatever reactor serves the reader, the route must already be there.
        for reader in readers.iter_mut() {
            assert_eq!(route(reader, &topic, 513, SerializeType::Json).code, ResponseCode::SUCCESS, "{topic}");
        }
    }
}

#[test]
fn heartbeat_and_query_data_version_do_not_publish() {
    let fx = start(|_| {});
    let mut b = fx.client();
    assert_eq!(b.request(MASTER.register(&["T", "TBW102"], 7, 513)).code, ResponseCode::SUCCESS);
    let generation = fx.snapshot().generation;
    let r = b.request(
        new_cmd(RequestCode::BROKER_HEARTBEAT)
            .with_ext("clusterName", MASTER.cluster)
            .with_ext("brokerAddr", MASTER.addr),
    );
    assert_eq!(r.code, ResponseCode::SUCCESS);
    let dv = br#"{"counter":7,"stateVersion":0,"timestamp":1700000000000}"#;
    let q = |dv: &[u8]| {
        new_cmd(RequestCode::QUERY_DATA_VERSION)
            .with_ext("clusterName", MASTER.cluster)
            .with_ext("brokerAddr", MASTER.addr)
            .with_ext("brokerName", MASTER.name)
            .with_ext("brokerId", "0")
            .with_body(dv.to_vec())
    };
    let r = b.request(q(dv));
    assert_eq!(r.ext("changed"), Some("false"));
    assert_eq!(body_text(&r), std::str::from_utf8(dv).unwrap());
    let r = b.request(q(br#"{"counter":8,"stateVersion":0,"timestamp":1700000000000}"#));
    assert_eq!(r.ext("changed"), Some("true"));
    assert_eq!(fx.snapshot().generation, generation);
}

#[test]
fn min_broker_id_change_is_notified_one_way_to_the_other_members() {
    let fx = start(|c| c.notify_min_broker_id_changed = true);
    // A "broker" that only listens: the slave's address, so the notification comes to us.
    let slave_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slave_addr = slave_listener.local_addr().unwrap().to_string();
    let master_addr = "127.0.0.1:10911";
    let slave = Broker { cluster: "C", name: "g", addr: &slave_addr, id: 1 };
    let master = Broker { cluster: "C", name: "g", addr: master_addr, id: 0 };
    let mut c = fx.client();
    assert_eq!(c.request(slave.register(&["T", "U"], 1, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(c.request(master.register(&["T", "U"], 1, 513)).code, ResponseCode::SUCCESS);

    slave_listener.set_nonblocking(false).unwrap();
    let (stream, _) = slave_listener.accept().expect("the name server connects to the slave");
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = support::client::Client::from_stream(stream);
    let n = reader.recv(Duration::from_secs(5)).expect("a 905 frame");
    assert_eq!(n.code, RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE);
    assert!(n.is_oneway() && !n.is_response());
    assert_eq!(n.ext("minBrokerId"), Some("0"));
    assert_eq!(n.ext("minBrokerAddr"), Some(master_addr));
    assert_eq!(n.ext("haBrokerAddr"), Some("127.0.0.1:10912"));
    assert_eq!(n.ext("offlineBrokerAddr"), None);
}

/// Invariant 3: a reactor holds a snapshot only while it handles one request. After a publish, once every reactor
/// has handled another request, nothing keeps the old snapshot alive.
#[test]
fn no_reactor_keeps_an_old_snapshot() {
    let fx = start(|_| {});
    let mut broker = fx.client();
    let mut readers: Vec<Client> = (0..4).map(|_| fx.client()).collect();
    assert_eq!(broker.request(MASTER.register(&["T", "U"], 1, 513)).code, ResponseCode::SUCCESS);
    for r in readers.iter_mut() {
        assert_eq!(route(r, "T", 513, SerializeType::Json).code, ResponseCode::SUCCESS);
    }
    let old = Arc::downgrade(&fx.snapshot());
    assert_eq!(broker.request(MASTER.register(&["T", "U", "V"], 2, 513)).code, ResponseCode::SUCCESS);
    for r in readers.iter_mut() {
        assert_eq!(route(r, "V", 513, SerializeType::Json).code, ResponseCode::SUCCESS);
    }
    assert!(eventually(Duration::from_secs(2), || old.upgrade().is_none()), "the old snapshot is still referenced");
}

/// When the decoder's queue is full (`decoderQueueBytes`, here one body at a time), a large registration waits on
/// its connection, unread behind it, for its turn: a cluster registering all at once after a restart gets in
/// without SYSTEM_BUSY, which would keep a broker out of the routes until its next round (30 s).
#[test]
fn registrations_all_at_once_wait_for_the_decoder_instead_of_being_refused() {
    let fx = start(|c| {
        c.decoder_threshold_bytes = 1;
        c.decoder_queue_bytes = 1;
    });
    let topics: Vec<String> = (0..2000).map(|i| format!("AtOnce-{i:04}")).collect();
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let names: Vec<(String, String)> = (0..16).map(|i| (format!("at-once-{i}"), format!("10.9.0.{i}:10911"))).collect();
    let mut brokers: Vec<(Client, i32)> = names
        .iter()
        .map(|(name, addr)| {
            let cmd = Broker { cluster: "AtOnce", name, addr, id: 0 }.register(&topics, 1, 513);
            let mut frame = bytes::BytesMut::new();
            namesrv::protocol::frame::encode(&cmd, &mut frame);
            (fx.client(), frame, cmd.opaque)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(mut c, frame, opaque)| {
            c.send_raw(&frame);
            (c, opaque)
        })
        .collect();
    for (i, (c, opaque)) in brokers.iter_mut().enumerate() {
        let reply = c.recv(Duration::from_secs(10)).expect("a reply");
        assert_eq!(
            (reply.opaque, reply.code, reply.remark.as_deref()),
            (*opaque, ResponseCode::SUCCESS, None),
            "broker {i}"
        );
    }
    let mut client = fx.client();
    let route = client.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "AtOnce-1999"));
    assert_eq!(route.code, ResponseCode::SUCCESS);
    assert_eq!(String::from_utf8_lossy(&route.body).matches("\"brokerName\":\"at-once-").count(), 2 * 16);
}

/// Registrations with large bodies are decoded on the decoder thread (`decoderThresholdBytes`; here every one).
/// A connection's later requests wait for them, so pipelined requests are answered in order and see the
/// registration; a broker that closes while its registration is on the decoder is evicted after it is applied,
/// never before (which would leave a dead broker registered until it expires).
#[test]
fn deferred_registrations_keep_the_connection_order() {
    let fx = start(|c| c.decoder_threshold_bytes = 1);
    let mut broker = fx.client();
    let mut frames = bytes::BytesMut::new();
    let mut opaques = Vec::new();
    for (i, mut cmd) in [
        MASTER.register(&["Deferred", "D2"], 1, 513),
        new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "Deferred"),
    ]
    .into_iter()
    .enumerate()
    {
        cmd.opaque = 1000 + i as i32;
        opaques.push(cmd.opaque);
        namesrv::protocol::frame::encode(&cmd, &mut frames);
    }
    broker.send_raw(&frames);
    // The route query was read together with the registration, yet is answered after it, and sees it.
    let replies: Vec<RemotingCommand> = (0..2).map(|_| broker.recv(Duration::from_secs(10)).expect("reply")).collect();
    assert_eq!(replies.iter().map(|r| r.opaque).collect::<Vec<_>>(), opaques);
    assert_eq!(replies.iter().map(|r| r.code).collect::<Vec<_>>(), [ResponseCode::SUCCESS, ResponseCode::SUCCESS]);
    assert_eq!(broker.request(MASTER.unregister()).code, ResponseCode::SUCCESS);

    // Register and hang up at once, many times: the close must always win. Each round waits until both the
    // registration and the close are applied, in whatever order the server applied them, then looks.
    let mut client = fx.client();
    let writer = &fx.metrics().writer;
    for round in 0..20 {
        let registrations = writer.registrations.load(Ordering::Acquire);
        let closes = writer.connection_closes.load(Ordering::Acquire);
        let mut b = fx.client();
        let mut frame = bytes::BytesMut::new();
        namesrv::protocol::frame::encode(&MASTER.register(&["Deferred", "D2"], round, 513), &mut frame);
        b.send_raw(&frame);
        drop(b);
        wait_for_count(&writer.registrations, registrations + 1, "registrations");
        wait_for_count(&writer.connection_closes, closes + 1, "broker connection closes");
        assert_eq!(
            route(&mut client, "Deferred", 513, SerializeType::Json).code,
            ResponseCode::TOPIC_NOT_EXIST,
            "round {round}: the broker of a closed connection is still registered"
        );
    }
}
