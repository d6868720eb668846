//! The writer driven directly, one batch at a time: what must hold whatever the reactors' timing.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::Writer;
use crate::clock::ManualClock;
use crate::config::Config;
use crate::protocol::{RemotingCommand, RequestCode};
use crate::state::ConnId;
use crate::write_command::{Completion, Origin, Outcome, ReactorLink, RegisterBody, WriteCommand, WriteOp};

/// A writer with one reactor link (whose inbox the test reads) and its files in `dir`.
fn writer_in(dir: &Path, config_store: &Path) -> (Writer, crossbeam_channel::Receiver<Completion>, mio::Poll) {
    let config = Config {
        kv_config_path: dir.join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: config_store.to_string_lossy().into_owned(),
        ..Config::default()
    };
    let config = Arc::new(config);
    let cell = Arc::new(ArcSwap::from_pointee(Writer::initial_snapshot(Default::default(), config.clone())));
    let poll = mio::Poll::new().unwrap();
    let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    let links = vec![ReactorLink { inbox: tx, waker }];
    let writer = Writer::new(Default::default(), config, cell, links, ManualClock::new(0), Default::default());
    (writer, rx, poll)
}

fn command(code: i32, op: WriteOp) -> WriteCommand {
    let conn = ConnId { reactor: 0, token: 1, gen: 1 };
    let req = RemotingCommand::request(code, 7);
    WriteCommand {
        origin: Origin::new(conn, &req, std::net::Ipv4Addr::LOCALHOST.into(), None),
        op,
        bytes: 0,
        decoded_with: None,
    }
}

/// A KV put and a config update in one batch; the config file cannot be written. Both are answered as failed,
/// and the KV file must not hold the put (it was written before the config save failed).
#[test]
fn a_failed_config_save_takes_the_batchs_kv_write_back_off_disk() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("config-is-a-directory");
    std::fs::create_dir_all(blocked.join("x")).unwrap();
    let (mut writer, inbox, _poll) = writer_in(dir.path(), &blocked);
    let put = WriteOp::PutKv { namespace: "NS".into(), key: "k".into(), value: Some("v".into()) };
    let update = WriteOp::UpdateConfig { pairs: vec![("orderMessageEnable".into(), "true".into())] };
    let mut batch = vec![command(RequestCode::PUT_KV_CONFIG, put), command(RequestCode::UPDATE_NAMESRV_CONFIG, update)];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    let outcomes = done_outcomes(&inbox);
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::NotDurable(_))), "{outcomes:?}");
    // DurableError::Config: the remark names the config file, not the KV file that was written.
    let says = format!("persist config to {} failed", blocked.display());
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::NotDurable(r) if r.starts_with(&says))), "{outcomes:?}");
    let on_disk = crate::persist::load_kv(&dir.path().join("kvConfig.json")).unwrap();
    assert_eq!(on_disk.get("NS", "k"), None, "a KV write answered as failed is on disk");
    let snap = writer.cell.load();
    assert_eq!(snap.kv.get("NS", "k"), None);
    assert!(!snap.config.order_message_enable);
}

/// A registration decoded on the decoder thread with `snapshot`, or on a reactor (`None`).
fn register(name: &str, topics: &[&str], snapshot: Option<Arc<crate::state::Snapshot>>) -> WriteCommand {
    let reg = crate::state::routes::test_util::reg("c", name, 0, &format!("{name}:10911"), topics, 1);
    let op = WriteOp::RegisterBroker(Box::new(reg), RegisterBody::Decoded { mark: None, version: 0 });
    WriteCommand { decoded_with: snapshot, ..command(RequestCode::REGISTER_BROKER, op) }
}

