//! Issue 48, first increment: our RIP-44 controller under partitions, pauses and crashes, with a checker.
//!
//! The test builds its own network (`net.rs`: a bridge, one namespace per host), runs three controller nodes of
//! ours, a name server of ours and two Java 5.5.0 brokers of one group in controller mode (`allAckInSyncStateSet=true`)
//! each in its own namespace, records what every controller and the name server say (`recorder.rs`), applies
//! faults chosen from a seed one after the other, each healed after a while, and checks the history
//! (`checker.rs`, rules listed there). The history is written to `target/tmp/jepsen/history-<seed>.jsonl`.
//!
//! `JEPSEN_SEED` (default 48) picks the faults and their lengths; `JEPSEN_SECONDS` (default 100) is how long new faults
//! are started (the last one is still healed and waited for); `JEPSEN_PARTIAL=1` adds the partial cut of the master
//! broker from the controllers; `JEPSEN_NEMESES=a,b` runs only the nemeses named; `JEPSEN_CONTROLLERS=java` runs three
//! Java 5.5.0 controllers (DLedger) in the controller namespaces instead of ours, everything else the same, for the
//! side-by-side comparison; `JEPSEN_NAMESRV_BIN` runs another build of ours (a `fault-*` feature); `JEPSEN_KEEP=1`
//! keeps the run's files. Needs root (namespaces) and nftables. docs/reliability.md.

#[path = "../support/mod.rs"]
mod support;

mod checker;
mod clients;
mod cluster;
mod dledger;
mod fleet;
mod fleet_check;
mod history;
mod nemeses;
mod net;
mod raftlog;
mod recorder;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cluster::{JavaBroker, Proc, CLUSTER, CTL_PORT, NS_PORT};
use history::Event;
use namesrv::test_support::protocol::code::ControllerRequestCode as C;
use nemeses::{nemeses, Nemesis};
use net::Net;
use recorder::ask;
use recorder::{Log, Recorder};
use support::interop::{serial, step};
use support::rng::Rng;

const TOPIC: &str = "JepsenTopic";

/// The longest the group may go without a master after a heal (rule 5), and the longest the test waits for it.
const RECOVERY_BOUND: Duration = Duration::from_secs(90);

/// Everything the run made. Fields drop in order: the processes go before the network they live in.
struct World {
    nodes: Vec<Proc>,
    brokers: Vec<JavaBroker>,
    ns: Proc,
    log: Log,
    t0: Instant,
    net: Net,
}

impl World {
    /// The node every running node that answers agrees leads, and that says so itself.
    fn leader_now(&self) -> Option<usize> {
        let named: Vec<Option<String>> = self
            .nodes
            .iter()
            .map(|n| {
                let r = ask(n.addr(), C::CONTROLLER_GET_METADATA_INFO, &[], Duration::from_millis(800))?;
                r.ext("controllerLeaderId").map(str::to_owned)
            })
            .collect();
        let leader = named.iter().flatten().next()?.clone();
        let agreeing = named.iter().filter(|n| n.as_deref() == Some(leader.as_str())).count();
        let index = self.nodes.iter().position(|n| n.name == leader)?;
        let says = ask(self.nodes[index].addr(), C::CONTROLLER_GET_METADATA_INFO, &[], Duration::from_millis(800))
            .is_some_and(|r| r.ext("isLeader") == Some("true"));
        (agreeing >= 2 && says).then_some(index)
    }

    /// Waits for a leader a majority names (bounded: a missing leader is a failure of the run).
    fn leader(&self) -> usize {
        support::eventually_some_every(RECOVERY_BOUND, Duration::from_millis(100), || self.leader_now())
            .unwrap_or_else(|| panic!("no controller leader within {RECOVERY_BOUND:?}\n{}", self.logs()))
    }

    /// The leader's view of the group, if it answers.
    fn replica_now(&self) -> Option<history::Replica> {
        let leader = self.leader_now()?;
        let r = recorder::replica_info(self.nodes[leader].addr())?;
        recorder::parse_replica("", 0, 0, &r)
    }

    /// The leader's view of the group: (master address, SyncStateSet size), if it answers and names a master.
    fn group(&self) -> Option<(String, usize)> {
        let replica = self.replica_now()?;
        (replica.master_id >= 0).then_some((replica.master_addr, replica.sss.len()))
    }

