//! Issue 48, the name-server fleet: three name servers of ours, two Java 5.5.0 brokers (each the master of a group of
//! its own, registering with all three), a producer and a consumer given all three addresses. Under the producer's load
//! the nemeses restart the name servers one at a time, cut one name server off from the brokers (the one the producer
//! is talking to), and kill or pause a broker; the checker (`fleet_check.rs`) then judges the history: no route to a
//! broker gone longer than its timeout, no send failed because of the name servers, the fleet whole again after every
//! heal, no acknowledged message lost.
//!
//! `JEPSEN_SEED` (default 48) picks the order and lengths; `JEPSEN_FLEET_SECONDS` (default 0: one round of every
//! nemesis) how long new faults are started; `JEPSEN_NAME_SERVERS=java` runs three Java 5.5.0 name servers instead of
//! ours, everything else the same; `JEPSEN_FLEET_WARM=1` gives ours a warm restart (`routeSnapshotPath`);
//! `JEPSEN_NAMESRV_BIN` another build of ours (`fault-*`); `JEPSEN_KEEP=1` keeps the run's files. The history is
//! written to `target/tmp/jepsen/fleet-<seed>[-java|-ours-warm].jsonl`. docs/reliability.md.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use namesrv::protocol::json::{self, Value};

use crate::cluster::{JavaBroker, Proc, CLUSTER, NS_PORT};
use crate::fleet_check::{self, Answer, FleetEvent, Side};
use crate::net::Net;
use crate::recorder::{ask, Log};
use crate::support::interop::step;
use crate::support::rng::Rng;
use crate::{clients, env_u64, within};

const TOPIC: &str = "FleetTopic";
const SERVERS: [&str; 3] = ["ns0", "ns1", "ns2"];
/// (host, group): each broker the master of a group of its own.
const BROKERS: [(&str, &str); 2] = [("b0", "fleet-a"), ("b1", "fleet-b")];
/// Rule 1's bound: the brokers' declared heartbeat timeout (10 s, `brokerNotActiveTimeoutMillis`, which
/// slave-acting-master mode sends) plus one expiry scan (`scanNotActiveBrokerInterval`, 5 s, both servers' default)
/// plus 0.5 s for a heartbeat still in flight when the broker stopped and for the scan's own turn. Java's name
/// servers dropped a paused broker 15.03 s after the pause once (seed 7): the edge is real, a timing not a fault.
const GONE_BOUND_MS: u64 = 10_000 + 5_000 + 500;
/// Rule 3's bound, and how long the test waits for the fleet to be whole: a broker registers every 10 s
/// (`registerNameServerPeriod`), a killed one first boots (up to a minute on two busy cores).
const RECOVERY: Duration = Duration::from_secs(120);
/// The Java client's default resend (`retryTimesWhenSendFailed`): rule 2 is about what the client's own retry covers.
const CLIENT_RETRIES: u32 = 2;
const POLL: Duration = Duration::from_millis(200);
const TIMEOUT: Duration = Duration::from_millis(800);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Nemesis {
    /// Each name server in turn: kill -9, down 1–4 s, started again; the next once the fleet is whole.
    RestartEach,
    /// The name server the producer talks to (else one from the seed) cut off from both brokers (nftables in its
    /// namespace) for 17–22 s, past the brokers' timeout and a scan; the clients still reach it.
    CutFromBrokers,
    /// kill -9 of a broker, started again 3–8 s later on its store.
    KillBroker,
    /// SIGSTOP of a broker for 17–22 s (its connections stay open: only the timeout can take it out), SIGCONT.
    PauseBroker,
    /// Two faults at once: SIGSTOP of a broker and, 7–9 s into the pause (before any name server could drop it),
    /// kill -9 of a name server, started again at once. With a warm restart (`JEPSEN_FLEET_WARM=1`) the restarted
    /// name server replays the paused broker from its route snapshot: rule 1 holds it to the broker's real
    /// silence, not to the restart.
    PauseBrokerRestartNs,
}

impl Nemesis {
    const ALL: [Nemesis; 5] = [
        Nemesis::RestartEach,
        Nemesis::CutFromBrokers,
        Nemesis::KillBroker,
        Nemesis::PauseBroker,
        Nemesis::PauseBrokerRestartNs,
    ];

