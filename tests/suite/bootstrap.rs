//! Bootstrap from peers (`bootstrapFromPeers`, decision 0034): a name server that starts with no routes serves a
//! peer's route table provisionally, with each broker's age as the peer has it, so a broker that does not
//! re-register expires on both together, and one the peer has dropped is not brought back. A dead peer does not
//! hold up start-up, and FLEET_ROUTES is answered only to the fleet's name servers and admins.

use crate::support;

use std::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use namesrv::protocol::{RequestCode, ResponseCode};
use support::client::Client;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};

/// Bounds the waits of these tests only; an import arrives in milliseconds on loopback.
const WAIT: Duration = Duration::from_secs(5);

const B1: Broker<'static> = Broker { cluster: "C1", name: "b1", addr: "127.0.0.1:10911", id: 0 };
/// Two topics each: a one-topic registration cannot introduce a broker (Java's rule).
const B2: Broker<'static> = Broker { cluster: "C1", name: "b2", addr: "127.0.0.1:20911", id: 0 };

fn route(c: &mut Client, topic: &str) -> i32 {
    c.request(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)).code
}

fn serves(srv: &InProc, topic: &str) -> bool {
    route(&mut srv.client(), topic) == ResponseCode::SUCCESS
}

/// Returns once the writer has run two expiry scans more (the second began after this call).
fn after_two_scans(srv: &InProc) {
    let scans = || srv.metrics().writer.expiry_scans.load(Relaxed);
    let from = scans();
    assert!(support::eventually(WAIT, || scans() >= from + 2), "no expiry scan");
}

fn provisional(srv: &InProc) -> u64 {
    srv.metrics().writer.provisional_brokers.load(Relaxed)
}

/// The first server: a peer list naming 127.0.0.1 (port 1: nobody), so that it answers the second's FLEET_ROUTES
/// (peers are matched by address), and no bootstrap of its own. The tests keep each broker's connection to it open:
/// closing it removes the broker, as Java does when a broker's channel closes.
fn peer_a() -> InProc {
    InProc::start(|c| {
        c.namesrv_peers = "127.0.0.1:1".into();
        c.bootstrap_from_peers = false;
    })
}

/// A server that starts empty and names `peers`.
fn empty_b(peers: &str) -> InProc {
    let peers = peers.to_string();
    InProc::start(move |c| c.namesrv_peers = peers)
}

