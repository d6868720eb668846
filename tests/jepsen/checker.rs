//! The checker: rules over a recorded history (`history.rs`) that must hold whatever the nemesis did.
//!
//! 1. **One master per epoch**: every answer naming a master for epoch `e` names the same broker.
//! 2. **One state per SyncStateSet epoch**: two answers with the same `syncStateSetEpoch` carry the same master,
//!    master epoch and SyncStateSet (a fork of the replicated state shows up here), except for failed elections:
//!    a masterless state at a higher master epoch with the same SyncStateSet (`failed_elections_only`).
//! 3. **Reads never go back**: if one answer arrived before another request was sent, the later answer's
//!    `(masterEpoch, syncStateSetEpoch)` is not smaller. Our controllers serve 1004 on the leader only, after
//!    `ensure_linearizable`, so this is linearizability of reads; a deposed leader answering from an old state
//!    breaks it.
//! 4. **Elected from the SyncStateSet**: when the master changes between two states whose SyncStateSet epochs
//!    follow each other (nothing happened in between that the recorder missed), the new master was in the old
//!    SyncStateSet (unclean election is off). States further apart are counted as not verifiable.
//! 5. **A master again after every heal**, within `bound_ms`: the controller leader names a master and the name
//!    server routes to that same address. The times are reported (p50 / max).
//! 6. **No acknowledged message lost**: every message the producer saw SEND_OK for is read by a consumer that
//!    starts from the first offset once the faults are over (`allAckInSyncStateSet=true`: an acknowledged message
//!    is on every replica in the SyncStateSet, and only those can be elected). A lost message that a *deposed*
//!    master acknowledged — before the acknowledgement arrived, the controller had already replaced it — is
//!    reported apart (`Report::deposed_acks`), not counted: the Java broker goes on acknowledging as master until
//!    it learns it was replaced and then truncates what it took alone, whoever the controllers are
//!    (docs/reliability.md). *When* it was replaced is read from the controller's replicated log when the log
//!    carries the time (`Election`: ours, the leader's wall clock in each entry): exact to the millisecond. Without
//!    it (Java's DLedger entries and events carry no time) it is the first answer of the leader naming another
//!    master, which the recorder's 200 ms polls see up to one poll late.
//! 7. **The committed Raft log is the same on every node**: read from each node's files once they are stopped
//!    (`raftlog.rs`; Java's DLedger store: `dledger.rs`), every index from the highest purged one up to the lowest
//!    committed one is present on every node and is the same entry (term, leader, payload; DLedger: term, body)
//!    everywhere.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Event, Replica};

/// A broken rule, with what shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    TwoMastersOneEpoch {
        epoch: i64,
        masters: Vec<i64>,
    },
    ForkedState {
        sss_epoch: i64,
        states: Vec<String>,
    },
    ReadWentBack {
        earlier: Box<Replica>,
        later: Box<Replica>,
    },
    ElectedOutsideSyncStateSet {
        before: Box<Replica>,
        after: Box<Replica>,
    },
    NoMasterAfterHeal {
        nemesis: String,
        heal_ms: u64,
        waited_ms: u64,
    },
    LostMessages {
        count: usize,
        first: Vec<u64>,
    },
    /// Rule 7: at `index` (committed on every node) the nodes hold different entries, or one holds none.
    RaftLogsDiffer {
        index: u64,
        entries: Vec<(String, Option<String>)>,
    },
}

/// One node's Raft log as read from its files: the entries by index (as text, the same for the same entry on every
/// node: JSON for ours, term and body for DLedger), and its committed and purged indexes.
#[derive(Clone, Debug, Default)]
pub struct NodeLog {
    pub node: String,
    pub committed: Option<u64>,
    pub purged: Option<u64>,
    pub entries: BTreeMap<u64, String>,
}

/// Rule 7 over the logs of all nodes: adds a violation for each index (up to `KEEP`) committed everywhere on which
/// they differ; returns how many indexes were compared.
pub fn check_raft_logs(logs: &[NodeLog], report: &mut Report) -> u64 {
    let Some(upto) = logs.iter().map(|l| l.committed).min().flatten() else { return 0 };
    // Below every node's purged index some node no longer has the entries: compare only what all must still hold.
    let from = logs.iter().filter_map(|l| l.purged).max().map_or(0, |p| p + 1);
    let mut found = 0;
    for index in from..=upto {
        let entries: Vec<(String, Option<String>)> =
            logs.iter().map(|l| (l.node.clone(), l.entries.get(&index).cloned())).collect();
        let first = &entries[0].1;
        if first.is_none() || entries.iter().any(|(_, e)| e != first) {
            if found < KEEP {
                report.violations.push(Violation::RaftLogsDiffer { index, entries });
            }
            found += 1;
        }
    }
    (upto + 1).saturating_sub(from)
}

/// How long the group took to have a master again after one heal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    pub nemesis: String,
    pub heal_ms: u64,
    pub took_ms: u64,
}

