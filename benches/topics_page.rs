//! The web console's topic page at 100k topics: `GET /api/topics` of a server whose two brokers (two clusters)
//! host 50k topics each, over loopback HTTP as the page asks for it. `cold` is the first page after the topic
//! names changed (the natural sort runs again); the others are warm (the names unchanged since the last page): the
//! first and the last page, a search, a kind and cluster filter, a broker filter with and without a search.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use namesrv::config::Config;
use namesrv::model::{DataVersion, TopicConfig};
use namesrv::protocol::{frame, ResponseCode, DEFAULT_MAX_FRAME};
use namesrv::state::routes::RegisterBroker;

const TOPICS: usize = 100_000;

/// Registers broker `name` (master of `cluster`) with `topics` over its connection and waits for the reply. The
/// connection stays open: closing it would evict the broker.
fn register(stream: &mut TcpStream, cluster: &str, name: &str, addr: &str, topics: &[String], counter: i64) {
    let configs = topics.iter().map(|t| TopicConfig::with_defaults(t.as_str())).collect();
    let dv = DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 };
    let mut reg = RegisterBroker::new(cluster, name, 0, addr, configs, dv);
    reg.body.filter_server_list = Some(vec![]);
    let opaque = counter as i32;
    let cmd = namesrv::handlers::broker::encode_register_as(&reg, opaque, 513);
    let mut out = BytesMut::new();
    frame::encode(&cmd, &mut out);
    stream.write_all(&out).expect("send");
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 16 * 1024];
    let reply = loop {
        if let Some(reply) = frame::decode(&mut buf, DEFAULT_MAX_FRAME).expect("a frame") {
            break reply;
        }
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "connection closed before the reply");
        buf.extend_from_slice(&chunk[..n]);
    };
    assert_eq!((reply.opaque, reply.code), (opaque, ResponseCode::SUCCESS), "{reply:?}");
}

/// `GET path` over HTTP/1.0; returns the body's length (the status must be 200).
fn get(http: SocketAddr, path: &str) -> usize {
    let mut stream = TcpStream::connect(http).expect("connect");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: bench\r\n\r\n").expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    assert!(answer.starts_with(b"HTTP/1.0 200"), "{}", String::from_utf8_lossy(&answer[..answer.len().min(200)]));
    answer.len()
}

fn topics_page(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        http_address: "127.0.0.1:0".into(),
        kv_config_path: dir.path().join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.path().join("namesrv.properties").to_string_lossy().into_owned(),
        tls_config_file: dir.path().join("no-tls.properties").to_string_lossy().into_owned(),
        ..Config::default()
    };
    let server = namesrv::server::start(config).expect("server starts");
    let (remoting, http) = (server.local_addr(), server.http_addr().expect("HTTP on"));
    let names: Vec<String> = (0..TOPICS).map(|i| format!("topic_{i}")).collect();
    let (first, second) = names.split_at(TOPICS / 2);
    // Each broker also registers its cluster's and its own name, as brokers do by default.
    let with = |topics: &[String], own: [&str; 2]| [topics, &own.map(String::from)[..]].concat();
    let mut b2_conn = TcpStream::connect(remoting).expect("connect");
    register(&mut b2_conn, "C2", "b2", "127.0.0.2:10911", &with(second, ["C2", "b2"]), 1);
    // b1 alternates between its topics and one more, so that every `cold` page follows a change of names.
    let base = with(first, ["C1", "b1"]);
    let mut b1 = base.clone();
    let mut counter = 1;
    let mut b1_conn = TcpStream::connect(remoting).expect("connect");
    register(&mut b1_conn, "C1", "b1", "127.0.0.1:10911", &b1, counter);

    let mut g = c.benchmark_group("topics_page_100k");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    g.bench_function("cold, first page", |b| {
        b.iter_batched(
            || {
                if b1.len() > base.len() {
                    b1.pop();
                } else {
                    b1.push("topic_extra".to_string());
                }
                counter += 1;
                register(&mut b1_conn, "C1", "b1", "127.0.0.1:10911", &b1, counter);
                // The reply comes once the registration is published: the page reads the changed names.
                assert_eq!(server.snapshot().routes.topic_count(), TOPICS + 4 + b1.len() - base.len());
            },
            |()| black_box(get(http, "/api/topics?limit=50")),
            BatchSize::PerIteration,
        )
    });
    for (what, q) in [
        ("warm, first page", "limit=50"),
        ("warm, last page", "offset=99950&limit=50"),
        ("warm, q=_999", "q=_999&limit=50"),
        ("warm, kind=normal, cluster=C2", "kind=normal&cluster=C2&limit=50"),
        ("warm, broker=b2, q=_999", "broker=b2&q=_999&limit=50"),
        ("warm, broker=b2", "broker=b2&limit=50"),
    ] {
        let path = format!("/api/topics?{q}");
        get(http, &path);
        g.bench_function(what, |b| b.iter(|| black_box(get(http, &path))));
    }
    g.finish();
    drop((b1_conn, b2_conn, server));
}

criterion_group!(benches, topics_page);
criterion_main!(benches);
