//! Frame codec: decode and encode of a GET_ROUTEINFO_BY_TOPIC request and its route-sized response, with JSON and
//! ROCKETMQ headers; the costliest headers the header limit allows (the most, smallest fields: distinct, or one key
//! repeated); and REGISTER_BROKER body decoding (10k topics, JSON and zlib).

mod common;

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use namesrv::model::RegisterBrokerBody;
use namesrv::protocol::body;
use namesrv::protocol::json::Dialect;
use namesrv::protocol::{
    frame, ExtFields, RemotingCommand, RequestCode, ResponseCode, SerializeType, DEFAULT_MAX_FRAME,
};

fn route_request(st: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 123_456)
        .with_ext("topic", common::topic_name(42))
        .with_ext("acceptStandardJsonOnly", "true");
    cmd.serialize_type = st;
    cmd
}

/// A route-sized response: the body a topic hosted by 8 broker groups gets.
fn route_response(st: SerializeType) -> RemotingCommand {
    let tables = common::tables_shared(2, 8);
    let route = tables.view().route(&common::topic_name(0), false).expect("route");
    let mut out = Vec::new();
    body::encode_topic_route(&route, Dialect::Standard, &mut out);
    RemotingCommand::response_to(&route_request(st), ResponseCode::SUCCESS, None).with_body(out)
}

fn frames(c: &mut Criterion) {
    for (name, st) in [("json", SerializeType::Json), ("rocketmq", SerializeType::RocketMq)] {
        let mut g = c.benchmark_group(format!("frame/{name}"));
        let req = route_request(st);
        let mut wire = BytesMut::new();
        frame::encode(&req, &mut wire);
        let wire = wire.freeze();
        g.throughput(Throughput::Elements(1));
        // As a reactor does it: the frame appended to a reused input buffer, then split off and decoded.
        let mut input = BytesMut::with_capacity(64 * 1024);
        g.bench_function("decode_request", |b| {
            b.iter(|| {
                input.extend_from_slice(&wire);
                black_box(frame::decode(&mut input, DEFAULT_MAX_FRAME).expect("ok").expect("whole"))
            })
        });
        let mut out = BytesMut::with_capacity(64 * 1024);
        g.bench_function("encode_request", |b| {
            b.iter(|| {
                out.clear();
                frame::encode(black_box(&req), &mut out);
                black_box(out.len())
            })
        });
        let resp = route_response(st);
        g.bench_function(format!("encode_route_response_{}B", resp.body.len()), |b| {
            b.iter(|| {
                out.clear();
                frame::encode(black_box(&resp), &mut out);
                black_box(out.len())
            })
        });
        g.finish();
    }
}

/// Fields of a header at the 256 KiB header limit: 23,800 of 11 bytes (a 4-byte key, a 1-byte value) in either
/// encoding; `distinct` keys, or one key repeated (every value kept but the last is a repeat to resolve).
fn worst_fields(distinct: bool) -> ExtFields {
    let key = |i: usize| (0..4).map(|d| char::from(b'a' + (i / 26usize.pow(d) % 26) as u8)).collect::<String>();
    ExtFields((0..23_800).map(|i| (if distinct { key(i) } else { key(0) }, "v".to_string())).collect())
}

/// The worst header per encoding: what a peer can make a reactor (or the controller's thread) decode per frame.
fn worst_headers(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode_worst_header");
    g.sample_size(10);
    for (name, st) in [("json", SerializeType::Json), ("rocketmq", SerializeType::RocketMq)] {
        for (shape, distinct) in [("distinct", true), ("repeated", false)] {
            let mut cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1);
            cmd.ext_fields = Some(worst_fields(distinct));
            cmd.serialize_type = st;
            let mut wire = BytesMut::new();
            frame::encode(&cmd, &mut wire);
            let wire = wire.freeze();
            g.throughput(Throughput::Bytes(wire.len() as u64));
            let mut input = BytesMut::with_capacity(wire.len());
            g.bench_function(format!("{name}_{shape}"), |b| {
                b.iter(|| {
                    input.extend_from_slice(&wire);
                    black_box(frame::decode(&mut input, DEFAULT_MAX_FRAME).expect("ok").expect("whole"))
                })
            });
        }
    }
    g.finish();
}

fn register_bodies(c: &mut Criterion) {
    let body = RegisterBrokerBody {
        topic_configs: common::topic_configs((0..10_000).map(common::topic_name), 6),
        ..Default::default()
    };
    let mut g = c.benchmark_group("register_body_10k");
    g.sample_size(10);
    for (name, compressed) in [("json", false), ("zlib", true)] {
        let bytes = Bytes::from(body::encode_register_broker_body(&body, compressed, 513));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| black_box(body::decode_register_broker_body(&bytes, compressed, 513, 64 << 20).expect("ok")))
        });
    }
    // As the decoder thread reads it, giving way to other threads every 256 topics (decision 0025): here with no
    // other thread ready, so each yield returns at once; what it costs is the syscalls.
    let bytes = Bytes::from(body::encode_register_broker_body(&body, false, 513));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("decode_json_giving_way", |b| {
        b.iter(|| {
            let decoded =
                body::decode_register_broker_body_marked(&bytes, false, 513, 64 << 20, &std::thread::yield_now);
            black_box(decoded.expect("ok"))
        })
    });
    // An unchanged re-registration instead: its CRC, then recognising it by the last body's mark.
    for (name, compressed) in [("json", false), ("zlib", true)] {
        let bytes = Bytes::from(body::encode_register_broker_body(&body, compressed, 513));
        let (_, mark) =
            body::decode_register_broker_body_marked(&bytes, compressed, 513, 64 << 20, &|| {}).expect("ok");
        let mark = mark.expect("a JSON body of the usual shape and a zlib body are marked");
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(format!("recognise_{name}"), |b| {
            b.iter(|| black_box(body::same_register_body(&bytes, compressed, &mark, 64 << 20, &|| {}).expect("same")))
        });
    }
    let json = Bytes::from(body::encode_register_broker_body(&body, false, 513));
    g.bench_function("crc32_json", |b| b.iter(|| black_box(namesrv::handlers::broker::crc32_masked(&json))));
    g.finish();
}

/// `aclEnable`: checking a signed route query (account lookup, HMAC-SHA1 over its ext fields, Base64, compare),
/// next to the HMAC alone with a keyed state and with keying per call.
fn acl(c: &mut Criterion) {
    use namesrv::acl::{file, signature};
    let acl = file::parse("accounts:\n  - {accessKey: perf-reader, secretKey: perf-reader-secret}\n").unwrap();
    let req = route_request(SerializeType::Json).with_ext(signature::ACCESS_KEY, "perf-reader");
    let sig = signature::sign(req.ext_fields.as_ref().unwrap(), &req.body, b"perf-reader-secret");
    let req = req.with_ext(signature::SIGNATURE, sig);
    let peer: std::net::IpAddr = "203.0.113.9".parse().unwrap();
    let mut g = c.benchmark_group("acl");
    g.bench_function("check_signed_route_query", |b| b.iter(|| acl.check(peer, black_box(&req), false).is_ok()));
    let ext = req.ext_fields.as_ref().unwrap();
    let key = signature::Key::new(b"perf-reader-secret");
    g.bench_function("sign_keyed", |b| b.iter(|| key.sign(black_box(ext), b"")));
    g.bench_function("sign_keying_each_time", |b| {
        b.iter(|| signature::sign(black_box(ext), b"", b"perf-reader-secret"))
    });
    g.finish();
}

criterion_group! { name = benches; config = common::quick(); targets = frames, worst_headers, register_bodies, acl }
criterion_main!(benches);
