//! The recording proxy the peer-traffic replay uses (`support::recorder`, driven by `tests/interop/clients.rs` under
//! `cargo test -- --ignored`), checked on its own against our binary: needs nothing but Rust.

use crate::support;

use std::time::Duration;

use namesrv::protocol::frame;
use namesrv::protocol::RequestCode as Rc;

use support::broker::{route, wait_for};
use support::client::Client;
use support::recorder::{decode_frame, Event, Recorder, Recording};
use support::registration;

/// The recording proxy alone, against our binary (no JVM): it forwards requests and replies unchanged, records each
/// request frame byte for byte, each reply, one-way requests and the close in order, and closes upstream when the
/// client closes (a broker registered through it is evicted by that close).
#[test]
fn recorder_records_frames_and_passes_the_close_on() {
    let ours = support::ours::OurNamesrv::start();
    let recorder = Recorder::start(ours.addr());
    let broker = registration::Broker { cluster: "RecCluster", name: "rec-broker", addr: "127.0.0.1:10911", id: 0 };
    let mut c = Client::connect(recorder.addr());
    let register = broker.register(&["RecTopicA", "RecTopicB"], 1, 513);
    let mut sent = bytes::BytesMut::new();
    frame::encode(&register, &mut sent);
    assert_eq!(c.request(register.clone()).code, 0, "REGISTER_BROKER through the recorder");
    assert!(route(ours.addr(), "RecTopicA").is_some(), "registered through the recorder");
    c.oneway(registration::new_cmd(Rc::GET_BROKER_CLUSTER_INFO));
    let reply = c.request(registration::new_cmd(Rc::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "RecTopicB"));
    assert_eq!(reply.code, 0);
    drop(c);
    wait_for(
        "the broker to be evicted after its connection through the recorder closed",
        Duration::from_secs(10),
        || route(ours.addr(), "RecTopicA").is_none().then_some(()),
        || ours.log(),
    );

    let recording = recorder.stop();
    let kinds: Vec<&str> = recording
        .events
        .iter()
        .map(|e| match e {
            Event::Request { frame, .. } if decode_frame(frame).unwrap().is_oneway() => "oneway",
            Event::Request { .. } => "request",
            Event::Reply { .. } => "reply",
            Event::Closed { .. } => "closed",
        })
        .collect();
    assert_eq!(kinds, ["request", "reply", "oneway", "request", "reply", "closed"], "{:?}", recording.events);
    assert!(recording.events.iter().all(|e| matches!(
        e,
        Event::Request { conn: 1, .. } | Event::Reply { conn: 1, .. } | Event::Closed { conn: 1 }
    )));
    assert!(
        matches!(&recording.events[0], Event::Request { frame, .. } if frame.as_slice() == &sent[..]),
        "the request is recorded byte for byte"
    );
    assert!(
        matches!(&recording.events[1], Event::Reply { frame, .. } if decode_frame(frame).unwrap().opaque == register.opaque)
    );
    let dir = tempfile::tempdir().unwrap();
    recording.save(&dir.path().join("r.bin"));
    assert_eq!(Recording::load(&dir.path().join("r.bin")).events, recording.events, "save/load round trip");
}
