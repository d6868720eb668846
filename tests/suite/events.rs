//! The change feed end to end: `/events` as an SSE client sees it while brokers, topics, KV and config change
//! over the remoting port; resuming with `Last-Event-ID`; what a stream that falls behind is told; and that a
//! consumer that never reads does not hold up the writer.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::{RequestCode, ResponseCode};
use serde_json::Value;
use support::client::Client;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};
use support::sse::Stream;

fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        tweak(c);
    })
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array().expect("a list").iter().map(|n| n.as_str().expect("a name")).collect()
}

#[test]
fn a_brokers_life_and_the_admin_changes_in_order() {
    let srv = start(|_| {});
    let http = srv.http_addr().expect("HTTP on");
    let mut feed = Stream::open(http, "/events", None);
    let b = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    let mut conn = Client::connect(srv.local_addr());
    assert_eq!(conn.request(b.register(&["A", "B"], 1, 513)).code, ResponseCode::SUCCESS);

    let e = feed.next();
    assert_eq!(e.event, "brokerRegistered");
    let d = &e.data;
    assert_eq!(
        (d["cluster"].as_str(), d["brokerName"].as_str(), d["brokerId"].as_i64()),
        (Some("C1"), Some("b1"), Some(0))
    );
    assert_eq!((d["addr"].as_str(), d["first"].as_bool()), (Some("127.0.0.1:10911"), Some(true)));
    assert_eq!(names(&d["topicsAdded"]), ["A", "B"]);
    assert_eq!(d["topicsAddedCount"], 2);
    assert_eq!(d["type"], "brokerRegistered");
    let first_seq = d["seq"].as_u64().unwrap();
    let boot = e.id.as_deref().unwrap().split_once('-').unwrap().0.to_string();
    let e = feed.next();
    assert_eq!((e.event.as_str(), names(&e.data["topics"])), ("topicsCreated", vec!["A", "B"]));
    assert_eq!(e.data["seq"].as_u64(), Some(first_seq + 1));

    // The same topics again (what every broker sends every 30 s): nothing to report. Then a topic added.
    assert_eq!(conn.request(b.register(&["A", "B"], 2, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(conn.request(b.register(&["A", "B", "C"], 3, 513)).code, ResponseCode::SUCCESS);
    let e = feed.next();
    assert_eq!(e.event, "brokerRegistered");
    assert_eq!((e.data["first"].as_bool(), names(&e.data["topicsAdded"])), (Some(false), vec!["C"]));
    assert_eq!(feed.next().event, "topicsCreated");

    // Admin writes.
    let mut admin = Client::connect(srv.local_addr());
    let ok = |c: &mut Client, cmd| assert_eq!(c.request(cmd).code, ResponseCode::SUCCESS);
    ok(&mut admin, new_cmd(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", "b1"));
    let e = feed.next();
    assert_eq!(
        (e.event.as_str(), e.data["brokerName"].as_str(), e.data["count"].as_i64()),
        ("writePermWiped", Some("b1"), Some(3))
    );
    ok(
        &mut admin,
        new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k").with_ext("value", "v"),
    );
    let e = feed.next();
    assert_eq!(
        (e.event.as_str(), e.data["namespace"].as_str(), e.data["key"].as_str()),
        ("kvPut", Some("NS"), Some("k"))
    );
    assert!(e.data.get("value").is_none(), "values stay out of the feed: {}", e.data);
    ok(&mut admin, new_cmd(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "C"));
    let e = feed.next();
    assert_eq!((e.event.as_str(), names(&e.data["topics"])), ("topicsDeleted", vec!["C"]));
    ok(&mut admin, new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(b"orderMessageEnable=true\n".to_vec()));
    let e = feed.next();
    assert_eq!((e.event.as_str(), names(&e.data["keys"])), ("configUpdated", vec!["orderMessageEnable"]));

    // The broker's connection goes (as after kill -9): removed, and its topics with it.
    drop(conn);
    let e = feed.next();
    assert_eq!((e.event.as_str(), e.data["cause"].as_str()), ("brokerRemoved", Some("connection_closed")));
    assert_eq!(e.data["addr"], "127.0.0.1:10911");
    let e = feed.next();
    assert_eq!((e.event.as_str(), names(&e.data["topics"])), ("topicsDeleted", vec!["A", "B"]));

    // A broker that stops heartbeating expires.
    let b2 = Broker { cluster: "C1", name: "b2", addr: "127.0.0.1:20911", id: 0 };
    let mut conn2 = Client::connect(srv.local_addr());
    let r = conn2.request(b2.register(&["D", "E"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(feed.next().event, "brokerRegistered");
    assert_eq!(feed.next().event, "topicsCreated");
    srv.clock.advance_ms(121_000);
    let e = feed.next();
    assert_eq!((e.event.as_str(), e.data["cause"].as_str()), ("brokerRemoved", Some("expired")));

    // Resuming from the first event's id gives everything after it, in the same order.
    let mut again = Stream::open(http, "/events", Some(&format!("{boot}-{first_seq}")));
    assert_eq!(again.next().data["seq"].as_u64(), Some(first_seq + 1));
    assert_eq!(again.next().event, "brokerRegistered");
}

#[test]
fn a_resume_older_than_the_ring_is_told_what_it_lost() {
    let srv = start(|c| c.event_feed_size = 3);
    let http = srv.http_addr().unwrap();
    let mut admin = Client::connect(srv.local_addr());
    for i in 0..6 {
        let put = new_cmd(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "NS")
            .with_ext("key", format!("k{i}"))
            .with_ext("value", "v");
        assert_eq!(admin.request(put).code, ResponseCode::SUCCESS);
    }
    let replay = Stream::open(http, "/events?replay=2", None).next();
    assert_eq!(replay.data["key"], "k4", "replay=2 starts two before the head");
    let boot = replay.id.unwrap().split_once('-').unwrap().0.to_string();
    // Holds 4, 5, 6: events 2 and 3 are gone.
    let mut s = Stream::open(http, "/events", Some(&format!("{boot}-1")));
    let e = s.next();
    assert_eq!((e.event.as_str(), e.data["missed"].as_u64(), e.data["from"].as_u64()), ("lost", Some(2), Some(4)));
    assert_eq!(s.next().data["key"], "k3");
    // An id from another process: lost too, then the oldest kept.
    let mut s = Stream::open(http, "/events", Some("1-1"));
    assert_eq!(s.next().event, "lost");
    assert_eq!(s.next().data["seq"], 4);
}

#[test]
fn streams_are_limited_and_a_consumer_that_never_reads_does_not_hold_up_the_writer() {
    let srv = start(|c| {
        c.event_feed_size = 64;
        c.event_feed_streams = 2;
    });
    let http = srv.http_addr().unwrap();
    // Opens a stream and never reads it again.
    let stuck = Stream::open(http, "/events", None);
    let mut reader = Stream::open(http, "/events", None);
    let mut s = TcpStream::connect(http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /events HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.0 503"), "{text}");

    // Thousands of events with long names: far more than the stuck stream's socket buffers hold.
    let mut conn = Client::connect(srv.local_addr());
    let b = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    let long = "T".repeat(200);
    for i in 0..3000 {
        let topics: Vec<String> = (0..4).map(|j| format!("{long}-{i}-{j}")).collect();
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        assert_eq!(conn.request(b.register(&topics, i + 1, 513)).code, ResponseCode::SUCCESS);
    }
    // The reader kept up until it stopped reading too; reading now it finds it fell behind and was dropped.
    let mut dropped = false;
    for _ in 0..20_000 {
        let e = reader.next();
        if e.event == "dropped" {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "a stream that fell behind the ring is dropped");
    assert!(reader.ended(), "and closed");
    drop(stuck);
}

#[test]
fn a_change_that_could_not_be_made_durable_is_not_in_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    // A parent that is a regular file: the KV file below it cannot be written.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"a regular file").unwrap();
    let kv = blocker.join("kvConfig.json").display().to_string();
    let srv = start(|c| c.kv_config_path = kv);
    let mut feed = Stream::open(srv.http_addr().unwrap(), "/events", None);
    let mut admin = Client::connect(srv.local_addr());
    let put =
        new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k").with_ext("value", "v");
    assert_eq!(admin.request(put).code, ResponseCode::SYSTEM_ERROR);
    // Something after it that did happen: the next event is that one.
    let b = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
    assert_eq!(admin.request(b.register(&["A", "B"], 1, 513)).code, ResponseCode::SUCCESS);
    let e = feed.next();
    assert_eq!(e.event, "brokerRegistered", "{:?}", e.data);
    assert_eq!(e.data["seq"], 1);
}
