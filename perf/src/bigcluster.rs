//! The big-cluster scenario: 10 clusters × 30 brokers, each cluster's 10,000 topics on all of its brokers (3M
//! topic-queue entries). One server at a time (ours, then the Java 5.5.0 name server), each through:
//!
//! 1. **cold load** — all brokers register at once, each on its own connection, as after a name-server restart;
//!    the time from the first send to the last answer (printed too: with connecting every broker and starting a
//!    thread for each first, 0.01–0.05 s more for 100–300 brokers here);
//! 2. an unmeasured warm-up of route queries (Java's JIT);
//! 3. **baseline** — route queries open loop at a fixed rate, no registrations;
//! 4. **steady** — the same queries while every broker re-registers every 30 s;
//! 5. **storm** — the same queries while every broker re-registers every 3 s, one broker in ten with changed
//!    topics on every registration.
//!
//! For each phase: read p50/p99/p999, registrations answered / failed / missed (due while the previous one of
//! that broker was unanswered), server CPU; registration CPU is a phase's CPU minus the baseline's. At the end,
//! GET_BROKER_CLUSTER_INFO must still list every broker (none expired).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use namesrv::protocol::{RemotingCommand, RequestCode, SerializeType};

use crate::load::{self, BrokerLoad, QueryLoad, Spec, Stats};
use crate::scenarios::running;
use crate::servers::Kind;
use crate::topology::{self, Topology};
use crate::wire::{register_body, BlockingConn, BrokerIdent};
use crate::SideBySide;

#[derive(Args, Debug)]
pub struct BigClusterArgs {
    #[command(flatten)]
    servers: SideBySide,
    #[arg(long, default_value_t = 10)]
    clusters: usize,
    #[arg(long, default_value_t = 30)]
    brokers_per_cluster: usize,
    /// Topics per cluster, each on all of the cluster's brokers.
    #[arg(long, default_value_t = 10_000)]
    topics: usize,
    /// Route queries per second, open loop, in every phase after the cold load.
    #[arg(long, default_value_t = 50_000.0)]
    rate: f64,
    #[arg(long, default_value_t = 4)]
    query_conns: usize,
    /// Seconds of each measured phase (baseline, steady, storm): at least the steady interval, so every broker
    /// registers again in each phase with registrations. Brokers expire after 120 s without one: the cold load,
    /// the warm-up and the baseline must stay under that.
    #[arg(long, default_value_t = 30.0)]
    phase_secs: f64,
    #[arg(long, default_value_t = 10.0)]
    warmup_secs: f64,
    /// Re-registration interval of the steady phase, ms.
    #[arg(long, default_value_t = 30_000)]
    steady_ms: u64,
    /// Re-registration interval of the storm, ms.
    #[arg(long, default_value_t = 3_000)]
    storm_ms: u64,
    /// Topics whose perm flips on each storm registration of one broker in ten.
    #[arg(long, default_value_t = 10)]
    changed: usize,
}

struct Phase {
    name: &'static str,
    stats: Stats,
    cpu: Option<Duration>,
}