/// Decision 0026: once applied, a body the decoder thread decoded goes back to it to be dropped there, and the
/// snapshot the decode read is let go here, so this thread frees what its publish replaced. A reactor's body is
/// dropped here.
#[test]
fn a_decoders_body_goes_back_to_it_and_its_snapshot_is_let_go_by_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _inbox, _poll) = writer_in(dir.path(), &dir.path().join("namesrv.properties"));
    let (to_decoder, spent) = crossbeam_channel::bounded(8);
    let mut writer = writer.with_spent(to_decoder);
    let read = writer.cell.load_full();
    let mut batch = vec![register("b1", &["t1", "t2"], Some(read.clone())), register("b2", &["t3", "t4"], None)];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    let back: Vec<Vec<String>> =
        spent.try_iter().map(|topics| topics.iter().map(|t| t.topic_name.to_string()).collect()).collect();
    assert_eq!(back, vec![vec!["t1".to_string(), "t2".to_string()]], "only the decoder's body goes back");
    assert!(!Arc::ptr_eq(&read, &writer.cell.load_full()), "the registrations published a newer snapshot");
    assert_eq!(Arc::strong_count(&read), 1, "the writer still holds the snapshot the decode read");
    let names: Vec<String> = writer.cell.load().routes.topic_names().map(|t| t.to_string()).collect();
    assert_eq!(names, ["t1", "t2", "t3", "t4"]);
}

/// The config file is written escaped: even a value with line breaks (which 318 refuses before it gets here) stays
/// one value, and the file reads back to the configuration the writer published, with the same keys.
#[test]
fn the_config_file_is_written_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.properties");
    let (mut writer, _inbox, _poll) = writer_in(dir.path(), &file);
    let value = "center\naclEnable=true\nkvConfigPath=/elsewhere/kv.json\n#\\ \u{e9}\u{1F600}";
    let pairs = vec![("productEnvName".to_string(), value.to_string())];
    let mut batch = vec![command(RequestCode::UPDATE_NAMESRV_CONFIG, WriteOp::UpdateConfig { pairs })];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    let text = std::fs::read_to_string(&file).unwrap();
    let published = writer.cell.load().config.clone();
    assert_eq!(published.product_env_name, value);
    let keys = |pairs: Vec<(String, String)>| pairs.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(crate::protocol::props::parse(&text).unwrap()), keys(published.persisted_entries()), "{text}");
    let (read, _) = Config::from_file(&file).unwrap();
    assert_eq!(read.product_env_name, value, "{text}");
    assert_eq!(read.kv_config_path, published.kv_config_path);
    assert!(!read.acl_enable);
}

/// A save that an earlier process did not finish left `<file>.tmp.<pid>.<n>`: gone once a writer for that file
/// exists, before it saves anything; look-alikes stay.
#[test]
fn a_new_writer_removes_stale_temp_files_of_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.properties");
    for name in ["namesrv.properties.tmp.4242.0", "namesrv.properties.tmp.4242", "other.tmp.1.1"] {
        std::fs::write(dir.path().join(name), "productEnvName=half\n").unwrap();
    }
    let _writer = writer_in(dir.path(), &file);
    assert!(!dir.path().join("namesrv.properties.tmp.4242.0").exists());
    assert!(dir.path().join("namesrv.properties.tmp.4242").exists() && dir.path().join("other.tmp.1.1").exists());
}

// The writer's rules, one test each: what a batch applies and in which order, when it publishes, and when the
// replies go. Each would fail if its rule were broken; none waits on a timer.

/// A writer with one reactor link per inbox of `inboxes` (so a test can make one a rendezvous channel), its manual
/// clock, and the feed on.
struct Rig {
    writer: Writer,
    clock: Arc<ManualClock>,
    feed: Arc<crate::feed::Feed>,
    _polls: Vec<mio::Poll>,
}

fn rig(dir: &Path, inboxes: Vec<crossbeam_channel::Sender<Completion>>) -> Rig {
    let config = Arc::new(Config {
        kv_config_path: dir.join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.join("namesrv.properties").to_string_lossy().into_owned(),
        ..Config::default()
    });
    let cell = Arc::new(ArcSwap::from_pointee(Writer::initial_snapshot(Default::default(), config.clone())));
    // One `Poll` per reactor link, as each reactor has its own (a `Poll` takes one `Waker`).
    let polls: Vec<mio::Poll> = inboxes.iter().map(|_| mio::Poll::new().unwrap()).collect();
    let links = inboxes
        .into_iter()
        .zip(&polls)
        .map(|(inbox, poll)| ReactorLink {
            inbox,
            waker: Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap()),
        })
        .collect();
    let clock = ManualClock::new(0);
    let feed = Arc::new(crate::feed::Feed::new(1 << 15, 0));
    let writer =
        Writer::new(Default::default(), config, cell, links, clock.clone(), Default::default()).with_feed(feed.clone());
    Rig { writer, clock, feed, _polls: polls }
}