    /// The group is whole: a master the controller and the name server agree on, both brokers in sync.
    fn whole(&self) -> bool {
        let ns = self.ns.addr();
        matches!(self.group(), Some((master, 2)) if recorder::route_master(ns).ok().flatten().as_deref() == Some(master.as_str()))
    }

    /// Waits until the group is whole; how long it took, or `None` after `RECOVERY_BOUND` (the checker judges).
    fn wait_whole(&self) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < RECOVERY_BOUND {
            if self.whole() {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    fn master_broker(&self) -> Option<usize> {
        let (master, _) = self.group()?;
        self.brokers.iter().position(|b| b.addr_string() == master)
    }

    fn fault(&self, start: bool, nemesis: Nemesis, target: &str) {
        let (at_ms, nemesis, target) = (self.log.now_ms(), nemesis.name().to_string(), target.to_string());
        step(self.t0, &format!("{} {nemesis} {target}", if start { "FAULT" } else { "HEAL " }));
        self.log.push(if start {
            Event::FaultStart { at_ms, nemesis, target }
        } else {
            Event::FaultHeal { at_ms, nemesis, target }
        });
    }

    /// Waits until both brokers list `TOPIC` (GET_ALL_TOPIC_CONFIG, 21): the slave copies its master's topics on
    /// a timer (10 s), and a failover before that would leave the new master without the topic.
    fn wait_topic_everywhere(&self) {
        let has_topic = |b: &JavaBroker| {
            let addr: SocketAddr = b.addr_string().parse().expect("broker address");
            ask(addr, 21, &[], Duration::from_secs(2))
                .is_some_and(|r| r.code == 0 && String::from_utf8_lossy(&r.body).contains(&format!("\"{TOPIC}\"")))
        };
        let both = support::eventually_every(Duration::from_secs(60), Duration::from_millis(200), || {
            self.brokers.iter().all(has_topic)
        });
        assert!(both, "both brokers to have {TOPIC} within 60 s\n{}", self.logs());
    }

    fn logs(&self) -> String {
        let mut s: String = self.nodes.iter().map(|n| n.log_tail(30) + "\n").collect();
        s.push_str(&self.ns.log_tail(10));
        for b in &self.brokers {
            s.push('\n');
            s.push_str(&b.log_tail(20));
        }
        s
    }
}

/// The producer's acknowledged sends ("ACK i start end broker", epoch ms) on the run's clock.
fn acks(file: &std::path::Path, log: &Log) -> Vec<checker::Ack> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("ACK ")?.split_whitespace();
            let n = f.next()?.parse().ok()?;
            // Without its time an acknowledgement counts as at the run's start: no read precedes it, never excused.
            let acked_ms = f.nth(1).and_then(|t| t.parse().ok()).map_or(0, |t| log.run_ms(t));
            let broker = f.next().unwrap_or("?").to_string();
            Some(checker::Ack { n, acked_ms, broker })
        })
        .collect()
}

/// Whether the history has, sent after `after_ms`, an answer of the leader naming a master and a route to it.
fn recorded_master_after(events: &[Event], after_ms: u64) -> bool {
    let masters: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Replica(r) if r.sent_ms > after_ms && r.master_id >= 0 => Some(r.master_addr.as_str()),
            _ => None,
        })
        .collect();
    events.iter().any(|e| {
        matches!(e, Event::Route { at_ms, master_addr: Some(a) } if *at_ms > after_ms && masters.contains(&a.as_str()))
    })
}

/// Writes the history when dropped: at the end of the run, and also when it panics, for inspection.
struct HistoryFile {
    log: Log,
    path: std::path::PathBuf,
}

impl Drop for HistoryFile {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, history::to_json_lines(&self.log.snapshot()));
    }
}

/// Polls `f` every 200 ms (it reads files the clients write) until it holds or `limit` passes.
fn within(limit: Duration, f: impl FnMut() -> bool) -> bool {
    support::eventually_every(limit, Duration::from_millis(200), f)
}

fn env_u64(key: &str, default: u64) -> u64 {
    match std::env::var(key) {
        Ok(v) => v.parse().unwrap_or_else(|e| panic!("{key}={v}: {e}")),
        Err(_) => default,
    }
}