pub fn run(a: &BigClusterArgs) -> Result<(), String> {
    let topo =
        Topology { clusters: a.clusters, brokers_per_cluster: a.brokers_per_cluster, topics_per_cluster: a.topics };
    let plan = topology::planned(topo);
    println!(
        "{} clusters × {} brokers × {} topics = {} topic-queue entries; queries {:.0}/s open loop over {} connections",
        a.clusters,
        a.brokers_per_cluster,
        a.topics,
        topo.entries(),
        a.rate,
        a.query_conns
    );
    let first_bodies: Vec<Bytes> = plan.topics.iter().map(|t| register_body(t, 1, 0)).collect();
    let mut report = Vec::new();
    for target in a.servers.targets() {
        let kind = target.server;
        let r = running(&target)?;
        let server = r.server.as_ref().expect("started here");
        let cpu0 = server.cpu();
        let t0 = Instant::now();
        let loaded = cold_load(r.addr, &plan.brokers, &first_bodies, a.brokers_per_cluster)?;
        let cold = t0.elapsed();
        let cold_cpu = server.cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
        let rss_loaded = server.rss().unwrap_or(0) as f64 / 1048576.0;
        println!(
            "{kind}: cold load of {} brokers in {:.2} s from the first send to the last answer ({:.2} s with \
             connecting them; slowest broker {:.2} s, {} SYSTEM_BUSY answers), server CPU {:.2} s, RSS {:.0} MB",
            plan.brokers.len(),
            loaded.span.as_secs_f64(),
            cold.as_secs_f64(),
            loaded.slowest.as_secs_f64(),
            loaded.busy,
            cold_cpu.unwrap_or_default().as_secs_f64(),
            rss_loaded
        );

        let queries = plan.query_topics(a.topics);
        let spec = |brokers: BrokerLoad, secs: f64| Spec {
            addr: r.addr,
            query: QueryLoad {
                conns: a.query_conns,
                depth: 1024,
                rate: Some(a.rate),
                topics: queries.clone(),
                header: SerializeType::Json,
                sign: None,
            },
            brokers,
            duration: Duration::from_secs_f64(secs),
            max_requests: u64::MAX,
            threads: 1,
        };
        load::run(&spec(BrokerLoad::default(), a.warmup_secs)).map_err(|e| e.to_string())?;
        let steady = broker_load(&plan, 0, Duration::from_millis(a.steady_ms));
        let storm = broker_load(&plan, a.changed, Duration::from_millis(a.storm_ms));
        let mut phases = Vec::new();
        // Each phase's broker connections stay open through the next one (whose brokers register again on new
        // ones within its first interval), so no broker is evicted between phases.
        let mut previous = Vec::new();
        for (name, brokers) in [("baseline", BrokerLoad::default()), ("steady", steady), ("storm", storm)] {
            let c0 = server.cpu();
            let (stats, open) = load::run_keeping(&spec(brokers, a.phase_secs)).map_err(|e| e.to_string())?;
            let cpu = server.cpu().zip(c0).map(|(b, a)| b.saturating_sub(a));
            println!("{kind} {name}: {}", stats.summary());
            phases.push(Phase { name, stats, cpu });
            previous = open;
        }
        let listed = brokers_listed(r.addr)?;
        let rss_end = server.rss().unwrap_or(0) as f64 / 1048576.0;
        // Idle, brokers still connected: what the allocator (or the JVM) gives back once the storm is over.
        let rss_idle = crate::scenarios::settled_rss_mb(server, Duration::from_secs(30));
        drop(previous);
        println!(
            "{kind}: {listed} of {} brokers listed at the end, RSS {rss_end:.0} MB, {rss_idle:.0} MB after up to 30 s idle",
            plan.brokers.len()
        );
        report.push(summary(
            kind,
            a,
            (loaded.span, cold, loaded.busy),
            rss_loaded,
            (rss_end, rss_idle),
            listed,
            plan.brokers.len(),
            &phases,
        ));
        drop(loaded);
    }
    println!("\n| server | phase | regs/s ok (err, missed) | read p50 / p99 / p999 µs | p99 vs baseline | server CPU s | CPU ms per registration |");
    println!("|---|---|---|---|---|---|---|");
    for r in &report {
        for line in &r.rows {
            println!("{line}");
        }
    }
    println!();
    for r in &report {
        println!("{}", r.head);
    }
    Ok(())
}

/// Every broker registers once, all at once: one thread and one connection per broker, each sending as soon as
/// all are connected; one refused with SYSTEM_BUSY sends again after 20 ms.
fn cold_load(
    addr: std::net::SocketAddr,
    brokers: &[BrokerIdent],
    bodies: &[Bytes],
    per_cluster: usize,
) -> Result<ColdLoad, String> {
    let conns: Vec<BlockingConn> = brokers
        .iter()
        .map(|b| BlockingConn::connect(addr, Duration::from_secs(10)).map_err(|e| format!("connect {}: {e}", b.name)))
        .collect::<Result<_, _>>()?;
    let go = std::sync::Barrier::new(brokers.len());
    let results: Vec<Result<(BlockingConn, Instant, Instant, u32), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .into_iter()
            .zip(brokers)
            .enumerate()
            .map(|(i, (mut conn, b))| {
                let body = bodies[i / per_cluster.max(1)].clone();
                let go = &go;
                s.spawn(move || {
                    // Encoded before the clock starts, and sent without copying the body: brokers build their
                    // bodies on their own hosts, so the generator should spend on the shared cores only what
                    // sending takes.
                    let mut request = conn.prepare_register(b, body.clone());
                    go.wait();
                    let t = Instant::now();
                    let mut busy = 0;
                    loop {
                        let f = conn.call_prepared(&request).map_err(|e| format!("register {}: {e}", b.name))?;
                        match f.code {
                            0 => return Ok((conn, t, Instant::now(), busy)),
                            // SYSTEM_BUSY: a queue's byte budget is spent. A broker tries again at its next
                            // round (30 s); here after a short pause, counted and reported.
                            2 if busy < 1000 => {
                                busy += 1;
                                std::thread::sleep(Duration::from_millis(20));
                                request = conn.prepare_register(b, body.clone());
                            }
                            code => return Err(format!("register {} answered code {code}", b.name)),
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("cold-load thread panicked".into()))).collect()
    });
    let mut kept = Vec::with_capacity(results.len());
    let mut slowest = Duration::ZERO;
    let (mut first, mut last) = (None::<Instant>, None::<Instant>);
    let mut busy = 0;
    for r in results {
        let (conn, start, end, refused) = r?;
        slowest = slowest.max(end - start);
        first = Some(first.map_or(start, |f| f.min(start)));
        last = Some(last.map_or(end, |l| l.max(end)));
        busy += refused;
        kept.push(conn);
    }
    let span = first.zip(last).map_or(Duration::ZERO, |(f, l)| l - f);
    Ok(ColdLoad { _conns: kept, span, slowest, busy })
}

struct ColdLoad {
    /// Only held: closing them would evict the brokers.
    _conns: Vec<BlockingConn>,
    /// From the first broker's send to the last broker's answer: what the server took to take them all in. The
    /// whole call also connects every broker and starts a thread for each first (0.01–0.05 s for 100–300 here).
    span: Duration,
    /// The longest one broker waited for its answer.
    slowest: Duration,
    /// SYSTEM_BUSY answers before every broker was in.
    busy: u32,
}

/// Every broker re-registering each `interval`, bodies alternating between two DataVersions; one broker in ten
/// (`changed` > 0) flips `changed` topics' perm on every registration, so its bodies must be applied in full.
fn broker_load(plan: &topology::Installed, changed: usize, interval: Duration) -> BrokerLoad {
    let plain: Vec<Arc<Vec<Bytes>>> =
        plan.topics.iter().map(|t| Arc::new(vec![register_body(t, 2, 0), register_body(t, 3, 0)])).collect();
    let flipping: Vec<Arc<Vec<Bytes>>> = if changed == 0 {
        plain.clone()
    } else {
        plan.topics.iter().map(|t| Arc::new(vec![register_body(t, 4, changed), register_body(t, 5, 0)])).collect()
    };
    let per = plan.brokers.len() / plan.topics.len().max(1);
    let brokers = plan
        .brokers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let c = i / per.max(1);
            (b.clone(), if i % 10 == 0 { flipping[c].clone() } else { plain[c].clone() })
        })
        .collect();
    BrokerLoad { brokers, interval }
}