#[derive(Debug, Default)]
pub struct Report {
    pub violations: Vec<Violation>,
    pub recoveries: Vec<Recovery>,
    /// Master changes checked against the SyncStateSet before them (rule 4), and those with states missed between.
    pub elections_checked: usize,
    pub elections_unverifiable: usize,
    pub reads: usize,
    /// Rule 6: lost messages a deposed master acknowledged (not violations; see the rule).
    pub deposed_acks: Vec<u64>,
    /// How many of `deposed_acks` only the election's entry excuses: acknowledged before the recorder's first answer
    /// naming the new master arrived (what the poll's lag would have counted as lost).
    pub deposed_before_recorder_saw: usize,
}

impl Report {
    /// The recoveries of one nemesis (all if `None`): (count, p50, max) in ms.
    pub fn recovery_stats(&self, nemesis: Option<&str>) -> Option<(usize, u64, u64)> {
        let mut took: Vec<u64> =
            self.recoveries.iter().filter(|r| nemesis.is_none_or(|n| n == r.nemesis)).map(|r| r.took_ms).collect();
        took.sort_unstable();
        let max = *took.last()?;
        Some((took.len(), took[(took.len() - 1) / 2], max))
    }
}

/// Only the first violations of a rule are kept: one is enough to fail, a few show the pattern.
const KEEP: usize = 5;

pub fn check(events: &[Event], bound_ms: u64) -> Report {
    let reads: Vec<&Replica> = events
        .iter()
        .filter_map(|e| match e {
            Event::Replica(r) => Some(r),
            _ => None,
        })
        .collect();
    let mut report = Report { reads: reads.len(), ..Report::default() };
    one_master_per_epoch(&reads, &mut report);
    let states = one_state_per_sss_epoch(&reads, &mut report);
    reads_never_go_back(&reads, &mut report);
    elected_from_sync_state_set(&states, &mut report);
    master_after_heal(events, bound_ms, &mut report);
    report
}

fn one_master_per_epoch(reads: &[&Replica], report: &mut Report) {
    let mut masters: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for r in reads.iter().filter(|r| r.master_id >= 0) {
        masters.entry(r.master_epoch).or_default().insert(r.master_id);
    }
    for (epoch, ids) in masters.into_iter().filter(|(_, ids)| ids.len() > 1).take(KEEP) {
        report.violations.push(Violation::TwoMastersOneEpoch { epoch, masters: ids.into_iter().collect() });
    }
}

/// The state a read shows, without who answered when.
fn state_of(r: &Replica) -> (i64, i64, Vec<i64>) {
    let mut sss = r.sss.clone();
    sss.sort_unstable();
    (r.master_id, r.master_epoch, sss)
}

/// Checks rule 2 and returns one read per SyncStateSet epoch, in epoch order.
fn one_state_per_sss_epoch<'a>(reads: &[&'a Replica], report: &mut Report) -> Vec<&'a Replica> {
    let mut by_epoch: BTreeMap<i64, Vec<&'a Replica>> = BTreeMap::new();
    for &r in reads {
        by_epoch.entry(r.sss_epoch).or_default().push(r);
    }
    let mut forks = 0;
    let mut states = Vec::new();
    for (sss_epoch, rs) in by_epoch {
        let distinct: BTreeSet<_> = rs.iter().map(|r| state_of(r)).collect();
        if distinct.len() > 1 && !failed_elections_only(&distinct) && forks < KEEP {
            forks += 1;
            let shown = distinct.iter().map(|s| format!("{s:?}")).collect();
            report.violations.push(Violation::ForkedState { sss_epoch, states: shown });
        }
        states.push(rs[0]);
    }
    states
}

/// Whether the states of one SyncStateSet epoch differ only by failed elections: an election that finds nobody
/// records a new master epoch with no master and keeps the SyncStateSet and its epoch (Java's controller and ours
/// alike). So: at most one state with a master, one SyncStateSet, and every masterless state at a higher master
/// epoch than the state with a master. Anything else under one SyncStateSet epoch is a fork.
fn failed_elections_only(states: &BTreeSet<(i64, i64, Vec<i64>)>) -> bool {
    let mastered: Vec<_> = states.iter().filter(|s| s.0 >= 0).collect();
    let sets: BTreeSet<&Vec<i64>> = states.iter().map(|s| &s.2).collect();
    let top = mastered.iter().map(|s| s.1).max();
    mastered.len() <= 1 && sets.len() == 1 && states.iter().filter(|s| s.0 < 0).all(|s| top.is_none_or(|t| s.1 > t))
}

fn key(r: &Replica) -> (i64, i64) {
    (r.master_epoch, r.sss_epoch)
}

fn reads_never_go_back(reads: &[&Replica], report: &mut Report) {
    // Sweep the reads in the order they were sent, taking in every read answered before that: the newest state
    // among them is what the read being looked at must not be older than.
    let mut by_recv: Vec<&Replica> = reads.to_vec();
    by_recv.sort_by_key(|r| r.recv_ms);
    let mut by_sent: Vec<&Replica> = reads.to_vec();
    by_sent.sort_by_key(|r| r.sent_ms);
    let mut newest: Option<&Replica> = None;
    let mut next = 0;
    let mut found = 0;
    for r in by_sent {
        while next < by_recv.len() && by_recv[next].recv_ms < r.sent_ms {
            if newest.is_none_or(|n| key(by_recv[next]) > key(n)) {
                newest = Some(by_recv[next]);
            }
            next += 1;
        }
        if let Some(n) = newest.filter(|n| key(r) < key(n)) {
            if found < KEEP {
                report
                    .violations
                    .push(Violation::ReadWentBack { earlier: Box::new(n.clone()), later: Box::new(r.clone()) });
            }
            found += 1;
        }
    }
}

