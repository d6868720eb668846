//! The checkers of the fault tests (`tests/jepsen/main.rs`, issue 48) proven on small hand-made histories: a clean
//! one passes, and each rule fails the history made to break it. The controller's checker is proven here, the
//! name-server fleet's in `fleet.rs`, the reader of Java's DLedger stores in `dledger_store.rs`. Runs in plain
//! `cargo test` (no peers needed). The modules under test are the fault test's own files (`../jepsen/`), compiled
//! into this binary too, so that these tests need neither root nor peers.

#[path = "../jepsen/checker.rs"]
mod checker;
#[path = "../jepsen/dledger.rs"]
mod dledger;
mod dledger_store;
mod fleet;
#[path = "../jepsen/fleet_check.rs"]
mod fleet_check;
#[path = "../jepsen/history.rs"]
mod history;
#[path = "../jepsen/raftlog.rs"]
mod raftlog;

use std::collections::BTreeSet;

use checker::{check, check_acks, check_raft_logs, Ack, Election, NodeLog, Violation};
use history::{Event, Replica};

const BOUND: u64 = 60_000;

/// A read of node `n0` sent at `at` and answered 10 ms later.
fn read(at: u64, master: i64, epoch: i64, sss: &[i64], sss_epoch: i64) -> Event {
    Event::Replica(Replica {
        node: "n0".into(),
        sent_ms: at,
        recv_ms: at + 10,
        master_id: master,
        master_addr: if master >= 0 { format!("10.0.0.{master}:10911") } else { String::new() },
        master_epoch: epoch,
        sss: sss.to_vec(),
        sss_epoch,
    })
}

fn route(at: u64, master: Option<i64>) -> Event {
    Event::Route { at_ms: at, master_addr: master.map(|m| format!("10.0.0.{m}:10911")) }
}

fn fault(at: u64, heal: u64) -> [Event; 2] {
    [
        Event::FaultStart { at_ms: at, nemesis: "kill-master".into(), target: "b1".into() },
        Event::FaultHeal { at_ms: heal, nemesis: "kill-master".into(), target: "b1".into() },
    ]
}

/// Master 1 with {1,2}; 1 is killed; 2 is elected (in the SyncStateSet), shrinks it to {2}; the route follows.
fn clean() -> Vec<Event> {
    let mut h = vec![read(0, 1, 1, &[1, 2], 2), route(5, Some(1))];
    h.extend(fault(100, 200));
    h.extend([read(300, 2, 2, &[2], 3), route(400, Some(2)), read(500, 2, 2, &[2, 1], 4)]);
    h
}

#[test]
fn a_clean_history_passes_and_reports_its_recovery() {
    let report = check(&clean(), BOUND);
    assert_eq!(report.violations, vec![]);
    assert_eq!((report.reads, report.elections_checked), (3, 1));
    assert_eq!(report.recovery_stats(None), Some((1, 200, 200)), "master 2 on both sides 200 ms after the heal");
}

#[test]
fn two_masters_with_one_epoch_fail() {
    let mut h = clean();
    h.push(read(600, 1, 2, &[1, 2], 5));
    let report = check(&h, BOUND);
    assert!(
        report.violations.contains(&Violation::TwoMastersOneEpoch { epoch: 2, masters: vec![1, 2] }),
        "{:?}",
        report.violations
    );
}

#[test]
fn two_states_with_one_sync_state_set_epoch_fail() {
    let mut h = clean();
    h.push(read(600, 2, 2, &[2, 3], 4));
    let report = check(&h, BOUND);
    assert!(
        report.violations.iter().any(|v| matches!(v, Violation::ForkedState { sss_epoch: 4, .. })),
        "{:?}",
        report.violations
    );
}

#[test]
fn a_read_older_than_one_answered_before_it_was_sent_fails() {
    let mut h = clean();
    // Sent at 600, after the read of epoch (2, 4) was answered at 510: a deposed leader's old state.
    h.push(read(600, 2, 2, &[2], 3));
    let report = check(&h, BOUND);
    assert!(
        report.violations.iter().any(|v| matches!(v, Violation::ReadWentBack { later, .. } if later.sent_ms == 600)),
        "{:?}",
        report.violations
    );
}

#[test]
fn overlapping_reads_may_see_either_state() {
    let mut h = clean();
    // Sent at 495, before the read of (2, 4) was answered (510): it may still see (2, 3).
    h.push(Event::Replica(Replica { sent_ms: 495, recv_ms: 700, ..replica(read(0, 2, 2, &[2], 3)) }));
    assert_eq!(check(&h, BOUND).violations, vec![]);
}

fn replica(e: Event) -> Replica {
    match e {
        Event::Replica(r) => r,
        _ => unreachable!(),
    }
}