/// A rig with one reactor whose inbox the test reads.
fn one_reactor(dir: &Path) -> (Rig, crossbeam_channel::Receiver<Completion>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    (rig(dir, vec![tx]), rx)
}

const CONN: ConnId = ConnId { reactor: 0, token: 1, gen: 1 };

/// `op` as request `code` with `opaque`, from `conn`.
fn command_from(conn: ConnId, code: i32, opaque: i32, op: WriteOp) -> WriteCommand {
    let req = RemotingCommand::request(code, opaque);
    WriteCommand {
        origin: Origin::new(conn, &req, std::net::Ipv4Addr::LOCALHOST.into(), None),
        op,
        bytes: 0,
        decoded_with: None,
    }
}

/// Broker `name` of cluster `c` at `name:10911` registering `topics` on `conn`.
fn registration(conn: ConnId, opaque: i32, name: &str, topics: &[&str]) -> WriteCommand {
    let mut reg = crate::state::routes::test_util::reg("c", name, 0, &format!("{name}:10911"), topics, 1);
    reg.conn = Some(conn);
    let op = WriteOp::RegisterBroker(Box::new(reg), RegisterBody::Decoded { mark: None, version: 0 });
    command_from(conn, RequestCode::REGISTER_BROKER, opaque, op)
}

fn unregistration(conn: ConnId, opaque: i32, name: &str) -> WriteCommand {
    let u = crate::state::routes::test_util::unreg("c", name, 0, &format!("{name}:10911"));
    command_from(conn, RequestCode::UNREGISTER_BROKER, opaque, WriteOp::UnregisterBroker(u))
}

fn heartbeat(conn: ConnId, opaque: i32, name: &str) -> WriteCommand {
    let op = WriteOp::BrokerHeartbeat { cluster: "c".into(), addr: format!("{name}:10911") };
    command_from(conn, RequestCode::BROKER_HEARTBEAT, opaque, op)
}

fn published_topics(writer: &Writer) -> Vec<String> {
    writer.cell.load().routes.topic_names().map(|t| t.to_string()).collect()
}

/// The opaques of the `Done` completions in `inbox`, in the order they were sent.
fn replied(inbox: &crossbeam_channel::Receiver<Completion>) -> Vec<i32> {
    inbox
        .try_iter()
        .filter_map(|c| match c {
            Completion::Done { request, .. } => Some(request.opaque),
            _ => None,
        })
        .collect()
}

