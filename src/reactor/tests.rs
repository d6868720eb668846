//! Reactor unit tests (the end-to-end ones are in tests/).

use std::sync::atomic::{AtomicBool, AtomicUsize};

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;

use super::admission::{Admission, SMALL_FRAME};
use super::deferral::PARK_LIMIT;
use super::*;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::write_command::WriteOp;
use crate::writer::Writer;

/// A reactor (not running) whose writer queue and decoder queue the test controls.
fn reactor_with(
    writer: crate::write_command::WriterQueue,
    decoder: Sender<crate::decoder::Job>,
    decoder_bytes: Arc<crate::limit::ByteBudget>,
) -> Reactor {
    let config = Arc::new(Config::default());
    let cell = Arc::new(ArcSwap::from_pointee(Writer::initial_snapshot(Default::default(), config)));
    let (events, _events_rx) = crossbeam_channel::unbounded();
    let (_inbox_tx, inbox) = crossbeam_channel::unbounded();
    let shared = Shared {
        cell,
        writer,
        events,
        clock: Arc::new(SystemClock),
        decoder,
        decoder_bytes,
        open_connections: Arc::new(AtomicUsize::new(0)),
        shutdown: Arc::new(AtomicBool::new(false)),
        draining: Arc::new(AtomicBool::new(false)),
        peers: Arc::new(Vec::new()),
        next_reactor: Arc::new(AtomicUsize::new(0)),
        tls: Arc::new(crate::tls::TlsSetup::disabled()),
        acl: None,
        acl_metrics: Default::default(),
        kv_writes: None,
        settings: Settings {
            max_frame: 1024,
            route_cache_bytes: 0,
            defer_bytes: 0,
            ..Settings::from_config(&Config::default(), 0)
        },
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    Reactor::new(0, Poll::new().unwrap(), listener, inbox, shared, Default::default()).unwrap()
}

fn queue(
    capacity: usize,
    bytes: usize,
) -> (crate::write_command::WriterQueue, crossbeam_channel::Receiver<Box<WriteCommand>>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    (crate::write_command::WriterQueue { tx, bytes: Arc::new(crate::limit::ByteBudget::new(bytes)) }, rx)
}

/// Invariant 4: a full writer queue is answered with SYSTEM_BUSY at once; the reactor never blocks on it.
#[test]
fn full_writer_queue_answers_system_busy() {
    let (writer, writer_rx) = queue(1, 0);
    let id = ConnId { reactor: 0, token: 0, gen: 1 };
    let filler = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER, 1);
    let op = WriteOp::WipeWritePerm { broker_name: "b".into() };
    writer
        .tx
        .try_send(Box::new(WriteCommand {
            origin: Origin::new(id, &filler, std::net::Ipv4Addr::LOCALHOST.into(), None),
            op,
            bytes: 0,
            decoded_with: None,
        }))
        .unwrap();
    let reactor = reactor_with(writer, crossbeam_channel::bounded(1).0, Default::default());
    let req = RemotingCommand::request(RequestCode::ADD_WRITE_PERM_OF_BROKER, 9).with_ext("brokerName", "b");
    let started = std::time::Instant::now();
    let peer = "127.0.0.1:1".parse().unwrap();
    let resp = reactor.handle(id, peer, &req).0.expect("an immediate answer");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(resp.code, ResponseCode::SYSTEM_BUSY);
    assert_eq!(resp.remark.as_deref(), Some(handlers::OVERLOAD_REMARK));
    assert_eq!(resp.opaque, 9);
    assert_eq!(writer_rx.len(), 1, "nothing was queued behind the full queue");
}

/// `writerQueueBytes`: a write whose body does not fit the bytes still queued is SYSTEM_BUSY, even though the
/// queue has room by count; once the writer has taken the queued bytes, the same write goes through.
#[test]
fn writer_queue_bounded_by_bytes_answers_system_busy() {
    let (writer, writer_rx) = queue(1024, 1000);
    let budget = writer.bytes.clone();
    let reactor = reactor_with(writer, crossbeam_channel::bounded(1).0, Default::default());
    assert!(budget.try_take(600), "600 bytes of another request are queued");
    let id = ConnId { reactor: 0, token: 0, gen: 1 };
    let peer = "127.0.0.1:1".parse().unwrap();
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG, 5)
        .with_ext("namespace", "NS")
        .with_ext("key", "k")
        .with_ext("value", "v")
        .with_body(vec![b'x'; 500]);
    let resp = reactor.handle(id, peer, &put).0.expect("refused at once");
    assert_eq!((resp.code, resp.opaque), (ResponseCode::SYSTEM_BUSY, 5));
    assert_eq!(writer_rx.len(), 0);
    assert_eq!(budget.used(), 600, "a refused request holds no bytes");
    budget.release(600);
    assert!(reactor.handle(id, peer, &put).0.is_none(), "queued for the writer");
    assert_eq!((writer_rx.len(), budget.used()), (1, 500));
}