#[test]
fn a_master_elected_outside_the_sync_state_set_fails() {
    // 2 was not in {1} when it was elected, with nothing in between (SyncStateSet epochs 2 then 3).
    let h = vec![read(0, 1, 1, &[1], 2), read(300, 2, 2, &[2], 3)];
    let report = check(&h, BOUND);
    assert!(
        report.violations.iter().any(|v| matches!(v, Violation::ElectedOutsideSyncStateSet { .. })),
        "{:?}",
        report.violations
    );
    // With states missed in between (epoch 2 then 4), the change cannot be judged: counted, not failed.
    let h = vec![read(0, 1, 1, &[1], 2), read(300, 2, 2, &[2], 4)];
    let report = check(&h, BOUND);
    assert_eq!((report.violations, report.elections_unverifiable), (vec![], 1));
}

#[test]
fn no_master_within_the_bound_after_a_heal_fails() {
    let mut h = vec![read(0, 1, 1, &[1], 2), route(5, Some(1))];
    h.extend(fault(100, 200));
    // After the heal: the controller has no master, then the route and the controller disagree.
    h.extend([read(300, -1, 2, &[1], 3), route(400, Some(1)), read(30_000, 2, 3, &[2], 4), route(61_000, Some(2))]);
    let report = check(&h, BOUND);
    assert!(
        report.violations.contains(&Violation::NoMasterAfterHeal {
            nemesis: "kill-master".into(),
            heal_ms: 200,
            waited_ms: BOUND
        }),
        "{:?}",
        report.violations
    );
    assert_eq!(report.recovery_stats(None), None);
}

#[test]
fn histories_round_trip_as_json_lines() {
    let h = clean();
    let text = history::to_json_lines(&h);
    let back: Vec<Event> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(back, h);
}

fn ack(n: u64, acked_ms: u64, broker: &str) -> Ack {
    Ack { n, acked_ms, broker: broker.into() }
}

/// Rule 6 with the storing broker, over `clean()`: broker 1 (10.0.0.1) is master at epoch 1 from the first read;
/// the read answered at 310 names broker 2 at epoch 2. A message broker 1 acknowledged after that, lost, is the
/// deposed master's; one broker 1 acknowledged before it, or one the master acknowledged, or one whose broker is
/// unknown, lost, is a violation.
#[test]
fn a_lost_message_only_a_deposed_master_acknowledged_is_reported_apart() {
    let h = clean();
    let b1 = "10.0.0.1:10911";
    let read_back: BTreeSet<u64> = [1].into();
    let mut report = check(&h, BOUND);
    check_acks(&[ack(1, 6_000, b1), ack(2, 6_000, b1)], &read_back, &h, &[], &mut report);
    assert_eq!(report.deposed_acks, vec![2]);
    assert!(!report.violations.iter().any(|v| matches!(v, Violation::LostMessages { .. })), "{:?}", report.violations);

    for (a, why) in [
        (ack(3, 250, b1), "acknowledged by broker 1 before the leader named broker 2"),
        (ack(3, 6_000, "10.0.0.2:10911"), "acknowledged by the master itself"),
        (ack(3, 6_000, "?"), "the storing broker unknown"),
    ] {
        let mut report = check(&h, BOUND);
        check_acks(&[a], &read_back, &h, &[], &mut report);
        assert!(report.deposed_acks.is_empty(), "{why}");
        assert!(report.violations.contains(&Violation::LostMessages { count: 1, first: vec![3] }), "{why}");
    }
}

/// Rule 6 against the controller's own election time. The seed-20261207 shape: broker 1 is cut from the controllers
/// at 1 000; the leader elects broker 2 at 11 000 (its log entry's time); the recorder's next answer naming broker 2
/// arrives at 11 200. Broker 1 goes on acknowledging alone until it learns it was replaced.
fn cut_then_elected() -> (Vec<Event>, Vec<Election>) {
    let mut h = vec![read(0, 1, 1, &[1, 2], 2), route(5, Some(1))];
    h.extend([
        Event::FaultStart { at_ms: 1_000, nemesis: "cut-master-from-controllers".into(), target: "b0".into() },
        read(10_990, 1, 1, &[1, 2], 2),
        read(11_190, 2, 2, &[2], 3),
    ]);
    let elections = vec![
        Election { at_ms: 0, master_addr: Some("10.0.0.1:10911".into()) },
        Election { at_ms: 11_000, master_addr: Some("10.0.0.2:10911".into()) },
    ];
    (h, elections)
}

/// One lost acknowledgement of broker 1 at `acked_ms`, judged with `elections`: (deposed, lost).
fn judge(acked_ms: u64, elections: &[Election]) -> (Vec<u64>, Vec<Violation>) {
    let (h, _) = cut_then_elected();
    let mut report = check(&h, BOUND);
    report.violations.clear();
    check_acks(&[ack(7, acked_ms, "10.0.0.1:10911")], &BTreeSet::new(), &h, elections, &mut report);
    (report.deposed_acks, report.violations)
}

