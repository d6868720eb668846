use std::collections::BTreeMap;
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, EntryPayload, LogId};

use super::*;

fn map(entries: &[(&str, &str, &str)]) -> KvMap {
    let mut m = KvMap::new();
    for (ns, k, v) in entries {
        m.entry(ns.to_string()).or_default().insert(k.to_string(), v.to_string());
    }
    m
}

fn machine(
    dir: &Path,
    local: KvMap,
) -> (KvMachine, crossbeam_channel::Receiver<Box<WriteCommand>>, Arc<KvRaftMetrics>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let metrics = Arc::new(KvRaftMetrics::default());
    let sink = Sink { writer: tx, waiting: Waiting::default(), me: 1 };
    let m = KvMachine::open(dir, KvTable::from_map(local), sink, metrics.clone()).unwrap();
    (m, rx, metrics)
}

fn entry(index: u64, command: KvCommand) -> Entry {
    let log_id = LogId::new(CommittedLeaderId::new(1, 1), index);
    openraft::Entry { log_id, payload: EntryPayload::Normal(KvEntry { command, proposer: 2, proposal: index }) }
}

fn put(ns: &str, k: &str, v: &str) -> KvCommand {
    KvCommand::Put { namespace: ns.into(), key: k.into(), value: Some(v.into()) }
}

/// What the writer would hold after the writes sent to it.
fn writer_after(start: KvMap, rx: &crossbeam_channel::Receiver<Box<WriteCommand>>) -> KvMap {
    let mut table = KvTable::from_map(start);
    for c in rx.try_iter() {
        assert!(c.origin.request.is_oneway(), "another node's change answers nobody here");
        apply_op(&mut table, &c.op);
    }
    table.to_map()
}

#[test]
fn differing_files_the_seed_wins_and_every_differing_key_is_reported() {
    let local = KvTable::from_map(map(&[("ORDER", "t1", "a:4"), ("ORDER", "t2", "a:8"), ("X", "only-here", "1")]));
    let seed = map(&[("ORDER", "t1", "a:4"), ("ORDER", "t2", "a:4;b:4"), ("Y", "only-there", "2")]);
    let (ops, keys) = differences(&local, &seed);
    assert_eq!(keys, vec!["ORDER/t2", "Y/only-there", "X/only-here"], "same value: not reported");
    let mut after = local.clone();
    ops.iter().for_each(|op| apply_op(&mut after, op));
    let mut want = seed.clone();
    want.insert("X".into(), BTreeMap::new()); // an emptied namespace stays, as DELETE_KV_CONFIG leaves it
    assert_eq!(after.to_map(), want);
    assert_eq!(differences(&KvTable::from_map(seed.clone()), &seed), (vec![], vec![]), "equal: nothing to do");
}

#[tokio::test]
async fn only_the_first_seed_counts_and_writes_apply_in_log_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = map(&[("ORDER", "t1", "mine")]);
    let (mut m, rx, metrics) = machine(dir.path(), file.clone());
    let first = map(&[("ORDER", "t1", "leader's")]);
    let entries = vec![
        entry(1, KvCommand::Seed { table: first.clone() }),
        entry(2, KvCommand::Seed { table: map(&[("ORDER", "t1", "second leader's")]) }),
        entry(3, put("ORDER", "t2", "v")),
        entry(4, KvCommand::Delete { namespace: "ORDER".into(), key: "t1".into() }),
    ];
    m.apply(entries).await.unwrap();
    let want = map(&[("ORDER", "t2", "v")]);
    assert_eq!(m.state.table, want);
    assert!(m.state.seeded && metrics.seeded.load(Relaxed));
    assert_eq!(metrics.differing_keys.load(Relaxed), 1, "ORDER/t1 differed from the first seed");
    assert_eq!(writer_after(file, &rx), want, "the writer ends where the replicated table is");
}

#[tokio::test]
async fn an_installed_snapshot_brings_the_writer_to_it_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut m, rx, _) = machine(dir.path(), KvMap::new());
    let state = KvState { seeded: true, table: map(&[("NS", "k", "v"), ("NS", "k2", "v2")]) };
    let meta = Meta {
        last_log_id: Some(LogId::new(CommittedLeaderId::new(2, 1), 40)),
        last_membership: StoredMembership::default(),
        snapshot_id: "2-1-40".into(),
    };
    let data = serde_json::to_vec(&state).unwrap();
    m.install_snapshot(&meta, Box::new(Cursor::new(data))).await.unwrap();
    assert_eq!(writer_after(KvMap::new(), &rx), state.table, "an empty disk catches up from the snapshot");
    drop(m);
    // A restart whose kvConfig.json lost a key (written before a crash, say) gets it back from the snapshot.
    let (mut again, rx, metrics) = machine(dir.path(), map(&[("NS", "k", "v")]));
    assert_eq!(again.applied_state().await.unwrap().0, meta.last_log_id);
    assert_eq!(writer_after(map(&[("NS", "k", "v")]), &rx), state.table);
    assert_eq!(metrics.differing_keys.load(Relaxed), 1);
}

#[tokio::test]
async fn the_waiting_client_is_answered_by_the_apply_on_its_own_node_only() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let waiting = Waiting::default();
    let sink = Sink { writer: tx, waiting: waiting.clone(), me: 2 };
    let mut m = KvMachine::open(dir.path(), KvTable::default(), sink, Arc::default()).unwrap();
    let req = crate::protocol::RemotingCommand::request(crate::protocol::RequestCode::PUT_KV_CONFIG, 7);
    let origin = Origin::new(ConnId { reactor: 0, token: 3, gen: 1 }, &req, std::net::Ipv4Addr::LOCALHOST.into(), None);
    waiting.lock().unwrap().insert(5, origin.clone());
    m.apply(vec![entry(5, put("NS", "k", "v"))]).await.unwrap();
    let sent = rx.try_recv().unwrap();
    assert_eq!((sent.origin.conn, sent.origin.request.opaque), (origin.conn, 7), "the client's own origin");
    assert!(waiting.lock().unwrap().is_empty(), "taken: nobody else answers it");
}
