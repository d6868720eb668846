//! The Raft storage against openraft's own storage test suite, and what the suite does not look at: reopening from
//! disk, a torn or damaged log, and a snapshot giving the same `ReplicasInfo` as the log it stands for.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{EntryPayload, Membership, RaftLogReader, RaftSnapshotBuilder, Vote};
use tempfile::TempDir;

use super::log_store::{LOG_FILE, META_FILE};
use super::state_machine::SNAPSHOT_FILE;
use super::{Entry, LogId, LogStore, LogStoreError, Proposal, StateMachine, StateMachineError, StorageError};
use crate::controller::event::Event;
use crate::controller::replicas::ReplicasInfo;

/// A log store and a state machine sharing a fresh directory, which lives as long as the guard.
struct FreshStores;

impl StoreBuilder<super::TypeConfig, LogStore, StateMachine, TempDir> for FreshStores {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::open(dir.path())?;
        let machine = StateMachine::open(dir.path())?;
        Ok((dir, log, machine))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(FreshStores).expect("openraft's storage suite");
}

fn log_id(term: u64, index: u64) -> LogId {
    openraft::testing::log_id(term, 1, index)
}

fn entry(term: u64, index: u64, events: Vec<Event>) -> Entry {
    Entry { log_id: log_id(term, index), payload: EntryPayload::Normal(Proposal { events, at_ms: None }) }
}

/// An entry as a leader of this version writes it: with its wall-clock time.
fn timed_entry(term: u64, index: u64, at_ms: i64, events: Vec<Event>) -> Entry {
    Entry { log_id: log_id(term, index), payload: EntryPayload::Normal(Proposal { events, at_ms: Some(at_ms) }) }
}

/// What a group's life puts in the log: ids applied for, a master elected, the set widened, an address moved, an
/// id cleaned, a second group.
fn scenario() -> Vec<Entry> {
    let apply_id = |group: &str, id, port| Event::ApplyBrokerId {
        cluster_name: "c".to_owned(),
        broker_name: group.to_owned(),
        broker_address: format!("127.0.0.1:{port}"),
        new_broker_id: id,
        register_check_code: format!("127.0.0.1:{port};1700000000000"),
    };
    let membership = Entry {
        log_id: log_id(1, 0),
        payload: EntryPayload::Membership(Membership::new(vec![BTreeSet::from([1, 2, 3])], None)),
    };
    vec![
        membership,
        entry(1, 1, vec![apply_id("g", 1, 9000)]),
        entry(1, 2, vec![apply_id("g", 2, 9001), apply_id("g", 3, 9002)]),
        entry(1, 3, vec![Event::ElectMaster { broker_name: "g".to_owned(), new_master: Some(1) }]),
        Entry { log_id: log_id(2, 4), payload: EntryPayload::Blank },
        entry(
            2,
            5,
            vec![Event::AlterSyncStateSet {
                broker_name: "g".to_owned(),
                new_sync_state_set: BTreeSet::from([1, 2, 3]),
            }],
        ),
        entry(
            2,
            6,
            vec![Event::UpdateBrokerAddress {
                cluster_name: "c".to_owned(),
                broker_name: "g".to_owned(),
                broker_address: "127.0.0.1:9100".to_owned(),
                broker_id: 2,
            }],
        ),
        entry(
            2,
            7,
            vec![Event::CleanBrokerData { broker_name: "g".to_owned(), broker_ids_to_clean: BTreeSet::from([3]) }],
        ),
        entry(2, 8, vec![apply_id("h", 1, 9200)]),
        timed_entry(
            2,
            9,
            1_700_000_000_123,
            vec![Event::ElectMaster { broker_name: "h".to_owned(), new_master: Some(1) }],
        ),
    ]
}