fn elected_from_sync_state_set(states: &[&Replica], report: &mut Report) {
    for pair in states.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        if after.master_id < 0 || after.master_id == before.master_id {
            continue;
        }
        if after.sss_epoch != before.sss_epoch + 1 {
            report.elections_unverifiable += 1;
            continue;
        }
        report.elections_checked += 1;
        if !before.sss.contains(&after.master_id) {
            report.violations.push(Violation::ElectedOutsideSyncStateSet {
                before: Box::new(before.clone()),
                after: Box::new(after.clone()),
            });
        }
    }
}

fn master_after_heal(events: &[Event], bound_ms: u64, report: &mut Report) {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by_key(|e| e.at_ms());
    let end = sorted.last().map_or(0, |e| e.at_ms());
    for (i, e) in sorted.iter().enumerate() {
        let Event::FaultHeal { at_ms: heal, nemesis, .. } = e else { continue };
        // The newest controller answer and route at or after the heal; the group has a master when both name the
        // same one.
        let mut ctl: Option<&Replica> = None;
        let mut route: Option<&Option<String>> = None;
        let mut done = None;
        for later in &sorted[i + 1..] {
            if later.at_ms() > heal + bound_ms {
                break;
            }
            match later {
                Event::Replica(r) => ctl = Some(r),
                Event::Route { master_addr, .. } => route = Some(master_addr),
                _ => continue,
            }
            if let (Some(c), Some(Some(addr))) = (ctl, route) {
                if c.master_id >= 0 && c.master_addr == *addr {
                    done = Some(later.at_ms() - heal);
                    break;
                }
            }
        }
        match done {
            Some(took_ms) => {
                report.recoveries.push(Recovery { nemesis: nemesis.clone(), heal_ms: *heal, took_ms });
            }
            None => report.violations.push(Violation::NoMasterAfterHeal {
                nemesis: nemesis.clone(),
                heal_ms: *heal,
                waited_ms: (end.min(heal + bound_ms)).saturating_sub(*heal),
            }),
        }
    }
}

/// Rule 6: adds a violation naming the first lost messages, if any acknowledged one was not read.
/// One acknowledged send: its number, when its acknowledgement arrived (the run's ms) and the broker that stored
/// it (`?` when the client could not tell).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    pub n: u64,
    pub acked_ms: u64,
    pub broker: String,
}

/// One election of the group as the controller's committed log records it: when the leader decided it (the run's
/// ms, from the leader's wall clock in the entry) and the address of the master it named (`None`: the master is
/// gone and nobody replaced it), in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Election {
    pub at_ms: u64,
    pub master_addr: Option<String>,
}

/// Rule 6 with the storing broker known: a lost message acknowledged by a broker other than the group's master at
/// the time the acknowledgement arrived goes to `deposed_acks`; every other lost message is a violation. The
/// acknowledgement, not the send, is what counts: a send made to the master just before a pause of it is stored and
/// acknowledged only when it resumes, deposed by then.
///
/// The master at that time is that of the last of `elections` decided strictly before it (an acknowledgement in the
/// same millisecond as the election is not excused). With no such election (none given: Java's log carries no time;
/// or the log was purged past them) it is the master of the highest epoch the leader had named in an answer that
/// arrived by then.
pub fn check_acks(acks: &[Ack], read: &BTreeSet<u64>, events: &[Event], elections: &[Election], report: &mut Report) {
    let mut lost = Vec::new();
    for a in acks.iter().filter(|a| !read.contains(&a.n)) {
        let recorded = events
            .iter()
            .filter_map(|e| match e {
                Event::Replica(r) if r.recv_ms <= a.acked_ms && r.master_id >= 0 => Some(r),
                _ => None,
            })
            .max_by_key(|r| (r.master_epoch, r.recv_ms))
            .map(|r| Some(r.master_addr.as_str()));
        // `Some(None)`: the controller had recorded that the group lost its master and nobody replaced it.
        let by_log = elections.iter().rfind(|e| e.at_ms < a.acked_ms).map(|e| e.master_addr.as_deref());
        let other = |master: Option<Option<&str>>| master.is_some_and(|m| m != Some(a.broker.as_str()));
        let deposed = a.broker != "?" && other(by_log.or(recorded));
        if deposed {
            report.deposed_acks.push(a.n);
            if !other(recorded) {
                report.deposed_before_recorder_saw += 1;
            }
        } else {
            lost.push(a.n);
        }
    }
    if !lost.is_empty() {
        report
            .violations
            .push(Violation::LostMessages { count: lost.len(), first: lost.into_iter().take(20).collect() });
    }
}
