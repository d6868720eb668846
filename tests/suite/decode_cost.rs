//! Decoding cost on a server: a peer that sends the costliest headers the frame limit allows (the most, smallest,
//! distinct ext fields) costs the reactor that decodes them about their size, so other clients' requests on that
//! reactor keep answering promptly; the controller port, which decodes with the same codec on its one thread, too.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use namesrv::protocol::{frame, ExtFields, RemotingCommand, RequestCode, ResponseCode, SerializeType};
use namesrv::test_support::protocol::code::ControllerRequestCode as C;

use crate::support::client::Client;
use crate::support::controller::{controller_addr, single_leader};
use crate::support::inproc::InProc;

/// Ext fields of a header at the 256 KiB header limit: 4-byte distinct keys, 1-byte values (11 bytes a field in
/// either encoding).
const FIELDS: usize = 23_800;

fn worst_fields() -> ExtFields {
    let key = |i: usize| (0..4).map(|d| char::from(b'a' + (i / 26usize.pow(d) % 26) as u8)).collect::<String>();
    ExtFields((0..FIELDS).map(|i| (key(i), "v".to_string())).collect())
}

fn worst_request(c: &mut Client, code: i32, serialize_type: SerializeType, ext: &ExtFields) -> RemotingCommand {
    let mut cmd = c.cmd(code);
    cmd.ext_fields = Some(ext.clone());
    cmd.serialize_type = serialize_type;
    cmd
}

/// The `p`-th percentile (0–100) of `samples`, sorted in place.
fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    samples[(samples.len() * p / 100).min(samples.len() - 1)]
}

/// One reactor, so the attacker's connection and the querier's share it: while the attacker sends worst-case
/// headers back to back (ROCKETMQ and JSON in turn), route queries stay fast (a p99 over at least 100 of them,
/// spanning at least 4 such headers). A search
/// for repeats that is quadratic in the fields took seconds of that reactor per header.
#[test]
fn worst_case_headers_do_not_stall_route_queries_on_their_reactor() {
    let _turn = crate::alone();
    let srv = InProc::start(|c| c.reactor_threads = 1);
    let ext = worst_fields();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let attacker = {
        let (stop, sent, mut c) = (stop.clone(), sent.clone(), srv.client());
        // Encoded once: the attacker's own encoding would otherwise space its headers out.
        let frames: Vec<(Vec<u8>, i32)> = [SerializeType::RocketMq, SerializeType::Json]
            .into_iter()
            .map(|st| {
                let cmd = worst_request(&mut c, RequestCode::GET_ROUTEINFO_BY_TOPIC, st, &ext);
                let mut out = bytes::BytesMut::new();
                frame::encode(&cmd, &mut out);
                (out.to_vec(), cmd.opaque)
            })
            .collect();
        std::thread::spawn(move || {
            for (frame, opaque) in frames.iter().cycle() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                // Answered (there is no `topic` field): the whole header was decoded.
                assert_ne!(c.request_frame(frame, *opaque).code, ResponseCode::SUCCESS);
                sent.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    assert!(crate::support::eventually(Duration::from_secs(60), || sent.load(Ordering::Relaxed) >= 1));

    let mut querier = srv.client();
    let (mut took, bound, sent_before) = (Vec::new(), Duration::from_millis(200), sent.load(Ordering::Relaxed));
    let deadline = Instant::now() + Duration::from_secs(60);
    // At least 100 queries, and as many as it takes to overlap a few worst-case headers.
    while took.len() < 100 || (sent.load(Ordering::Relaxed) - sent_before < 4 && Instant::now() < deadline) {
        let cmd = querier.cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", format!("T{}", took.len()));
        let at = Instant::now();
        let answer = querier.try_request(cmd, Duration::from_secs(60)).expect("the query is answered");
        took.push(at.elapsed());
        assert_eq!(answer.code, ResponseCode::TOPIC_NOT_EXIST);
        // More than 1% slow queries already put the p99 over the bound: no need to wait out the rest.
        if took.iter().filter(|t| **t > bound).count() > 1 + took.len() / 100 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let p99 = percentile(&mut took, 99);
    let worst_case_headers = sent.load(Ordering::Relaxed) - sent_before;
    attacker.join().expect("the attacker thread ends");
    assert!(p99 < bound, "route query p99 {p99:?} over {} queries beside {worst_case_headers} headers", took.len());
    assert!(worst_case_headers >= 4, "the attacker kept the reactor busy: {worst_case_headers} headers");
}

/// A controller request with a worst-case header, in either encoding, is answered about as fast as the header is
/// read (the node decodes on its one runtime thread, which also serves Raft).
#[test]
fn a_controller_request_with_a_worst_case_header_answers_fast() {
    let _turn = crate::alone();
    let store = tempfile::tempdir().expect("tempdir");
    let srv = single_leader(store.path());
    let mut c = Client::connect(controller_addr(&srv));
    let ext = worst_fields();
    for st in [SerializeType::RocketMq, SerializeType::Json] {
        let cmd = worst_request(&mut c, C::CONTROLLER_GET_METADATA_INFO, st, &ext);
        let at = Instant::now();
        let answer = c.try_request(cmd, Duration::from_secs(60)).expect("answered");
        let took = at.elapsed();
        assert_eq!(answer.code, ResponseCode::SUCCESS, "{st:?}");
        assert_eq!(answer.ext("isLeader"), Some("true"), "{st:?}");
        // Unoptimised, the decode takes tens of milliseconds; the quadratic search took seconds.
        assert!(took < Duration::from_millis(500), "{st:?}: {took:?}");
    }
}