/// The outcomes of the `Done` completions in `inbox`, in the order they were sent.
fn done_outcomes(inbox: &crossbeam_channel::Receiver<Completion>) -> Vec<Outcome> {
    inbox
        .try_iter()
        .filter_map(|c| match c {
            Completion::Done { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect()
}

fn feed_changes(feed: &crate::feed::Feed) -> Vec<crate::feed::Change> {
    match feed.read(0, usize::MAX) {
        crate::feed::Read::Events(events) => events.iter().map(|e| e.change.clone()).collect(),
        other => panic!("the feed lost events: {other:?}"),
    }
}

/// Invariant 1: a reply leaves only once the snapshot holding its effect is published, and once the change is in
/// the feed. Reactor 1's inbox is a rendezvous channel, so the writer, having handed reactor 0 its reply, stops
/// there until the test takes reactor 1's: whatever it had not done before the first reply, it has still not done
/// when the test looks.
#[test]
fn a_reply_leaves_only_after_the_publish_and_the_feed_hold_its_effect() {
    let dir = tempfile::tempdir().unwrap();
    let (to_0, inbox_0) = crossbeam_channel::unbounded();
    let (to_1, inbox_1) = crossbeam_channel::bounded(0);
    let Rig { writer, feed, .. } = rig(dir.path(), vec![to_0, to_1]);
    let cell = writer.cell.clone();
    let before = cell.load().generation;
    let on_1 = ConnId { reactor: 1, token: 1, gen: 1 };
    let mut batch = vec![registration(CONN, 1, "b1", &["t1", "t2"]), heartbeat(on_1, 2, "b1")];
    let mut writer = writer;
    let applying = std::thread::spawn(move || {
        writer.apply_batch(&mut batch, &mut Vec::new(), false);
        writer
    });

    let first = inbox_0.recv().unwrap();
    // Looked at while the writer waits to hand over the second reply; asserted once it is free again.
    let snapshot = cell.load_full();
    let in_feed = feed_changes(&feed);
    let second = inbox_1.recv().unwrap();
    applying.join().unwrap();

    assert!(matches!(first, Completion::Done { request, .. } if request.opaque == 1));
    assert!(matches!(second, Completion::Done { request, .. } if request.opaque == 2));
    assert!(snapshot.generation > before, "a reply left before its publish");
    let names: Vec<String> = snapshot.routes.topic_names().map(|t| t.to_string()).collect();
    assert_eq!(names, ["t1", "t2"], "the snapshot published before the reply lacks the registration");
    assert!(
        in_feed
            .iter()
            .any(|c| matches!(c, crate::feed::Change::BrokerRegistered { broker_name, .. } if broker_name == "b1")),
        "a reply left before its change was in the feed: {in_feed:?}"
    );
}

/// The commands of one batch are applied in the order they arrived, and their replies go in that order: register,
/// unregister, register again with other topics leaves the last registration's topics.
#[test]
fn a_batch_is_applied_and_answered_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, .. }, inbox) = one_reactor(dir.path());
    let mut batch = vec![
        registration(CONN, 1, "b1", &["t1", "t2"]),
        unregistration(CONN, 2, "b1"),
        registration(CONN, 3, "b1", &["t3", "t4"]),
    ];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    assert_eq!(published_topics(&writer), ["t3", "t4"]);
    assert_eq!(replied(&inbox), [1, 2, 3]);
}

/// Commands before connection events: a registration and the close of its own connection in one batch leave the
/// broker evicted, never registered after its connection is gone.
#[test]
fn a_batch_applies_its_commands_before_the_connection_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, .. }, inbox) = one_reactor(dir.path());
    let mut batch = vec![registration(CONN, 1, "b1", &["t1", "t2"])];
    let mut events = vec![crate::write_command::ConnEvent::Closed(CONN)];
    writer.apply_batch(&mut batch, &mut events, false);

    assert!(!writer.tables.is_live("c", "b1:10911"), "the registration outlived its connection's close");
    assert_eq!(published_topics(&writer), Vec::<String>::new());
    assert_eq!(replied(&inbox), [1], "the registration is still answered");
}

/// Heartbeats and QUERY_DATA_VERSION change nothing readable: the batch publishes no snapshot, yet is answered.
#[test]
fn a_batch_that_changes_nothing_readable_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, .. }, inbox) = one_reactor(dir.path());
    writer.apply_batch(&mut vec![registration(CONN, 1, "b1", &["t1", "t2"])], &mut Vec::new(), false);
    let (generation, publishes) = (writer.cell.load().generation, writer.metrics.publishes.load(Relaxed));
    let query = WriteOp::QueryDataVersion { cluster: "c".into(), addr: "b1:10911".into(), data_version: None };
    let mut batch = vec![heartbeat(CONN, 2, "b1"), command_from(CONN, RequestCode::QUERY_DATA_VERSION, 3, query)];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    assert_eq!(writer.cell.load().generation, generation, "an unchanged batch published");
    assert_eq!(writer.metrics.publishes.load(Relaxed), publishes);
    assert_eq!(replied(&inbox), [1, 2, 3]);
}