#[test]
fn an_empty_server_serves_a_peers_routes_at_once_provisionally() {
    let a = peer_a();
    let mut broker = a.client();
    assert_eq!(broker.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    let put =
        new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k").with_ext("value", "v");
    assert_eq!(a.client().request(put).code, ResponseCode::SUCCESS);

    let started = Instant::now();
    let b = empty_b(&a.addr().to_string());
    assert!(support::eventually(WAIT, || serves(&b, "TopicA")), "the peer's route never arrived");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "served after {took:?}");
    assert_eq!(provisional(&b), 1, "served provisionally, until the broker registers here");
    let get = new_cmd(RequestCode::GET_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k");
    assert_eq!(b.client().request(get).ext("value"), Some("v"), "an empty KV takes the peer's");

    // The broker registers with B itself: no longer provisional. Its connection stays open: closing it would remove
    // the broker (as Java does when a broker's channel closes), racing the route asked next.
    let mut broker_on_b = b.client();
    assert_eq!(broker_on_b.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(provisional(&b), 0);
    assert!(serves(&b, "TopicA"));
}

/// The broker's age goes with it: A heard from it 10 s before B started (and B's clock is not A's), and it expires
/// on B when its 120 s are up on A, not 120 s after B took it.
#[test]
fn a_broker_that_does_not_re_register_expires_on_the_empty_server_as_on_its_peer() {
    let a = peer_a();
    let mut broker = a.client();
    assert_eq!(broker.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    a.clock.advance_ms(10_000);
    let b = empty_b(&a.addr().to_string());
    assert!(support::eventually(WAIT, || serves(&b, "TopicA")));

    // 109 s later on both clocks: 119 s since A last heard from it, still served by both.
    a.clock.advance_ms(109_000);
    b.clock.advance_ms(109_000);
    after_two_scans(&a);
    after_two_scans(&b);
    assert!(serves(&a, "TopicA") && serves(&b, "TopicA"), "expired before its timeout");
    // 2 s more: past 120 s on A's count, on both.
    a.clock.advance_ms(2_000);
    b.clock.advance_ms(2_000);
    assert!(support::eventually(WAIT, || !serves(&a, "TopicA")), "A never expired it");
    assert!(support::eventually(WAIT, || !serves(&b, "TopicA")), "B served it past the peer's expiry");
}

#[test]
fn a_broker_the_peer_has_dropped_is_not_brought_back() {
    let a = peer_a();
    let (mut one, mut two) = (a.client(), a.client());
    assert_eq!(one.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(two.request(B2.register(&["TopicB", "TopicB2"], 1, 513)).code, ResponseCode::SUCCESS);
    assert_eq!(one.request(B1.unregister()).code, ResponseCode::SUCCESS);
    assert!(!serves(&a, "TopicA"));

    let b = empty_b(&a.addr().to_string());
    assert!(support::eventually(WAIT, || serves(&b, "TopicB")), "the live broker's route never arrived");
    assert!(!serves(&b, "TopicA"), "a broker the peer dropped came back");
    assert_eq!(provisional(&b), 1);
}

/// A peer that accepts and never answers: B listens and answers at once (no route yet), and takes the next peer's
/// table once the hung one's bounded wait (1 s to connect, 3 s to answer) is over.
#[test]
fn a_dead_peer_does_not_hold_up_start_up() {
    let _turn = crate::alone();
    let hung = TcpListener::bind("127.0.0.1:0").expect("bind");
    let a = peer_a();
    let mut broker = a.client();
    assert_eq!(broker.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);

    let started = Instant::now();
    let b = empty_b(&format!("{};{}", hung.local_addr().unwrap(), a.addr()));
    let mut c = b.client();
    assert_eq!(route(&mut c, "TopicA"), ResponseCode::TOPIC_NOT_EXIST, "answered before the import");
    let answering = started.elapsed();
    assert!(answering < Duration::from_secs(1), "start-up waited {answering:?} on a dead peer");
    assert!(support::eventually(Duration::from_secs(8), || route(&mut c, "TopicA") == ResponseCode::SUCCESS));
    let imported = started.elapsed();
    assert!(imported < Duration::from_secs(6), "the import took {imported:?}, beyond the hung peer's bound");
}

#[test]
fn the_route_table_is_refused_to_an_address_that_is_no_peer() {
    use namesrv::test_support::allow_list::AllowList;
    use namesrv::test_support::fleet::wire::FLEET_ROUTES;
    let a = InProc::start(|c| {
        c.namesrv_peers = "192.0.2.7:9876".into();
        c.admin_allow_list = AllowList::parse("192.0.2.0/24").unwrap();
    });
    let r = a.client().request(new_cmd(FLEET_ROUTES));
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{:?}", r.remark);
    assert!(r.remark.as_deref().is_some_and(|m| m.contains("namesrvPeers")), "{:?}", r.remark);
    assert!(r.body.is_empty());

    // The same server with this address among its admins answers it.
    let admitted = InProc::start(|c| {
        c.namesrv_peers = "192.0.2.7:9876".into();
        c.admin_allow_list = AllowList::parse("192.0.2.0/24,127.0.0.1").unwrap();
    });
    assert_eq!(admitted.client().request(new_cmd(FLEET_ROUTES)).code, ResponseCode::SUCCESS);
}

/// A peer given by host name (`localhost`, resolved by the system's resolver, as a headless Service's name would
/// be): B asks the address it resolves to.
#[test]
fn a_peer_named_by_a_host_name_is_asked_at_the_address_it_resolves_to() {
    let a = peer_a();
    let mut broker = a.client();
    assert_eq!(broker.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    let peers = format!("localhost:{}", a.addr().port());
    let b = InProc::start(move |c| {
        c.namesrv_peers = peers;
        c.http_address = "127.0.0.1:0".into();
    });
    assert!(support::eventually(WAIT, || serves(&b, "TopicA")), "the named peer was never asked");
    let view = support::observe::http_get(b.http_addr().expect("http"), "/api/fleet").expect("/api/fleet");
    assert!(view.contains(&format!("\"addr\":\"{}\"", a.addr())), "the view lists the resolved address: {view}");
}

/// With replicated KV the group's log is the one source of the KV table: the routes come from the peer, its KV
/// does not (imported through this server's writer alone, it would differ from what the group committed).
#[test]
fn with_replicated_kv_only_the_routes_come_from_the_peer() {
    let a = peer_a();
    let mut broker = a.client();
    assert_eq!(broker.request(B1.register(&["TopicA", "TopicA2"], 1, 513)).code, ResponseCode::SUCCESS);
    let put =
        new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k").with_ext("value", "v");
    assert_eq!(a.client().request(put).code, ResponseCode::SUCCESS);

    let raft_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let peers = a.addr().to_string();
    let b = InProc::start(move |c| {
        let dir = std::path::Path::new(&c.kv_config_path).parent().unwrap().to_owned();
        c.namesrv_peers = peers;
        c.kv_replication_enabled = true;
        c.kv_replication_node_id = 1;
        c.kv_replication_peers = format!("1=127.0.0.1:{raft_port}");
        c.kv_replication_store_path = dir.join("kvraft").to_string_lossy().into_owned();
    });
    assert!(support::eventually(WAIT, || serves(&b, "TopicA")), "the peer's route never arrived");
    assert_eq!(provisional(&b), 1);
    let get = new_cmd(RequestCode::GET_KV_CONFIG).with_ext("namespace", "ns").with_ext("key", "k");
    assert_eq!(b.client().request(get).code, ResponseCode::QUERY_NOT_FOUND, "the peer's KV bypassed the group");
}