    fn name(self) -> &'static str {
        match self {
            Nemesis::RestartEach => "restart-ns",
            Nemesis::CutFromBrokers => "cut-ns-from-brokers",
            Nemesis::KillBroker => "kill-broker",
            Nemesis::PauseBroker => "pause-broker",
            Nemesis::PauseBrokerRestartNs => "pause-broker-restart-ns",
        }
    }
}

struct Fleet {
    servers: Vec<Proc>,
    brokers: Vec<JavaBroker>,
    log: Log<FleetEvent>,
    t0: Instant,
    net: Net,
}

/// The broker addresses of a route body (105), or why there are none.
fn route(ns: SocketAddr) -> Answer {
    let Some(r) = ask(ns, 105, &[("topic", TOPIC)], TIMEOUT) else { return Answer::Silent };
    if r.code != 0 {
        return Answer::Code(r.code);
    }
    let mut addrs = Vec::new();
    if let Ok(v) = json::parse(&r.body) {
        if let Some(Value::Array(datas)) = v.get("brokerDatas") {
            for d in datas {
                if let Some(Value::Object(members)) = d.get("brokerAddrs") {
                    addrs.extend(members.iter().filter_map(|(_, a)| a.as_str().map(|a| a.into_owned())));
                }
            }
        }
    }
    addrs.sort();
    Answer::Brokers(addrs)
}

impl Fleet {
    fn addrs(&self) -> String {
        self.servers.iter().map(|s| s.addr().to_string()).collect::<Vec<_>>().join(";")
    }

    /// Every name server routes `TOPIC` to every broker.
    fn whole_now(&self) -> bool {
        let want: Vec<String> = self.brokers.iter().map(JavaBroker::addr_string).collect();
        self.servers.iter().all(|s| matches!(route(s.addr()), Answer::Brokers(b) if want.iter().all(|w| b.contains(w))))
    }