/// One-way requests are applied but get no completion (and so no bytes).
#[test]
fn a_one_way_request_is_applied_but_not_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, .. }, inbox) = one_reactor(dir.path());
    let mut oneway = registration(CONN, 1, "b1", &["t1", "t2"]);
    oneway.origin.request.flag |= crate::protocol::command::FLAG_ONEWAY;
    writer.apply_batch(&mut vec![oneway, heartbeat(CONN, 2, "b1")], &mut Vec::new(), false);

    assert_eq!(published_topics(&writer), ["t1", "t2"]);
    assert_eq!(replied(&inbox), [2]);
}

/// A KV change whose file cannot be written is rolled back, answered as failed, and never reaches the feed.
#[test]
fn a_kv_change_that_is_not_durable_never_reaches_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, feed, .. }, inbox) = one_reactor(dir.path());
    std::fs::create_dir_all(dir.path().join("kvConfig.json").join("x")).unwrap();
    let put = WriteOp::PutKv { namespace: "NS".into(), key: "k".into(), value: Some("v".into()) };
    let mut batch =
        vec![registration(CONN, 1, "b1", &["t1", "t2"]), command_from(CONN, RequestCode::PUT_KV_CONFIG, 2, put)];
    writer.apply_batch(&mut batch, &mut Vec::new(), false);

    let outcomes = done_outcomes(&inbox);
    assert!(matches!(outcomes[..], [Outcome::Registered(Some(_)), Outcome::NotDurable(_)]), "{outcomes:?}");
    let changes = feed_changes(&feed);
    assert!(!changes.iter().any(|c| matches!(c, crate::feed::Change::KvPut { .. })), "{changes:?}");
    assert!(changes.iter().any(|c| matches!(c, crate::feed::Change::BrokerRegistered { .. })), "{changes:?}");
}

/// The expiry scan evicts a broker past its timeout (120 s by default), publishes its removal, asks its reactor to
/// close the connection and tells the feed why; a broker within its timeout stays.
#[test]
fn the_expiry_scan_evicts_a_silent_broker_and_closes_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { mut writer, clock, feed, .. }, inbox) = one_reactor(dir.path());
    writer.apply_batch(&mut vec![registration(CONN, 1, "b1", &["t1", "t2"])], &mut Vec::new(), false);
    clock.advance_ms(60_000);
    writer.apply_batch(&mut Vec::new(), &mut Vec::new(), true);
    assert_eq!(published_topics(&writer), ["t1", "t2"], "evicted within its timeout");
    inbox.try_iter().for_each(drop);

    clock.advance_ms(100_000);
    writer.apply_batch(&mut Vec::new(), &mut Vec::new(), true);
    assert!(!writer.tables.is_live("c", "b1:10911"));
    assert_eq!(published_topics(&writer), Vec::<String>::new());
    let closes: Vec<ConnId> = inbox
        .try_iter()
        .filter_map(|c| match c {
            Completion::Close { conn } => Some(conn),
            _ => None,
        })
        .collect();
    assert_eq!(closes, [CONN]);
    let removed = feed_changes(&feed)
        .into_iter()
        .filter_map(|c| match c {
            crate::feed::Change::BrokerRemoved { broker_name, cause, .. } => Some((broker_name, cause)),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(removed, [("b1".to_string(), "expired")]);
    assert_eq!(writer.metrics.expiry_scans.load(Relaxed), 2);
}

/// Inputs for `Writer::run` over channels the test fills first; the command channel is closed once filled, so
/// `run` returns when it has applied everything.
struct Queued {
    inputs: super::WriterInputs,
    _keep: (crossbeam_channel::Sender<crate::write_command::ConnEvent>, crossbeam_channel::Sender<()>),
    _ask: crossbeam_channel::Sender<crate::write_command::LiveQuery>,
}

fn queued(commands: Vec<WriteCommand>, events: Vec<crate::write_command::ConnEvent>) -> Queued {
    let (to_writer, from_reactors) = crossbeam_channel::unbounded();
    for c in commands {
        to_writer.send(Box::new(c)).unwrap();
    }
    drop(to_writer);
    let (close, closes) = crossbeam_channel::unbounded();
    for e in events {
        close.send(e).unwrap();
    }
    let (stop_tx, stop) = crossbeam_channel::bounded(1);
    let (ask, live_queries) = crossbeam_channel::bounded(1);
    Queued {
        inputs: super::WriterInputs {
            commands: from_reactors,
            events: closes,
            stop,
            live_queries,
            imports: crossbeam_channel::never(),
        },
        _keep: (close, stop_tx),
        _ask: ask,
    }
}

/// A batch holds at most `MAX_BATCH` commands (so the first command's reply waits for at most that many): one
/// more than that, all queued before the writer starts, take two batches.
#[test]
fn a_batch_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { writer, .. }, inbox) = one_reactor(dir.path());
    let metrics = writer.metrics.clone();
    let n = super::MAX_BATCH as i32 + 1;
    let q = queued((1..=n).map(|i| heartbeat(CONN, i, "b1")).collect(), Vec::new());
    writer.run(q.inputs);

    assert_eq!(metrics.commands.load(Relaxed), n as u64);
    assert_eq!(metrics.batches.load(Relaxed), 2, "{n} commands in one batch");
    assert_eq!(replied(&inbox), (1..=n).collect::<Vec<_>>());
}