#[test]
fn an_ack_after_the_election_entry_is_the_deposed_masters_even_before_the_recorder_saw_it() {
    let (_, elections) = cut_then_elected();
    // 22 ms after the entry, 178 ms before the recorder's answer naming broker 2 arrived.
    assert_eq!(judge(11_022, &elections), (vec![7], vec![]));
    let (h, _) = cut_then_elected();
    let mut report = check(&h, BOUND);
    check_acks(
        &[ack(7, 11_022, "10.0.0.1:10911"), ack(8, 11_250, "10.0.0.1:10911")],
        &[].into(),
        &h,
        &elections,
        &mut report,
    );
    assert_eq!((report.deposed_acks, report.deposed_before_recorder_saw), (vec![7, 8], 1), "8 came after the answer");
    // Judged by the recorder alone (Java's log carries no time) the same acknowledgement is a loss: the poll's lag.
    assert_eq!(judge(11_022, &[]), (vec![], vec![Violation::LostMessages { count: 1, first: vec![7] }]));
    assert_eq!(judge(11_250, &[]), (vec![7], vec![]), "after the recorder's answer, the recorder excuses it too");
}

#[test]
fn an_ack_before_the_election_entry_is_a_loss_though_the_master_was_already_cut() {
    let (_, elections) = cut_then_elected();
    let lost = vec![Violation::LostMessages { count: 1, first: vec![7] }];
    // 22 ms before the entry, 10 s after the cut: broker 1 was still the master the controller had named.
    assert_eq!(judge(10_978, &elections), (vec![], lost.clone()));
    // The boundary: in the election's own millisecond it is not excused; one millisecond later it is.
    assert_eq!(judge(11_000, &elections), (vec![], lost));
    assert_eq!(judge(11_001, &elections), (vec![7], vec![]));
    // An entry saying the master is gone with nobody elected deposes broker 1 as well.
    let gone = [elections[0].clone(), Election { at_ms: 11_000, master_addr: None }];
    assert_eq!(judge(11_022, &gone), (vec![7], vec![]));
}