/// `decoderQueueBytes`: a large registration that does not fit the bytes waiting for the decoder is not handed
/// over (nor any of its bytes taken) until they fit.
#[test]
fn decoder_queue_bounded_by_bytes_takes_nothing_until_it_fits() {
    let (writer, _writer_rx) = queue(16, 0);
    let (decoder_tx, decoder_rx) = crossbeam_channel::bounded(256);
    let budget = Arc::new(crate::limit::ByteBudget::new(1000));
    let mut reactor = reactor_with(writer, decoder_tx, budget.clone());
    assert!(budget.try_take(600));
    let id = ConnId { reactor: 0, token: 0, gen: 1 };
    let reg = RemotingCommand::request(RequestCode::REGISTER_BROKER, 6).with_body(vec![b'{'; 500]);
    assert!(reactor.defer(0, id, "127.0.0.1:1".parse().unwrap(), &reg, std::time::Instant::now(), 0).is_err());
    assert_eq!((decoder_rx.len(), budget.used()), (0, 600));
    budget.release(600);
    reactor.defer(0, id, "127.0.0.1:1".parse().unwrap(), &reg, std::time::Instant::now(), 0).unwrap();
    assert_eq!((decoder_rx.len(), budget.used()), (1, 500));
}

/// A connection of this reactor over loopback, and the peer's end.
fn connection(reactor: &mut Reactor) -> (usize, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (ours, addr) = listener.accept().unwrap();
    ours.set_nonblocking(true).unwrap();
    let key = reactor.adopt(mio::net::TcpStream::from_std(ours), addr).expect("adopted");
    (key, peer)
}

/// A registration the decoder has no room for waits on its connection (which is not read meanwhile) and is handed
/// over once there is room; one that waited `PARK_LIMIT` is answered SYSTEM_BUSY, as it used to be at once.
#[test]
fn a_registration_without_room_waits_for_it_then_is_refused_after_the_limit() {
    let (writer, _writer_rx) = queue(16, 0);
    let (decoder_tx, decoder_rx) = crossbeam_channel::bounded(256);
    let budget = Arc::new(crate::limit::ByteBudget::new(1000));
    let mut reactor = reactor_with(writer, decoder_tx, budget.clone());
    let reg = |opaque| RemotingCommand::request(RequestCode::REGISTER_BROKER, opaque).with_body(vec![b'{'; 500]);
    assert!(budget.try_take(600));

    let (waits, _peer) = connection(&mut reactor);
    reactor.park(waits, reg(7), std::time::Instant::now());
    reactor.retry_parked();
    assert_eq!(decoder_rx.len(), 0, "still no room");
    assert!(reactor.conns[waits].parked.is_some() && reactor.conns[waits].output.is_empty());
    budget.release(600);
    reactor.retry_parked();
    assert_eq!((decoder_rx.len(), budget.used()), (1, 500), "handed over once it fits");
    assert!(reactor.conns[waits].parked.is_none() && reactor.conns[waits].deferred);
    assert!(reactor.parked.is_empty());

    let (late, mut peer) = connection(&mut reactor);
    assert!(budget.try_take(500), "full again");
    let long_ago = std::time::Instant::now().checked_sub(PARK_LIMIT + Duration::from_secs(1)).unwrap();
    reactor.park(late, reg(8), long_ago);
    reactor.retry_parked();
    assert!(reactor.conns[late].parked.is_none() && reactor.parked.is_empty());
    assert_eq!(decoder_rx.len(), 1, "nothing more handed over");
    let mut buf = bytes::BytesMut::new();
    let mut chunk = [0u8; 4096];
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let answer = loop {
        if let Some(cmd) = frame::decode(&mut buf, 1 << 20).unwrap() {
            break cmd;
        }
        let n = std::io::Read::read(&mut peer, &mut chunk).unwrap();
        assert!(n > 0, "the connection stays open");
        buf.extend_from_slice(&chunk[..n]);
    };
    assert_eq!((answer.code, answer.opaque), (ResponseCode::SYSTEM_BUSY, 8));
}