/// A full batch may leave older commands queued, so connection events wait for them: a registration queued behind
/// a full batch is applied before its connection's close that arrived meanwhile, and the close still evicts it.
#[test]
fn a_close_waits_for_the_commands_a_full_batch_left_queued() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { writer, feed, .. }, _inbox) = one_reactor(dir.path());
    let cell = writer.cell.clone();
    let mut commands: Vec<WriteCommand> = (1..=super::MAX_BATCH as i32).map(|i| heartbeat(CONN, i, "b0")).collect();
    commands.push(registration(CONN, 0, "b1", &["t1", "t2"]));
    let q = queued(commands, vec![crate::write_command::ConnEvent::Closed(CONN)]);
    writer.run(q.inputs);

    let names: Vec<String> = cell.load().routes.topic_names().map(|t| t.to_string()).collect();
    assert_eq!(names, Vec::<String>::new(), "the registration was applied after its connection's close");
    let removed = feed_changes(&feed)
        .into_iter()
        .filter(|c| matches!(c, crate::feed::Change::BrokerRemoved { cause: "connection_closed", .. }))
        .count();
    assert_eq!(removed, 1);
}

/// … but for a few rounds at most: with commands always queued, a close is applied by the ninth batch, not after
/// every queued command.
#[test]
fn a_close_waits_a_few_batches_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let (Rig { writer, feed, .. }, _inbox) = one_reactor(dir.path());
    let batch = super::MAX_BATCH;
    let mut commands = vec![registration(CONN, 0, "b1", &["t1", "t2"])];
    commands.extend((1..10 * batch).map(|i| {
        let op = WriteOp::WipeWritePerm { broker_name: format!("w{i}") };
        command_from(CONN, RequestCode::WIPE_WRITE_PERM_OF_BROKER, i as i32, op)
    }));
    let q = queued(commands, vec![crate::write_command::ConnEvent::Closed(CONN)]);
    writer.run(q.inputs);

    let changes = feed_changes(&feed);
    let wiped_before = changes
        .iter()
        .take_while(|c| !matches!(c, crate::feed::Change::BrokerRemoved { .. }))
        .filter(|c| matches!(c, crate::feed::Change::WritePermWiped { .. }))
        .count();
    // The registration and 9 × 1024 − 1 wipes make nine batches; the close follows them.
    assert_eq!(wiped_before, 9 * batch - 1, "the close was held back for {wiped_before} commands");
}

/// The name server's tables saved as the warm-restart file holds them, and read back.
fn saved_file(writer: &Writer) -> Vec<crate::warm::Saved> {
    let bytes = crate::warm::encode(&writer.tables.export_cut().export());
    crate::warm::decode(&bytes, 1 << 24, 1 << 24).unwrap()
}

