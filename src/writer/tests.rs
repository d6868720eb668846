//! The writer driven directly, one batch at a time: what must hold whatever the reactors' timing.

use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::command::{Completion, Origin, Outcome, WriteCommand, WriteOp};
use super::{ReactorLink, Writer};
use crate::clock::ManualClock;
use crate::config::Config;
use crate::protocol::{RemotingCommand, RequestCode};
use crate::state::ConnId;

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
    WriteCommand { origin: Origin::new(conn, &req, std::net::Ipv4Addr::LOCALHOST.into(), None), op, bytes: 0 }
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
    let on_disk = crate::persist::load_kv(&dir.path().join("kvConfig.json")).unwrap();
    assert_eq!(on_disk.get("NS", "k"), None, "a KV write answered as failed is on disk");
    let snap = writer.cell.load();
    assert_eq!(snap.kv.get("NS", "k"), None);
    assert!(!snap.config.order_message_enable);
}