/// The fault tests build one network with fixed names and addresses (`net.rs`), so they take turns. `serial()`
/// keys its lock by the caller's file: called here, it is one lock for this binary's tests wherever they live.
fn one_fault_test_at_a_time() -> support::interop::Serial {
    serial()
}

/// Whose controllers run: `JEPSEN_CONTROLLERS=java` for Java 5.5.0's, anything else (or unset) for ours.
fn java_controllers() -> bool {
    match std::env::var("JEPSEN_CONTROLLERS") {
        Ok(v) if v == "java" => true,
        Ok(v) if v.is_empty() || v == "ours" => false,
        Ok(v) => panic!("JEPSEN_CONTROLLERS={v}: expected `ours` or `java`"),
        Err(_) => false,
    }
}

#[test]
#[ignore = "real peer: Java 5.5.0 brokers in network namespaces (root, nftables)"]
fn controllers_keep_one_master_per_epoch_under_partitions_pauses_and_crashes() {
    let _serial = one_fault_test_at_a_time();
    let seed = env_u64("JEPSEN_SEED", 48);
    let seconds = env_u64("JEPSEN_SECONDS", 100);
    let java = java_controllers();
    let who = if java { "java" } else { "ours" };
    let t0 = Instant::now();
    step(t0, &format!("seed {seed}, controllers {who}, faults for {seconds} s: {:?}", nemeses()));
    // The namesrv artifact brings rocketmq-controller (and DLedger) for Java's controllers.
    let lib = support::java::fetch(support::java::JAVA_5X, if java { &["broker", "namesrv"] } else { &["broker"] });
    // `JEPSEN_KEEP=1` keeps the run's directory (every process's log, the brokers' stores) for inspection.
    let keep = std::env::var("JEPSEN_KEEP").is_ok_and(|v| v == "1");
    let dir = tempfile::Builder::new().prefix("jepsen-").disable_cleanup(keep).tempdir().expect("temp dir");
    if keep {
        step(t0, &format!("JEPSEN_KEEP=1: the run's files stay in {}", dir.path().display()));
    }

    let hosts = [("n0", 10), ("n1", 11), ("n2", 12), ("b0", 20), ("b1", 21), ("ns", 30)];
    let net = Net::create(&hosts).unwrap_or_else(|e| panic!("building the test network: {e}"));
    let peers: Vec<String> =
        ["n0", "n1", "n2"].iter().map(|n| format!("{n}-{}:{CTL_PORT}", net.host(n).addr)).collect();
    let peers = peers.join(";");
    let nodes: Vec<Proc> = ["n0", "n1", "n2"]
        .iter()
        .map(|n| match java {
            true => Proc::java_controller(n, net.host(n).clone(), &peers, &dir.path().join(n), &lib),
            false => Proc::controller(n, net.host(n).clone(), &peers, &dir.path().join(n)),
        })
        .collect();
    let controllers: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
    let ns = Proc::name_server("namesrv", net.host("ns").clone(), &dir.path().join("ns"), &[]);
    let nsaddr = SocketAddr::from((net.host("ns").addr, NS_PORT)).to_string();
    let brokers: Vec<JavaBroker> = ["b0", "b1"]
        .iter()
        .map(|b| JavaBroker::new(b, net.host(b).clone(), &lib, &dir.path().join(b), &nsaddr, &controllers.join(";")))
        .collect();
    let mut w = World { nodes, brokers, ns, log: Log::start(), t0, net };

    w.ns.start();
    for n in &mut w.nodes {
        n.start();
    }
    let first = w.leader();
    step(t0, &format!("three controller nodes up, leader {}", w.nodes[first].name));
    // The first broker alone, so that it is the master; then the second joins as a slave.
    w.brokers[0].spawn();
    w.brokers[0].wait_booted();
    w.brokers[1].spawn();
    w.brokers[1].wait_booted();
    let took = w.wait_whole().unwrap_or_else(|| panic!("the group never became whole\n{}", w.logs()));
    step(t0, &format!("brokers booted; group whole {took:?} later: {:?}", w.group()));

    let admin = support::mqadmin::MqAdmin::new(support::java::JAVA_5X);
    admin.ok(&nsaddr, &["updateTopic", "-c", CLUSTER, "-t", TOPIC]);
    w.wait_topic_everywhere();
    let clients = clients::Clients::new(&dir.path().join("clients"));
    let (mut producer, producer_out) = clients.producer(&nsaddr, TOPIC, 0);
    let producing = within(Duration::from_secs(60), || !clients::numbers(&producer_out, "ACK ").is_empty());
    assert!(producing, "the producer's first send\n{}", support::tail(&producer_out, 40));
    step(t0, "topic on both brokers, producer sending");

    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("jepsen");
    std::fs::create_dir_all(&out).expect("mkdir target/tmp/jepsen");
    // Ours keep the name the docs cite; Java's runs get their own file, so neither overwrites the other.
    let file = out.join(if java { format!("history-{seed}-java.jsonl") } else { format!("history-{seed}.jsonl") });
    let _history = HistoryFile { log: w.log.clone(), path: file.clone() };
    let mut rec =
        Recorder::start(&w.log, &w.nodes.iter().map(|n| (n.name.clone(), n.addr())).collect::<Vec<_>>(), w.ns.addr());
    let mut rng = Rng(seed);
    let faults_until = Instant::now() + Duration::from_secs(seconds);
    let mut ran: Vec<Nemesis> = Vec::new();
    let mut not_whole = 0;
    // Rounds of all the nemeses in an order drawn from the seed: even a short run has each of them.
    let mut round: Vec<Nemesis> = Vec::new();
    // The first round is finished even past `seconds`, so that every run has each nemesis once.
    let first_round = nemeses().len();
    while Instant::now() < faults_until || ran.len() < first_round {
        if round.is_empty() {
            round = nemeses();
            rng.shuffle(&mut round);
        }
        let nemesis = round.pop().expect("a round has them all");
        w.run(nemesis, &mut rng);
        let healed_ms = w.log.now_ms();
        ran.push(nemesis);
        match w.wait_whole() {
            Some(took) => {
                step(t0, &format!("group whole again {took:?} after the heal"));
                // The checker measures the recovery from the history: the next fault waits until the recorder
                // has seen the master too, or it would be measured after the next fault.
                let seen = within(Duration::from_secs(10), || recorded_master_after(&w.log.snapshot(), healed_ms));
                if !seen {
                    step(t0, "the recorder saw no master within 10 s of the test seeing the group whole");
                }
            }
            None => {
                not_whole += 1;
                step(t0, &format!("group NOT whole {RECOVERY_BOUND:?} after the heal: {:?}", w.group()));
            }
        }
    }
    // Let the recorder see the settled state once more, then stop it.
    std::thread::sleep(Duration::from_secs(1));
    rec.stop();
    // A send in flight at the kill has no ACK line: not counted as acknowledged.
    producer.kill();
    let acked = clients::numbers(&producer_out, "ACK ");
    let failed =
        std::fs::read_to_string(&producer_out).unwrap_or_default().lines().filter(|l| l.starts_with("FAIL ")).count();
    step(t0, &format!("producer: {} acknowledged, {failed} failed sends; reading them back", acked.len()));
    let (mut consumer, consumer_out) = clients.consumer(&nsaddr, TOPIC, &format!("jepsen_cg_{seed}"));
    // Bounded: what is not read by then is lost (the checker says which).
    within(Duration::from_secs(120), || clients::numbers(&consumer_out, "READ ").is_superset(&acked));
    consumer.kill();
    let read = clients::numbers(&consumer_out, "READ ");

    let events = w.log.snapshot();
    std::fs::write(&file, history::to_json_lines(&events)).expect("write history");
    // The clients' lines beside the history (which broker stored each message, when each send started), for
    // reading a lost message back to its send.
    for (client, out) in [("producer", &producer_out), ("consumer", &consumer_out)] {
        let _ = std::fs::copy(out, file.with_extension(format!("{client}.out")));
    }

    let mut report = checker::check(&events, RECOVERY_BOUND.as_millis() as u64);
    // Followers' answers are outside the rules (history.rs); how many there were, and what rules 1–4 would say
    // of them read as if from a leader, is worth knowing when comparing Java's controllers with ours.
    let follower_reads = events.iter().filter(|e| matches!(e, Event::FollowerRead(_))).count();
    if follower_reads > 0 {
        let as_leader: Vec<Event> = events
            .iter()
            .map(|e| match e {
                Event::FollowerRead(r) => Event::Replica(r.clone()),
                e => e.clone(),
            })
            .collect();
        let all = checker::check(&as_leader, RECOVERY_BOUND.as_millis() as u64);
        let extra = all.violations.len().saturating_sub(report.violations.len());
        step(
            t0,
            &format!("{follower_reads} answers of 1004 by followers; counted as reads, they add {extra} violations"),
        );
    }
    // Rule 7, from the files of the stopped nodes: ours (raftlog.rs) or Java's DLedger store (dledger.rs). kill -9
    // as in the faults: ours fsynced what it committed before acknowledging it, Java's wrote it to mapped files,
    // which a killed process leaves in the page cache.
    for n in &mut w.nodes {
        n.kill();
    }
    let read_log = if java { dledger::read } else { raftlog::read };
    let logs: Vec<checker::NodeLog> = w
        .nodes
        .iter()
        .map(|n| read_log(&n.name, &n.store_dir()).unwrap_or_else(|e| panic!("reading {}'s log: {e}", n.name)))
        .collect();
    let compared = checker::check_raft_logs(&logs, &mut report);
    let ends: Vec<String> = logs
        .iter()
        .map(|l| format!("{} committed {:?} last {:?}", l.node, l.committed, l.entries.keys().next_back()))
        .collect();
    step(t0, &format!("Raft logs: {compared} committed entries compared on all three ({})", ends.join(", ")));
    // Rule 6 judged against when the controller elected each master, from the log that committed the most (rule 7
    // has compared them). Java's DLedger entries and events carry no time: its runs fall back to the recorder's reads.
    let elections: Vec<checker::Election> = match logs.iter().max_by_key(|l| l.committed) {
        Some(log) if !java => raftlog::elections(log, cluster::GROUP)
            .into_iter()
            .map(|(at, master_addr)| checker::Election { at_ms: w.log.run_ms(at), master_addr })
            .collect(),
        _ => Vec::new(),
    };
    step(t0, &format!("rule 6 judged against {} elections timed by the controller's log", elections.len()));
    checker::check_acks(&acks(&producer_out, &w.log), &read, &events, &elections, &mut report);
    let mut counts: BTreeMap<Nemesis, usize> = BTreeMap::new();
    for n in &ran {
        *counts.entry(*n).or_default() += 1;
    }
    step(
        t0,
        &format!(
            "controllers {who}: {} events, {} reads of the leader, in {}",
            events.len(),
            report.reads,
            file.display()
        ),
    );
    eprintln!("| nemesis | runs | violations | time to master after heal p50 / max |");
    for (n, count) in &counts {
        let stats = report.recovery_stats(Some(n.name()));
        let stats = stats.map_or("—".to_string(), |(_, p50, max)| format!("{p50} ms / {max} ms"));
        let violations = report
            .violations
            .iter()
            .filter(|v| matches!(v, checker::Violation::NoMasterAfterHeal { nemesis, .. } if nemesis == n.name()))
            .count();
        eprintln!("| {} | {count} | {violations} | {stats} |", n.name());
    }
    eprintln!(
        "elections checked against the SyncStateSet: {}, not verifiable (states missed): {}; times the group was not \
         whole within {RECOVERY_BOUND:?}: {not_whole}",
        report.elections_checked, report.elections_unverifiable
    );
    eprintln!(
        "messages: {} acknowledged, {} read, {} acknowledged and not read ({} of them acknowledged by a deposed master: {:?})",
        acked.len(),
        read.len(),
        acked.difference(&read).count(),
        report.deposed_acks.len(),
        report.deposed_acks
    );
    eprintln!("{} of them acknowledged before the recorder saw the new master", report.deposed_before_recorder_saw);
    // One line for the side-by-side table (docs/reliability.md).
    eprintln!(
        "SUMMARY seed {seed} controllers {who} faults {} acknowledged {} lost {} deposed {} early {} violations {} \
         elections_checked {} timed_elections {}",
        ran.len(),
        acked.len(),
        acked.difference(&read).count(),
        report.deposed_acks.len(),
        report.deposed_before_recorder_saw,
        report.violations.len(),
        report.elections_checked,
        elections.len()
    );
    assert!(
        report.violations.is_empty(),
        "the checker found violations (seed {seed}, history {}):\n{:#?}\n{}",
        file.display(),
        report.violations,
        w.logs()
    );
}