/// The expiry scan at `clock`'s time; whether `b1` is still served afterwards.
fn served_after_scan(writer: &mut Writer) -> bool {
    writer.apply_batch(&mut Vec::new(), &mut Vec::new(), true);
    writer.tables.is_live("c", "b1:10911") && published_topics(writer) == ["t1", "t2"]
}

/// A broker last heard from at T, replayed half its timeout (120 s by default) later, is served, and the expiry scan
/// takes it just after T + timeout — when it would have gone without the restart — not a timeout after the restart.
#[test]
fn a_warm_restart_expires_a_silent_broker_a_timeout_after_it_was_last_heard_from() {
    const T: i64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let (Rig { writer: mut before, clock, .. }, _inbox) = one_reactor(&dir.path().join("before"));
    clock.advance_ms(T);
    before.apply_batch(&mut vec![registration(CONN, 1, "b1", &["t1", "t2"])], &mut Vec::new(), false);
    clock.advance_ms(60_000);
    let saved = saved_file(&before);
    assert_eq!(saved.iter().map(|s| s.last_update_ms).collect::<Vec<_>>(), [Some(T)]);

    let (Rig { writer: mut after, clock, .. }, _inbox) = one_reactor(&dir.path().join("after"));
    clock.advance_ms(T + 60_000);
    assert_eq!(after.warm_start(saved), (1, 0));
    assert_eq!(published_topics(&after), ["t1", "t2"], "served after the restart");
    assert_eq!(after.metrics.provisional_brokers.load(Relaxed), 1);
    clock.advance_ms(60_000);
    assert!(served_after_scan(&mut after), "an entry at its deadline survives the scan, as in Java");
    clock.advance_ms(1);
    assert!(!served_after_scan(&mut after), "still served at T + timeout + 1");
    assert_eq!(published_topics(&after), Vec::<String>::new());
    assert_eq!(after.metrics.provisional_brokers.load(Relaxed), 0);
}

/// A broker silent for longer than its timeout when the name server restarts is not served at all.
#[test]
fn a_warm_restart_does_not_replay_a_broker_whose_timeout_has_passed() {
    const T: i64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let (Rig { writer: mut before, clock, .. }, _inbox) = one_reactor(&dir.path().join("before"));
    clock.advance_ms(T);
    before.apply_batch(&mut vec![registration(CONN, 1, "b1", &["t1", "t2"])], &mut Vec::new(), false);
    let saved = saved_file(&before);

    let (Rig { writer: mut after, clock, .. }, _inbox) = one_reactor(&dir.path().join("after"));
    clock.advance_ms(T + 120_000 + 1);
    assert_eq!(after.warm_start(saved), (0, 1));
    assert!(!after.tables.is_live("c", "b1:10911"));
    assert_eq!(published_topics(&after), Vec::<String>::new());
    assert_eq!(after.metrics.provisional_brokers.load(Relaxed), 0);
}

/// A file written before the last-update time was kept replays as it did: each broker as of the restart, served
/// until a timeout after it.
#[test]
fn a_warm_restart_file_without_last_update_times_replays_as_of_the_restart() {
    const R: i64 = 5_000_000;
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = bytes::BytesMut::new();
    let reg = crate::state::routes::test_util::reg("c", "b1", 0, "b1:10911", &["t1", "t2"], 1);
    crate::protocol::frame::encode(&crate::registration::encode_register(&reg, 0), &mut bytes);
    let saved = crate::warm::decode(&bytes, 1 << 24, 1 << 24).unwrap();
    assert_eq!(saved.iter().map(|s| s.last_update_ms).collect::<Vec<_>>(), [None]);

    let (Rig { mut writer, clock, .. }, _inbox) = one_reactor(dir.path());
    clock.advance_ms(R);
    assert_eq!(writer.warm_start(saved), (1, 0));
    assert_eq!(published_topics(&writer), ["t1", "t2"]);
    clock.advance_ms(120_000);
    assert!(served_after_scan(&mut writer), "gone before a timeout after the restart");
    clock.advance_ms(1);
    assert!(!served_after_scan(&mut writer));
}