/// Our Raft log's entries as openraft writes them (JSON), read for the elections with their leader's time.
#[test]
fn elections_are_read_from_the_committed_log_with_their_leaders_time() {
    let entry = |index: u64, payload: &str| {
        (index, format!(r#"{{"log_id":{{"leader_id":{{"term":1,"node_id":1}},"index":{index}}},"payload":{payload}}}"#))
    };
    let apply = |id: i64, port: u16| {
        format!(
            r#"{{"Normal":{{"events":[{{"ApplyBrokerId":{{"cluster_name":"c","broker_name":"g","broker_address":"10.0.0.{id}:{port}","new_broker_id":{id},"register_check_code":"x"}}}}],"at_ms":5}}}}"#
        )
    };
    let elect = |id: &str, at: u64| {
        format!(r#"{{"Normal":{{"events":[{{"ElectMaster":{{"broker_name":"g","new_master":{id}}}}}],"at_ms":{at}}}}}"#)
    };
    let entries = [
        entry(0, r#""Blank""#),
        entry(1, &apply(1, 10911)),
        entry(2, &elect("1", 100)),
        entry(3, &apply(2, 10911)),
        entry(4, r#"{"Normal":{"events":[{"ElectMaster":{"broker_name":"other","new_master":1}}],"at_ms":150}}"#),
        entry(5, &elect("null", 200)),
        entry(6, &elect("2", 300)),
        entry(7, &elect("1", 400)),
    ];
    // Through the files, as the fault test reads them: `raft-log` records and `raft-meta.json`'s committed id.
    let log = |committed: u64, entries: &[(u64, String)]| {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut bytes = Vec::new();
        for (_, e) in entries {
            let len = (e.len() as u32).to_le_bytes();
            bytes.extend(len);
            bytes.extend(crc32fast::hash(&len).to_le_bytes());
            bytes.extend(crc32fast::hash(e.as_bytes()).to_le_bytes());
            bytes.extend(e.as_bytes());
        }
        std::fs::write(dir.path().join("raft-log"), bytes).expect("write raft-log");
        let meta = format!(r#"{{"committed":{{"leader_id":{{"term":1,"node_id":1}},"index":{committed}}}}}"#);
        std::fs::write(dir.path().join("raft-meta.json"), meta).expect("write raft-meta.json");
        raftlog::read("n0", dir.path()).expect("reads")
    };
    let at = |ms: u64, addr: Option<&str>| (ms, addr.map(str::to_owned));
    // Entry 7 is not committed; another group's election is not this group's.
    assert_eq!(
        raftlog::elections(&log(6, &entries), "g"),
        vec![at(100, Some("10.0.0.1:10911")), at(200, None), at(300, Some("10.0.0.2:10911"))]
    );
    // An election without its time (a log of the version before), or naming an id whose address is gone: none.
    let mut untimed = entries.clone();
    untimed[5] = entry(5, r#"{"Normal":{"events":[{"ElectMaster":{"broker_name":"g","new_master":null}}]}}"#);
    assert_eq!(raftlog::elections(&log(6, &untimed), "g"), vec![]);
    assert_eq!(raftlog::elections(&log(6, &entries[2..]), "g"), vec![]);
}

#[test]
fn an_acknowledged_message_not_read_fails() {
    // Stored by the master of the whole history (broker 2, from 310 on).
    let acked: Vec<Ack> = [1, 2, 3, 5].map(|n| ack(n, 1_000, "10.0.0.2:10911")).to_vec();
    // 4 was never acknowledged (a failed send), so not reading it is fine; 3 was, and is lost.
    let read: BTreeSet<u64> = [1, 2, 5, 6].into();
    let mut report = check(&clean(), BOUND);
    check_acks(&acked, &read, &clean(), &[], &mut report);
    assert_eq!(report.violations, vec![Violation::LostMessages { count: 1, first: vec![3] }]);
    let mut report = check(&clean(), BOUND);
    check_acks(&acked, &[1, 2, 3, 5].into(), &clean(), &[], &mut report);
    assert_eq!(report.violations, vec![]);
}

fn node_log(node: &str, committed: Option<u64>, entries: &[(u64, &str)]) -> NodeLog {
    let entries = entries.iter().map(|(i, e)| (*i, e.to_string())).collect();
    NodeLog { node: node.into(), committed, purged: None, entries }
}

#[test]
fn raft_logs_that_agree_up_to_the_lowest_commit_pass() {
    // n2 is behind (committed 1) and n0 has an uncommitted entry 3 of a term that lost: neither is compared.
    let logs = [
        node_log("n0", Some(2), &[(0, "m"), (1, "a"), (2, "b"), (3, "x")]),
        node_log("n1", Some(2), &[(0, "m"), (1, "a"), (2, "b"), (3, "c")]),
        node_log("n2", Some(1), &[(0, "m"), (1, "a")]),
    ];
    let mut report = check(&clean(), BOUND);
    assert_eq!(check_raft_logs(&logs, &mut report), 2);
    assert_eq!(report.violations, vec![]);
}

#[test]
fn raft_logs_that_differ_below_the_commit_fail() {
    let logs = [
        node_log("n0", Some(2), &[(0, "m"), (1, "a"), (2, "b")]),
        node_log("n1", Some(2), &[(0, "m"), (1, "z"), (2, "b")]),
        node_log("n2", Some(2), &[(0, "m"), (1, "a")]),
    ];
    let mut report = check(&clean(), BOUND);
    assert_eq!(check_raft_logs(&logs, &mut report), 3);
    let at =
        |i: u64| report.violations.iter().find(|v| matches!(v, Violation::RaftLogsDiffer { index, .. } if *index == i));
    // Index 1 differs on n1; index 2 is missing on n2 although n2 says it committed it.
    assert!(
        matches!(at(1), Some(Violation::RaftLogsDiffer { entries, .. }) if entries[1] == ("n1".into(), Some("z".into())))
    );
    assert!(matches!(at(2), Some(Violation::RaftLogsDiffer { entries, .. }) if entries[2] == ("n2".into(), None)));
    assert_eq!(report.violations.len(), 2);
    // A purge moves the start: with everything up to 1 purged on n1, only index 2 is compared.
    let mut purged = logs.clone();
    purged[1] = NodeLog { purged: Some(1), ..node_log("n1", Some(2), &[(2, "b")]) };
    let mut report = check(&clean(), BOUND);
    assert_eq!(check_raft_logs(&purged, &mut report), 1);
    assert_eq!(report.violations.len(), 1, "n2 still lacks 2: {:?}", report.violations);
}

#[test]
fn failed_elections_under_one_sync_state_set_epoch_are_not_a_fork() {
    // Master 2 lost, nobody to elect: master epochs 3 and 5 with no master, the SyncStateSet and its epoch kept.
    let mut h = clean();
    h.extend([read(600, -1, 3, &[2, 1], 4), read(700, -1, 5, &[2, 1], 4)]);
    assert_eq!(check(&h, BOUND).violations, vec![]);
    // A masterless state at a lower master epoch than the master's, or with another set, is still a fork.
    for odd in [read(600, -1, 1, &[2, 1], 4), read(600, -1, 3, &[2], 4)] {
        let mut h = clean();
        h.push(odd);
        let report = check(&h, BOUND);
        assert!(
            report.violations.iter().any(|v| matches!(v, Violation::ForkedState { sss_epoch: 4, .. })),
            "{:?}",
            report.violations
        );
    }
}