/// How many broker groups GET_BROKER_CLUSTER_INFO lists (every simulated broker is its own group), counted in
/// the reply's text: Java's body is not strict JSON (integer map keys).
fn brokers_listed(addr: std::net::SocketAddr) -> Result<usize, String> {
    let mut c = BlockingConn::connect(addr, Duration::from_secs(10)).map_err(|e| e.to_string())?;
    let o = c.next_opaque();
    let mut cmd = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, o);
    cmd.serialize_type = SerializeType::Json;
    let (_, frame) = c.call_frame(&cmd).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&frame).matches("\"brokerName\":\"perf-").count())
}

struct Summary {
    head: String,
    rows: Vec<String>,
}

#[allow(clippy::too_many_arguments)]
fn summary(
    kind: Kind,
    a: &BigClusterArgs,
    (span, cold, busy): (Duration, Duration, u32),
    rss_loaded: f64,
    (rss_end, rss_idle): (f64, f64),
    listed: usize,
    brokers: usize,
    phases: &[Phase],
) -> Summary {
    let base = &phases[0];
    let base_cpu = base.cpu.map(|c| c.as_secs_f64());
    let rows = phases
        .iter()
        .map(|p| {
            let s = &p.stats;
            let secs = s.elapsed.as_secs_f64().max(1e-9);
            let cpu = p.cpu.map(|c| c.as_secs_f64());
            let per_reg = match (cpu, base_cpu) {
                (Some(c), Some(b)) if s.regs_ok > 0 => format!("{:.2}", (c - b).max(0.0) * 1e3 / s.regs_ok as f64),
                _ => "–".into(),
            };
            format!(
                "| {kind} | {} | {:.1} ({}, {}) | {:.0} / {:.0} / {:.0} | {:.2} | {} | {} |",
                p.name,
                s.regs_ok as f64 / secs,
                s.regs_err,
                s.regs_missed,
                s.read_us(0.5),
                s.read_us(0.99),
                s.read_us(0.999),
                s.read_us(0.99) / base.stats.read_us(0.99).max(1e-9),
                cpu.map_or("–".into(), |c| format!("{c:.2}")),
                per_reg
            )
        })
        .collect();
    let head = format!(
        "{kind}: cold load {:.2} s from the first send to the last answer ({:.2} s with connecting; {busy} SYSTEM_BUSY answers); RSS {rss_loaded:.0} MB after it, {rss_end:.0} MB at the end, {rss_idle:.0} MB idle after it; {listed}/{brokers} \
         brokers listed at the end; queries {:.0}/s asked, {:.0}/s answered in the storm ({} errors); {} s phases",
        span.as_secs_f64(),
        cold.as_secs_f64(),
        a.rate,
        phases.last().map_or(0.0, |p| p.stats.qps()),
        phases.iter().map(|p| p.stats.errors).sum::<u64>(),
        a.phase_secs
    );
    Summary { head, rows }
}