/// A decoded body shares the connection's input buffer: once the frame is handled, an emptied input that held a
/// big frame lets go of the buffer, so an idle broker connection does not pin its last body (~1.5 MB); after a
/// small frame the buffer is kept for the next request.
#[test]
fn an_emptied_input_lets_go_of_a_big_frame_only() {
    let (writer, _writer_rx) = queue(16, 0);
    let mut reactor = reactor_with(writer, crossbeam_channel::bounded(1).0, Default::default());
    let (key, _peer) = connection(&mut reactor);
    let conn = &mut reactor.conns[key];
    for (size, released) in [(conn::BIG_FRAME + 1, true), (100, false)] {
        let req = RemotingCommand::request(RequestCode::REGISTER_BROKER, 1).with_body(vec![b'{'; size]);
        frame::encode(&req, &mut conn.input);
        let cmd = frame::decode(&mut conn.input, 64 << 20).unwrap().expect("a whole frame");
        conn.big_frame |= cmd.body.len() > conn::BIG_FRAME;
        assert!(!cmd.body.is_unique(), "the body shares the input buffer");
        conn.release_input();
        assert_eq!(cmd.body.is_unique(), released, "a body of {size} bytes");
    }
}

/// A reactor whose decoder queue holds at most `cap` bytes, taking frames of up to 16 MiB, and one connection to it.
fn admitting_reactor(cap: usize) -> (Reactor, Arc<crate::limit::ByteBudget>, usize, std::net::TcpStream) {
    let (writer, _writer_rx) = queue(16, 0);
    let budget = Arc::new(crate::limit::ByteBudget::new(cap));
    let mut reactor = reactor_with(writer, crossbeam_channel::bounded(4).0, budget.clone());
    reactor.shared.settings.max_frame = 16 << 20;
    let (key, peer) = connection(&mut reactor);
    (reactor, budget, key, peer)
}

/// A frame of `body` bytes, encoded.
fn big_frame(body: usize) -> bytes::BytesMut {
    let req = RemotingCommand::request(RequestCode::GET_KV_CONFIG, 3).with_body(vec![b'x'; body]);
    let mut out = bytes::BytesMut::new();
    frame::encode(&req, &mut out);
    out
}

/// Reads `key` until `done` holds: loopback delivers what the peer wrote without a fixed delay, but not necessarily
/// before its write returns.
fn read_until(reactor: &mut Reactor, key: usize, done: impl Fn(&Reactor) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !done(reactor) {
        assert!(std::time::Instant::now() < deadline, "not reached within 5 s");
        reactor.on_readable(key, false);
        std::thread::yield_now();
    }
}

/// Decision 0027: a big frame is read past its start only once the decoder's queue has room for all of it; until
/// then the rest waits in the kernel. Admitted, it gets a buffer of its exact size and holds its room until it is
/// handled (here on the reactor, which gives it back).
#[test]
fn a_big_frame_is_read_only_once_the_decoders_queue_has_room_for_it() {
    let cap = 4 * conn::BIG_FRAME;
    let (mut reactor, budget, key, mut peer) = admitting_reactor(cap);
    let frame = big_frame(conn::BIG_FRAME + 1000);
    let total = frame.len();
    assert!(budget.try_take(cap), "the queue is full");
    std::io::Write::write_all(&mut peer, &frame[..200_000]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].input.len() >= 4);
    reactor.on_readable(key, false);
    let conn = &reactor.conns[key];
    assert!(conn.input.len() <= 64 * 1024, "only the first read's {} bytes are in", conn.input.len());
    assert!(conn.held && reactor.held.len() == 1, "waiting for room");
    assert_eq!((conn.admission, budget.used()), (Admission::Waiting, cap));
    assert!(conn.input.capacity() < total, "nothing reserved for it while it waits: {}", conn.input.capacity());
    reactor.retry_held();
    assert_eq!(reactor.metrics.held.load(Ordering::Relaxed), 1, "a frame that waited is counted once");

    budget.release(cap);
    reactor.on_readable(key, false);
    let conn = &reactor.conns[key];
    assert!(matches!(conn.admission, Admission::Taken { bytes, .. } if bytes == total));
    assert_eq!((budget.used(), conn.input.capacity()), (total, total), "its room taken, its buffer made to measure");
    std::io::Write::write_all(&mut peer, &frame[200_000..]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].input.is_empty());
    assert_eq!((reactor.conns[key].admission, budget.used()), (Admission::None, 0), "handled: its room given back");
}

