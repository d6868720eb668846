//! Reactor unit tests (the end-to-end ones are in tests/).

use super::*;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::writer::command::WriteOp;
use crate::writer::Writer;

/// Invariant 4: a full writer queue is answered with SYSTEM_BUSY at once; the reactor never blocks on it.
#[test]
fn full_writer_queue_answers_system_busy() {
    let config = Arc::new(Config::default());
    let cell = Arc::new(ArcSwap::from_pointee(Writer::initial_snapshot(Default::default(), config)));
    let (writer, writer_rx) = crossbeam_channel::bounded(1);
    let (events, _events_rx) = crossbeam_channel::unbounded();
    let (_inbox_tx, inbox) = crossbeam_channel::unbounded();
    let id = ConnId { reactor: 0, token: 0, gen: 1 };
    let filler = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER, 1);
    let op = WriteOp::WipeWritePerm { broker_name: "b".into() };
    writer
        .try_send(Box::new(WriteCommand {
            origin: Origin::new(id, &filler, std::net::Ipv4Addr::LOCALHOST.into(), None),
            op,
        }))
        .unwrap();
    let shared = Shared {
        cell,
        writer,
        events,
        clock: Arc::new(SystemClock),
        started_ms: 0,
        max_frame: 1024,
        route_cache_bytes: 0,
        decoder: crossbeam_channel::bounded(1).0,
        defer_bytes: 0,
        idle_ms: 0,
        max_connections: 0,
        open_connections: Arc::new(AtomicUsize::new(0)),
        max_pending_write: 16 * 1024 * 1024,
        slow_reader_close_ms: 0,
        shutdown: Arc::new(AtomicBool::new(false)),
        draining: Arc::new(AtomicBool::new(false)),
        go_away: false,
        peers: Arc::new(Vec::new()),
        next_reactor: Arc::new(AtomicUsize::new(0)),
        tls: Arc::new(crate::tls::TlsSetup::disabled()),
        acl: None,
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let reactor = Reactor::new(0, Poll::new().unwrap(), listener, inbox, shared, Default::default()).unwrap();
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
