//! Reactor unit tests (the end-to-end ones are in tests/).

use std::sync::atomic::{AtomicBool, AtomicUsize};

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;

use super::deferral::PARK_LIMIT;
use super::*;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::writer::command::WriteOp;
use crate::writer::Writer;

/// A reactor (not running) whose writer queue and decoder queue the test controls.
fn reactor_with(
    writer: crate::writer::command::WriterQueue,
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
) -> (crate::writer::command::WriterQueue, crossbeam_channel::Receiver<Box<WriteCommand>>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    (crate::writer::command::WriterQueue { tx, bytes: Arc::new(crate::limit::ByteBudget::new(bytes)) }, rx)
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
    assert!(reactor.defer(0, id, "127.0.0.1:1".parse().unwrap(), &reg, std::time::Instant::now()).is_err());
    assert_eq!((decoder_rx.len(), budget.used()), (0, 600));
    budget.release(600);
    reactor.defer(0, id, "127.0.0.1:1".parse().unwrap(), &reg, std::time::Instant::now()).unwrap();
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