/// A connection that closes in the middle of an admitted frame gives its room back.
#[test]
fn a_connection_closed_in_the_middle_of_an_admitted_frame_gives_its_room_back() {
    let (mut reactor, budget, key, mut peer) = admitting_reactor(4 * conn::BIG_FRAME);
    let frame = big_frame(conn::BIG_FRAME + 1000);
    std::io::Write::write_all(&mut peer, &frame[..100_000]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].input.len() >= 100_000);
    assert_eq!(budget.used(), frame.len());
    drop(peer);
    read_until(&mut reactor, key, |r| !r.conns.contains(key));
    assert_eq!(budget.used(), 0);
}

/// Runs the once-a-second tick at `now_ms`.
fn tick(reactor: &mut Reactor, now_ms: i64) {
    reactor.now_ms = now_ms;
    reactor.last_idle_check_ms = now_ms - 1000;
    reactor.close_idle();
}

/// Decision 0032: an admitted frame keeps its room only until its deadline (`frameReadTimeoutSeconds`, longer at
/// `frameMinBytesPerSecond` for a big one); past it the connection is closed, and its room and its buffer go with it.
/// The clock starts at the first tick that sees the frame unfinished.
#[test]
fn a_frame_past_its_deadline_closes_its_connection_and_gives_its_room_back() {
    let (mut reactor, budget, key, mut peer) = admitting_reactor(4 * conn::BIG_FRAME);
    let frame = big_frame(conn::BIG_FRAME + 1000);
    std::io::Write::write_all(&mut peer, &frame[..100_000]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].input.len() >= 100_000);
    assert_eq!(budget.used(), frame.len());
    let deadline = crate::limit::frame_deadline_ms(frame.len() as u64, 30_000, 256 * 1024);
    let t0 = reactor.now_ms;
    tick(&mut reactor, t0 + 1000);
    tick(&mut reactor, t0 + deadline);
    assert!(reactor.conns.contains(key), "not yet: the clock started at the first tick that saw it");
    tick(&mut reactor, t0 + 1000 + deadline);
    assert!(!reactor.conns.contains(key), "closed at its deadline");
    assert_eq!(budget.used(), 0, "its room given back");
}

/// The idle timeout counts whole frames, not bytes: a peer trickling a small frame a byte at a time is closed at the
/// frame deadline, while one that completes its frames is not; a frame completed restarts the clock.
#[test]
fn a_trickling_peer_is_closed_at_the_frame_deadline_a_progressing_one_is_not() {
    let (mut reactor, _budget, key, mut peer) = admitting_reactor(4 * conn::BIG_FRAME);
    let frame = big_frame(100);
    let t0 = reactor.now_ms;
    std::io::Write::write_all(&mut peer, &frame[..10]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].input.len() >= 10);
    tick(&mut reactor, t0 + 1000);
    // The rest of that frame and the start of another: progress, so the clock starts again.
    std::io::Write::write_all(&mut peer, &frame[10..]).unwrap();
    std::io::Write::write_all(&mut peer, &frame[..10]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].frames_done == 1 && r.conns[key].input.len() == 10);
    tick(&mut reactor, t0 + 30_500);
    assert!(reactor.conns.contains(key), "a frame completed within the deadline");
    for t in [31_500, 45_000, 61_000] {
        std::io::Write::write_all(&mut peer, &frame[10..11]).unwrap(); // a byte now and then is no progress
        tick(&mut reactor, t0 + t);
        reactor.on_readable(key, false);
    }
    tick(&mut reactor, t0 + 61_500);
    assert!(!reactor.conns.contains(key), "no whole frame within the deadline");
}

/// Frames between `SMALL_FRAME` and `BIG_FRAME` take their room too (a half-sent one holds at most one read outside
/// the budget), and the buffer made for one is let go once it is decoded, with its room.
#[test]
fn a_middle_sized_frame_is_admitted_and_its_buffer_goes_with_its_room() {
    let cap = 4 * conn::BIG_FRAME;
    let (mut reactor, budget, key, mut peer) = admitting_reactor(cap);
    let frame = big_frame(SMALL_FRAME + 30_000);
    assert!(budget.try_take(cap), "the queue is full");
    std::io::Write::write_all(&mut peer, &frame[..SMALL_FRAME + 10_000]).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].held);
    assert!(reactor.conns[key].input.len() <= 64 * 1024, "one read at most: {}", reactor.conns[key].input.len());
    budget.release(cap);
    std::io::Write::write_all(&mut peer, &frame[SMALL_FRAME + 10_000..]).unwrap();
    reactor.retry_held();
    read_until(&mut reactor, key, |r| r.conns[key].frames_done == 1);
    let conn = &reactor.conns[key];
    assert_eq!((budget.used(), conn.input.capacity()), (0, 0), "room and buffer given back together");
}