    /// Waits until the fleet is whole (recorded as `Whole`); how long it took, or `None` after `RECOVERY`.
    fn wait_whole(&self) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < RECOVERY {
            if self.whole_now() {
                self.log.push(FleetEvent::Whole { at_ms: self.log.now_ms() });
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    fn fault(&self, start: Option<Side>, nemesis: Nemesis, target: &str) {
        let (at_ms, nemesis, target) = (self.log.now_ms(), nemesis.name().to_string(), target.to_string());
        step(self.t0, &format!("{} {nemesis} {target}", if start.is_some() { "FAULT" } else { "HEAL " }));
        self.log.push(match start {
            Some(side) => FleetEvent::FaultStart { at_ms, nemesis, target, side },
            None => FleetEvent::FaultHeal { at_ms, nemesis, target },
        });
    }

    /// `broker` out of (`gone`) or back in reach of the name servers `ns` (all when empty).
    fn reach(&self, gone: bool, broker: usize, ns: &[String]) {
        let (at_ms, broker, ns) = (self.log.now_ms(), self.brokers[broker].addr_string(), ns.to_vec());
        self.log.push(if gone {
            FleetEvent::Gone { at_ms, broker, ns }
        } else {
            FleetEvent::Back { at_ms, broker, ns }
        });
    }

    /// The name server process `pid` has an established connection to, if one.
    fn talking_to(&self, pid: u32) -> Option<usize> {
        let out = std::process::Command::new("ss").args(["-tnpH", "state", "established"]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mine = format!("pid={pid},");
        text.lines().filter(|l| l.contains(&mine)).find_map(|l| {
            self.servers.iter().position(|s| l.split_whitespace().any(|field| field == s.addr().to_string()))
        })
    }

    fn run(&mut self, nemesis: Nemesis, rng: &mut Rng, producer_pid: Option<u32>) {
        match nemesis {
            Nemesis::RestartEach => {
                let mut order = vec![0, 1, 2];
                rng.shuffle(&mut order);
                for i in order {
                    let name = self.servers[i].name.clone();
                    self.fault(Some(Side::NameServers), nemesis, &name);
                    self.servers[i].kill();
                    std::thread::sleep(rng.millis(1_000, 4_000));
                    self.servers[i].start();
                    self.fault(None, nemesis, &name);
                    self.settle();
                }
            }
            Nemesis::CutFromBrokers => {
                let i = match producer_pid.and_then(|pid| self.talking_to(pid)) {
                    Some(i) => i,
                    None => rng.below(3),
                };
                let (name, host) = (self.servers[i].name.clone(), self.servers[i].host.clone());
                let brokers: Vec<_> = self.brokers.iter().map(|b| b.host.addr).collect();
                self.fault(Some(Side::NameServers), nemesis, &name);
                self.net.cut_from(&host, &brokers).expect("nft cut");
                for b in 0..self.brokers.len() {
                    self.reach(true, b, std::slice::from_ref(&name));
                }
                std::thread::sleep(rng.millis(17_000, 22_000));
                // `Back` just before the heal: a read the heal may already have changed is not judged.
                for b in 0..self.brokers.len() {
                    self.reach(false, b, std::slice::from_ref(&name));
                }
                self.net.heal_cut(&host).expect("nft heal");
                self.fault(None, nemesis, &name);
                self.settle();
            }
            Nemesis::KillBroker => {
                let b = rng.below(2);
                let name = self.brokers[b].name.clone();
                self.fault(Some(Side::Brokers), nemesis, &name);
                self.reach(true, b, &[]);
                self.brokers[b].kill();
                std::thread::sleep(rng.millis(3_000, 8_000));
                self.reach(false, b, &[]);
                self.brokers[b].spawn();
                self.fault(None, nemesis, &name);
                self.brokers[b].wait_booted();
                self.settle();
            }
            Nemesis::PauseBroker => {
                let b = rng.below(2);
                let name = self.brokers[b].name.clone();
                self.fault(Some(Side::Brokers), nemesis, &name);
                self.reach(true, b, &[]);
                self.brokers[b].pause();
                std::thread::sleep(rng.millis(17_000, 22_000));
                self.reach(false, b, &[]);
                self.brokers[b].resume();
                self.fault(None, nemesis, &name);
                self.settle();
            }
            Nemesis::PauseBrokerRestartNs => self.pause_broker_restart_ns(rng),
        }
    }

    fn pause_broker_restart_ns(&mut self, rng: &mut Rng) {
        let nemesis = Nemesis::PauseBrokerRestartNs;
        let (b, i) = (rng.below(2), rng.below(3));
        let target = format!("{}+{}", self.brokers[b].name, self.servers[i].name);
        let started = Instant::now();
        let hold = rng.millis(20_000, 24_000);
        self.fault(Some(Side::Brokers), nemesis, &target);
        self.reach(true, b, &[]);
        self.brokers[b].pause();
        std::thread::sleep(rng.millis(7_000, 9_000));
        step(self.t0, &format!("{nemesis:?}: kill -9 of {} and started again", self.servers[i].name));
        self.servers[i].kill();
        self.servers[i].start();
        std::thread::sleep(hold.saturating_sub(started.elapsed()));
        self.reach(false, b, &[]);
        self.brokers[b].resume();
        self.fault(None, nemesis, &target);
        self.settle();
    }

    /// Waits for the fleet to be whole before the next fault (the checker judges the time).
    fn settle(&self) {
        match self.wait_whole() {
            Some(took) => step(self.t0, &format!("fleet whole again {took:?} after the heal")),
            None => step(self.t0, &format!("fleet NOT whole {RECOVERY:?} after the heal")),
        }
    }

    fn logs(&self) -> String {
        let mut s: String =
            self.servers.iter().map(|n| format!("{}'s route now: {:?}\n", n.name, route(n.addr()))).collect();
        s.extend(self.servers.iter().map(|n| n.log_tail(20) + "\n"));
        for b in &self.brokers {
            s.push_str(&b.log_tail(20));
            s.push('\n');
        }
        s
    }
}

/// One thread per name server asking for the route every `POLL`; stopped and joined on drop.
struct Poller {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Poller {
    fn start(log: &Log<FleetEvent>, servers: &[(String, SocketAddr)]) -> Poller {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = servers
            .iter()
            .cloned()
            .map(|(ns, addr)| {
                let (log, stop) = (log.clone(), Arc::clone(&stop));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let sent_ms = log.now_ms();
                        let answer = route(addr);
                        log.push(FleetEvent::Route { ns: ns.clone(), sent_ms, recv_ms: log.now_ms(), answer });
                        std::thread::sleep(POLL);
                    }
                })
            })
            .collect();
        Poller { stop, threads }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The producer's sends ("ACK i start end", "FAIL i start end …", epoch ms) as events on the run's clock.
fn sends(file: &std::path::Path, log: &Log<FleetEvent>) -> Vec<FleetEvent> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (ok, rest) = match l.split_once(' ')? {
                ("ACK", rest) => (true, rest),
                ("FAIL", rest) => (false, rest),
                _ => return None,
            };
            let mut f = rest.split_whitespace().map(str::parse::<u64>);
            let (n, start, end) = (f.next()?.ok()?, f.next()?.ok()?, f.next()?.ok()?);
            Some(FleetEvent::Send { n, start_ms: log.run_ms(start), end_ms: log.run_ms(end), ok })
        })
        .collect()
}

