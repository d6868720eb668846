//! The writer driven directly, one batch at a time: what must hold whatever the reactors' timing.

use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{ReactorLink, Writer};
use crate::clock::ManualClock;
use crate::config::Config;
use crate::protocol::{RemotingCommand, RequestCode};
use crate::state::ConnId;
use crate::write_command::{Completion, Origin, Outcome, RegisterBody, WriteCommand, WriteOp};

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

    let outcomes: Vec<Outcome> = inbox
        .try_iter()
        .filter_map(|c| match c {
            Completion::Done { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
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