/// A frame longer than `maxFrameLength` is neither admitted nor held: its prefix closes the connection, as before.
#[test]
fn a_frame_over_the_limit_is_refused_not_held() {
    let (mut reactor, budget, key, mut peer) = admitting_reactor(4 * conn::BIG_FRAME);
    assert!(budget.try_take(1), "the queue has no room for a big frame");
    let too_long = (16u32 << 20) + 1;
    std::io::Write::write_all(&mut peer, &too_long.to_be_bytes()).unwrap();
    std::io::Write::write_all(&mut peer, &[0u8; 4096]).unwrap();
    read_until(&mut reactor, key, |r| !r.conns.contains(key));
    assert!(reactor.held.is_empty());
    assert_eq!(budget.used(), 1);
}

/// An admitted registration handed to the decoder keeps its body's share of the room until the decoder is done
/// (the decoder gives back `body.len()`), and its connection lets go of the buffer at once, so that the body's
/// memory is freed as soon as it is decoded rather than when the writer's reply comes back.
#[test]
fn an_admitted_registration_hands_its_room_and_its_buffer_to_the_decoder() {
    let (writer, _writer_rx) = queue(16, 0);
    let budget = Arc::new(crate::limit::ByteBudget::new(4 * conn::BIG_FRAME));
    let (decoder_tx, decoder_rx) = crossbeam_channel::bounded(4);
    let mut reactor = reactor_with(writer, decoder_tx, budget.clone());
    reactor.shared.settings.max_frame = 16 << 20;
    reactor.shared.settings.defer_bytes = 1;
    let (key, mut peer) = connection(&mut reactor);
    let body = conn::BIG_FRAME + 1000;
    let req = RemotingCommand::request(RequestCode::REGISTER_BROKER, 4).with_body(vec![b'{'; body]);
    let mut frame = bytes::BytesMut::new();
    frame::encode(&req, &mut frame);
    std::io::Write::write_all(&mut peer, &frame).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].deferred);
    let job = decoder_rx.try_recv().expect("handed to the decoder");
    assert_eq!(budget.used(), body, "the header's share given back, the body's kept for the decoder");
    assert!(job.request.body.is_unique(), "the connection holds no part of the body's buffer");
}

/// Held connections are admitted first held, first served; those still without room keep their places.
#[test]
fn held_connections_are_admitted_in_the_order_they_were_held() {
    let frame = big_frame(conn::BIG_FRAME + 1000);
    let (mut reactor, budget, first, mut first_peer) = admitting_reactor(frame.len());
    let (second, mut second_peer) = connection(&mut reactor);
    assert!(budget.try_take(1), "no room for a big frame");
    for (key, peer) in [(first, &mut first_peer), (second, &mut second_peer)] {
        std::io::Write::write_all(peer, &frame[..100_000]).unwrap();
        read_until(&mut reactor, key, |r| r.conns[key].held);
    }
    let gen = |k: usize, r: &Reactor| r.conns[k].gen;
    let order = vec![(first, gen(first, &reactor)), (second, gen(second, &reactor))];
    reactor.retry_held();
    assert_eq!(reactor.held, order, "no room: both wait, in their order");
    budget.release(1);
    reactor.retry_held();
    assert!(matches!(reactor.conns[first].admission, Admission::Taken { .. }));
    assert_eq!((reactor.held.as_slice(), reactor.conns[second].held), (&order[1..], true), "room for one only");
}

/// A big frame behind whole frames in the same read (a pipelining client) is not read on without room: reading
/// stops until those are decoded, and the big frame, then at the front, waits for its admission like any other.
#[test]
fn a_big_frame_behind_whole_frames_waits_for_room_too() {
    let cap = 4 * conn::BIG_FRAME;
    let (mut reactor, budget, key, mut peer) = admitting_reactor(cap);
    assert!(budget.try_take(cap), "the queue is full");
    let mut bytes = big_frame(100);
    let small = bytes.len();
    bytes.extend_from_slice(&big_frame(conn::BIG_FRAME + 1000)[..200_000]);
    std::io::Write::write_all(&mut peer, &bytes).unwrap();
    read_until(&mut reactor, key, |r| r.conns[key].held);
    let conn = &reactor.conns[key];
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    std::io::Read::read_exact(&mut peer, &mut [0u8; 4]).expect("the whole frame before it was answered");
    assert!(conn.input.len() <= 64 * 1024 - small, "read no further than the first read: {}", conn.input.len());
    assert_eq!((conn.admission, budget.used()), (Admission::Waiting, cap));
}