/// `JEPSEN_FLEET_WARM=1`: our name servers save their routes every second and replay them at start (warm
/// restart, docs/operations.md); otherwise none.
fn warm_keys(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    match warm() {
        true => vec![
            ("routeSnapshotPath", dir.join("routes.bin").display().to_string()),
            ("routeSnapshotIntervalSeconds", "1".to_string()),
        ],
        false => Vec::new(),
    }
}

fn warm() -> bool {
    std::env::var("JEPSEN_FLEET_WARM").is_ok_and(|v| v == "1")
}

/// Whose name servers run: `JEPSEN_NAME_SERVERS=java` for Java 5.5.0's, anything else (or unset) for ours.
fn java_name_servers() -> bool {
    match std::env::var("JEPSEN_NAME_SERVERS") {
        Ok(v) if v == "java" => true,
        Ok(v) if v.is_empty() || v == "ours" => false,
        Ok(v) => panic!("JEPSEN_NAME_SERVERS={v}: expected `ours` or `java`"),
        Err(_) => false,
    }
}

#[test]
#[ignore = "real peer: Java 5.5.0 brokers and clients with three name servers in network namespaces (root, nftables)"]
fn name_server_fleet_keeps_clients_sending_and_routes_fresh() {
    let _serial = crate::one_fault_test_at_a_time();
    let seed = env_u64("JEPSEN_SEED", 48);
    let seconds = env_u64("JEPSEN_FLEET_SECONDS", 0);
    let java = java_name_servers();
    let who = match (java, warm()) {
        (true, _) => "java",
        (false, true) => "ours-warm",
        (false, false) => "ours",
    };
    let t0 = Instant::now();
    step(t0, &format!("fleet: seed {seed}, name servers {who}, faults for {seconds} s (at least one round)"));
    let lib = crate::support::java::fetch(crate::support::java::JAVA_5X, &["broker", "namesrv"]);
    let keep = std::env::var("JEPSEN_KEEP").is_ok_and(|v| v == "1");
    let dir = tempfile::Builder::new().prefix("jepsen-fleet-").disable_cleanup(keep).tempdir().expect("temp dir");
    if keep {
        step(t0, &format!("JEPSEN_KEEP=1: the run's files stay in {}", dir.path().display()));
    }

    let hosts = [("ns0", 30), ("ns1", 31), ("ns2", 32), ("b0", 20), ("b1", 21)];
    let net = Net::create(&hosts).unwrap_or_else(|e| panic!("building the test network: {e}"));
    let servers: Vec<Proc> = SERVERS
        .iter()
        .map(|n| match java {
            true => Proc::java_name_server(n, net.host(n).clone(), &dir.path().join(n), &lib),
            false => Proc::name_server(n, net.host(n).clone(), &dir.path().join(n), &warm_keys(&dir.path().join(n))),
        })
        .collect();
    let nsaddrs: String =
        SERVERS.iter().map(|n| SocketAddr::from((net.host(n).addr, NS_PORT)).to_string()).collect::<Vec<_>>().join(";");
    let brokers: Vec<JavaBroker> = BROKERS
        .iter()
        .map(|(b, group)| JavaBroker::master(b, group, net.host(b).clone(), &lib, &dir.path().join(b), &nsaddrs))
        .collect();
    let mut f = Fleet { servers, brokers, log: Log::start(), t0, net };
    assert_eq!(f.addrs(), nsaddrs);

    for s in &mut f.servers {
        s.start();
    }
    for b in &mut f.brokers {
        b.spawn();
    }
    for b in &mut f.brokers {
        b.wait_booted();
    }
    // mqadmin creates the topic on the masters one name server lists (106), and says nothing when it lists none:
    // first every name server must have both brokers.
    let registered = within(RECOVERY, || {
        f.servers.iter().all(|s| {
            ask(s.addr(), 106, &[], TIMEOUT).is_some_and(|r| {
                let body = String::from_utf8_lossy(&r.body);
                r.code == 0 && BROKERS.iter().all(|(_, group)| body.contains(&format!("\"{group}\"")))
            })
        })
    });
    assert!(registered, "both brokers registered with every name server\n{}", f.logs());
    let admin = crate::support::mqadmin::MqAdmin::new(crate::support::java::JAVA_5X);
    admin.ok(&nsaddrs, &["updateTopic", "-c", CLUSTER, "-t", TOPIC]);
    let took = f.wait_whole().unwrap_or_else(|| panic!("the fleet never routed {TOPIC} to both brokers\n{}", f.logs()));
    step(t0, &format!("three name servers, two brokers, {TOPIC} on every route {took:?} after the topic was made"));

    let clients = clients::Clients::new(&dir.path().join("clients"));
    let (mut producer, producer_out) = clients.producer(&nsaddrs, TOPIC, CLIENT_RETRIES);
    let producing = within(Duration::from_secs(60), || !clients::numbers(&producer_out, "ACK ").is_empty());
    assert!(producing, "the producer's first send\n{}", crate::support::tail(&producer_out, 40));
    let (mut consumer, consumer_out) = clients.consumer(&nsaddrs, TOPIC, &format!("fleet_cg_{seed}"));
    // Faults start right after this: a consumer still starting could ask a name server being restarted first, fail its
    // start and read nothing at all.
    let consuming = within(Duration::from_secs(60), || {
        std::fs::read_to_string(&consumer_out).is_ok_and(|out| out.lines().any(|l| l == "STARTED"))
    });
    assert!(consuming, "the consumer's start\n{}", crate::support::tail(&consumer_out, 40));
    step(t0, "producer sending, consumer reading, both given the three name servers");

    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("jepsen");
    std::fs::create_dir_all(&out).expect("mkdir target/tmp/jepsen");
    let file = out.join(match who {
        "ours" => format!("fleet-{seed}.jsonl"),
        other => format!("fleet-{seed}-{other}.jsonl"),
    });
    let poller = Poller::start(&f.log, &f.servers.iter().map(|s| (s.name.clone(), s.addr())).collect::<Vec<_>>());
    let mut rng = Rng(seed);
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut rounds = 0;
    while rounds == 0 || Instant::now() < until {
        let mut round = Nemesis::ALL.to_vec();
        rng.shuffle(&mut round);
        for nemesis in round {
            f.run(nemesis, &mut rng, producer.pid());
        }
        rounds += 1;
    }
    // A last look at the settled fleet, then the producer stops; what it acknowledged must be read.
    std::thread::sleep(Duration::from_secs(1));
    drop(poller);
    producer.kill();
    for e in sends(&producer_out, &f.log) {
        f.log.push(e);
    }
    let acked = clients::numbers(&producer_out, "ACK ");
    within(Duration::from_secs(120), || clients::numbers(&consumer_out, "READ ").is_superset(&acked));
    consumer.kill();
    let read = clients::numbers(&consumer_out, "READ ");

    let events = f.log.snapshot();
    std::fs::write(&file, fleet_check::to_json_lines(&events)).expect("write history");
    let names: Vec<String> = SERVERS.iter().map(|s| s.to_string()).collect();
    let mut report = fleet_check::check(&events, &names, GONE_BOUND_MS, RECOVERY.as_millis() as u64);
    fleet_check::check_messages(&acked, &read, &mut report);

    let failed = events.iter().filter(|e| matches!(e, FleetEvent::Send { ok: false, .. })).count();
    step(
        t0,
        &format!(
            "name servers {who}: {} events, {} route reads, in {}",
            events.len(),
            report.route_reads,
            file.display()
        ),
    );
    eprintln!("| nemesis | runs | failed sends (longest run) | heal → whole p50 / max | gone → dropped p50 / max |");
    let stats: BTreeMap<_, _> = report.stats.iter().collect();
    for (n, s) in stats {
        let pm = |v: &[u64]| fleet_check::p50_max(v).map_or("—".to_string(), |(p, m)| format!("{p} / {m} ms"));
        eprintln!(
            "| {n} | {} | {} ({} ms) | {} | {} |",
            s.runs,
            s.failed_sends,
            s.longest_failing_ms,
            pm(&s.whole_ms),
            pm(&s.dropped_after_ms)
        );
    }
    eprintln!(
        "sends: {} acknowledged, {failed} failed; {} read, {} acknowledged and not read",
        acked.len(),
        read.len(),
        acked.difference(&read).count()
    );
    assert!(
        report.violations.is_empty(),
        "the fleet checker found violations (seed {seed}, history {}):\n{:#?}\n{}--- consumer ---\n{}",
        file.display(),
        report.violations,
        f.logs(),
        crate::support::tail(&consumer_out, 40)
    );
}
