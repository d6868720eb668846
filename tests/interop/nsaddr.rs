//! A real Java 5.5.0 client that is given no name server finds ours through the address server: with
//! `-Drocketmq.namesrv.domain=host:port` it reads `/rocketmq/nsaddr` (our `nsaddrList`) and looks a route up on the
//! server named there. Needs Java 17+ and Maven (the client is fetched by `tests/peers/fetch.sh`).

use crate::support;

use std::time::Duration;

use namesrv::protocol::ResponseCode;
use support::client::Client;
use support::inproc::InProc;
use support::java::JAVA_5X;
use support::mqadmin::JavaClient;
use support::registration::Broker;

const BROKER: Broker = Broker { cluster: "NsaddrCluster", name: "broker-nsaddr", addr: "127.0.0.1:10911", id: 0 };

#[test]
#[ignore = "real peer: Java 5.5.0 client"]
fn java5_client_finds_the_name_server_through_the_address_server() {
    // The server hands out its own address; the topic exists only there, so a route means the list was used.
    let port = support::free_port();
    let server = InProc::start(|c| {
        c.listen_port = port;
        c.http_address = "127.0.0.1:0".into();
        c.nsaddr_list = format!("127.0.0.1:{port}");
    });
    assert_eq!(server.addr().port(), port);
    let mut broker = Client::connect(server.addr());
    let r = broker.request(BROKER.register(&["NsaddrTopic", "TBW102"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");

    let client = JavaClient::new(JAVA_5X);
    let http = server.http_addr().expect("HTTP enabled");
    let out = client.run_via_address_server(http, &["route-via-domain", "NsaddrTopic"], Duration::from_secs(120));
    out.expect_ok("Java 5.5.0 route lookup through the address server");
    let queues: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("QUEUE ")).collect();
    assert_eq!(queues.len(), 4, "{}", out.stdout);
    assert!(queues.iter().all(|q| q.starts_with("QUEUE broker-nsaddr ")), "{}", out.stdout);
}