/// The leader's time in an entry is optional both ways: a log written before it reads, a proposal without it
/// writes the bytes it always did, and a node that does not know it reads an entry carrying it.
#[test]
fn the_leaders_time_in_an_entry_is_optional_both_ways() {
    let old: Proposal = serde_json::from_str(r#"{"events":[]}"#).expect("an entry written before the time");
    assert_eq!(old.at_ms, None);
    assert_eq!(serde_json::to_string(&Proposal::default()).expect("encodes"), r#"{"events":[]}"#);

    let elect = Event::ElectMaster { broker_name: "g".to_owned(), new_master: Some(2) };
    let new = Proposal { events: vec![elect], at_ms: Some(1_700_000_000_123) };
    let json = serde_json::to_string(&new).expect("encodes");
    assert!(json.contains(r#""at_ms":1700000000123"#), "{json}");
    assert_eq!(serde_json::from_str::<Proposal>(&json).expect("decodes"), new);
    /// A proposal as the nodes of the version before knew it.
    #[derive(serde::Deserialize)]
    struct Before {
        events: Vec<Event>,
    }
    let before: Before = serde_json::from_str(&json).expect("an older node reads it");
    assert_eq!(before.events, new.events);
}

/// `ReplicasInfo::apply` over the entries, as the pure core does it.
fn replayed(entries: &[Entry]) -> ReplicasInfo {
    let mut state = ReplicasInfo::new();
    for entry in entries {
        if let EntryPayload::Normal(proposal) = &entry.payload {
            proposal.events.iter().for_each(|event| state.apply(event));
        }
    }
    state
}

fn append(dir: &Path, entries: Vec<Entry>) {
    let mut log = LogStore::open(dir).expect("open");
    run_fut(async move { log.blocking_append(entries).await });
}

fn log_len(dir: &Path) -> u64 {
    fs::metadata(dir.join(LOG_FILE)).expect("log file").len()
}

#[test]
fn a_reopened_log_gives_back_its_entries_vote_and_committed_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    run_fut(async {
        log.blocking_append(scenario()).await?;
        log.save_vote(&Vote::new_committed(2, 1)).await?;
        log.save_committed(Some(log_id(2, 7))).await?;
        Ok(())
    });
    drop(log);

    let mut log = LogStore::open(dir.path()).unwrap();
    run_fut(async move {
        assert_eq!(log.try_get_log_entries(0..).await?, scenario());
        assert_eq!(log.read_vote().await?, Some(Vote::new_committed(2, 1)));
        assert_eq!(log.read_committed().await?, Some(log_id(2, 7)));
        let state = log.get_log_state().await?;
        assert_eq!((state.last_purged_log_id, state.last_log_id), (None, Some(log_id(2, 9))));
        Ok(())
    });
}

#[test]
fn truncate_and_purge_hold_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    run_fut(async move {
        log.blocking_append(scenario()).await?;
        log.truncate(log_id(2, 7)).await?;
        log.purge(log_id(1, 2)).await?;
        // After a truncate the log goes on from the cut.
        log.blocking_append([entry(3, 7, vec![])]).await?;
        Ok(())
    });

    let mut log = LogStore::open(dir.path()).unwrap();
    let expected: Vec<Entry> = scenario()[3..7].iter().cloned().chain([entry(3, 7, vec![])]).collect();
    run_fut(async move {
        assert_eq!(log.try_get_log_entries(0..).await?, expected);
        let state = log.get_log_state().await?;
        assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(1, 2)), Some(log_id(3, 7))));
        Ok(())
    });
}

#[test]
fn a_purge_cut_short_before_the_log_was_rewritten_is_finished_at_open() {
    let (purged, interrupted) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    append(purged.path(), scenario());
    let mut log = LogStore::open(purged.path()).unwrap();
    run_fut(async move { log.purge(log_id(1, 2)).await });
    // The crash came after the purged id was saved and before the log file was rewritten.
    append(interrupted.path(), scenario());
    fs::copy(purged.path().join(META_FILE), interrupted.path().join(META_FILE)).unwrap();

    assert_eq!(LogStore::open(interrupted.path()).unwrap().entries(..), scenario()[3..]);
    let log_file = |dir: &TempDir| fs::read(dir.path().join(LOG_FILE)).unwrap();
    assert_eq!(log_file(&interrupted), log_file(&purged), "the purged records are gone from the file too");
}

#[test]
fn a_torn_last_record_is_dropped_and_the_log_goes_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), scenario()[..4].to_vec());
    let whole = log_len(dir.path());
    append(dir.path(), scenario()[4..5].to_vec());
    // The crash cut the last append short: only part of its record reached the disk.
    let file = OpenOptions::new().write(true).open(dir.path().join(LOG_FILE)).unwrap();
    file.set_len(log_len(dir.path()) - 3).unwrap();
    drop(file);

    assert_eq!(LogStore::open(dir.path()).unwrap().entries(..), scenario()[..4]);
    assert_eq!(log_len(dir.path()), whole, "the torn bytes are cut at open");

    // The next append follows the last whole record, and a later open reads all of it.
    append(dir.path(), scenario()[4..].to_vec());
    assert_eq!(LogStore::open(dir.path()).unwrap().entries(..), scenario());
}

#[test]
fn a_zero_filled_tail_is_torn_too() {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), scenario()[..3].to_vec());
    let mut file = OpenOptions::new().append(true).open(dir.path().join(LOG_FILE)).unwrap();
    file.write_all(&[0; 100]).unwrap();
    drop(file);

    assert_eq!(LogStore::open(dir.path()).unwrap().entries(..), scenario()[..3]);
}

#[test]
fn damage_before_the_tail_is_an_error_not_a_loss() {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), scenario());
    let path = dir.path().join(LOG_FILE);
    let mut bytes = fs::read(&path).unwrap();
    bytes[20] ^= 0x55; // inside the first record's payload
    fs::write(&path, &bytes).unwrap();

    match LogStore::open(dir.path()) {
        Err(LogStoreError::Corrupt { offset: 0, reason, .. }) => assert!(reason.contains("checksum"), "{reason}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a damaged log opened"),
    }
}

#[test]
fn a_damaged_length_is_an_error_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), scenario());
    let path = dir.path().join(LOG_FILE);
    let mut bytes = fs::read(&path).unwrap();
    let first_len = u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
    let second = 12 + first_len;
    // Read as it stands, this length would run past the end of the file, like an append cut short.
    bytes[second..second + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&path, &bytes).unwrap();

    match LogStore::open(dir.path()) {
        Err(LogStoreError::Corrupt { offset, .. }) => assert_eq!(offset, second as u64),
        Err(e) => panic!("wrong error: {e}"),
        Ok(log) => panic!("opened with {} of {} entries", log.entries(..).len(), scenario().len()),
    }
}

#[test]
fn a_bad_meta_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(META_FILE), b"{\"vote\": 7").unwrap();
    assert!(matches!(LogStore::open(dir.path()), Err(LogStoreError::BadMeta { .. })));
}

#[test]
fn a_bad_snapshot_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(SNAPSHOT_FILE), b"{\"meta\": {}, \"replicas\": 3}").unwrap();
    assert!(matches!(StateMachine::open(dir.path()), Err(StateMachineError::BadFile { .. })));
}

#[test]
fn applying_the_log_gives_the_pure_cores_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut machine = StateMachine::open(dir.path()).unwrap();
    let mut machine = run_fut(async move {
        let answers = machine.apply(scenario()).await?;
        assert_eq!(answers.len(), scenario().len(), "one answer per entry");
        Ok(machine)
    });
    assert_eq!(machine.replicas(), &replayed(&scenario()));
    assert_ne!(machine.replicas(), &ReplicasInfo::new(), "the scenario registers groups");
    run_fut(async move {
        let (last_applied, membership) = machine.applied_state().await?;
        assert_eq!(last_applied, Some(log_id(2, 9)));
        assert_eq!(membership.log_id(), &Some(log_id(1, 0)));
        Ok(())
    });
}

#[test]
fn a_snapshot_installed_on_a_fresh_node_then_the_rest_of_the_log_gives_the_same_state() {
    let log = scenario();
    for cut in [1, 4, 6, log.len()] {
        let (leader_dir, follower_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut leader = StateMachine::open(leader_dir.path()).unwrap();
        let mut follower = StateMachine::open(follower_dir.path()).unwrap();
        let (head, tail) = (log[..cut].to_vec(), log[cut..].to_vec());
        let (leader, follower) = run_fut(async move {
            leader.apply(head).await?;
            let snapshot = leader.get_snapshot_builder().await.build_snapshot().await?;
            let mut received = follower.begin_receiving_snapshot().await?;
            *received = *snapshot.snapshot;
            follower.install_snapshot(&snapshot.meta, received).await?;
            assert_eq!(follower.applied_state().await?, leader.applied_state().await?);
            leader.apply(tail.clone()).await?;
            follower.apply(tail).await?;
            Ok((leader, follower))
        });
        assert_eq!(follower.replicas(), leader.replicas(), "cut at {cut}");
        assert_eq!(follower.replicas(), &replayed(&log), "cut at {cut}");

        // Reopened from its file, the follower is back at the snapshot; the log's tail brings it level again.
        let mut reopened = StateMachine::open(follower_dir.path()).unwrap();
        assert_eq!(reopened.replicas(), &replayed(&log[..cut]), "cut at {cut}");
        assert_eq!(reopened.last_applied(), Some(log[cut - 1].log_id));
        let rest = log[cut..].to_vec();
        let reopened = run_fut(async move {
            reopened.apply(rest).await?;
            Ok(reopened)
        });
        assert_eq!(reopened.replicas(), &replayed(&log), "cut at {cut}");
    }
}

#[test]
fn an_older_build_does_not_replace_a_newer_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut machine = StateMachine::open(dir.path()).unwrap();
    let log = scenario();
    let (head, tail) = (log[..3].to_vec(), log[3..].to_vec());
    run_fut(async move {
        machine.apply(head).await?;
        let mut early = machine.get_snapshot_builder().await;
        machine.apply(tail).await?;
        let late = machine.get_snapshot_builder().await.build_snapshot().await?;
        // The builder taken before the last applies finishes after the newer snapshot is stored.
        early.build_snapshot().await?;
        let current = machine.get_current_snapshot().await?.expect("a snapshot");
        assert_eq!(current.meta, late.meta);
        Ok(())
    });
    assert_eq!(StateMachine::open(dir.path()).unwrap().replicas(), &replayed(&scenario()));
}

/// Runs storage calls to the end on a runtime of their own.
fn run_fut<T>(f: impl std::future::Future<Output = Result<T, StorageError>>) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    runtime.block_on(f).unwrap_or_else(|e| panic!("storage call failed: {e}"))
}
