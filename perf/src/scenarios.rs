//! The scenarios behind the subcommands. Each prints its numbers; `compare` also writes the results file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use namesrv::protocol::SerializeType;

use crate::load::{self, BrokerLoad, QueryLoad, Spec, Stats};
use crate::report::{self, Row};
use crate::servers::{self, Kind, Launch, Server};
use crate::topology::{self, Topology};
use crate::{Header, LoadArgs, Target};

fn launch(t: &Target) -> Launch {
    let mut l = Launch { java_heap: t.java_heap.clone(), ours_props: t.ours_set.clone(), ..Launch::default() };
    if let Some(b) = &t.ours_bin {
        l.ours_bin = b.clone();
    }
    l
}

/// The server to load: started here (and stopped on drop), or external.
pub(crate) struct Running {
    pub(crate) server: Option<Server>,
    pub(crate) addr: std::net::SocketAddr,
}

pub(crate) fn running(t: &Target) -> Result<Running, String> {
    match t.addr {
        Some(addr) => Ok(Running { server: None, addr }),
        None => {
            let s = Server::start(t.server, &launch(t))?;
            println!(
                "started {} (pid {}) on {}: ready after {} ms",
                s.kind,
                s.pid(),
                s.addr,
                s.start_to_ready.as_millis()
            );
            Ok(Running { addr: s.addr, server: Some(s) })
        }
    }
}

fn header(h: Header) -> SerializeType {
    match h {
        Header::Json => SerializeType::Json,
        Header::Rocketmq => SerializeType::RocketMq,
    }
}

pub(crate) fn spec(
    addr: std::net::SocketAddr,
    la: &LoadArgs,
    topics: Arc<Vec<String>>,
    brokers: BrokerLoad,
    secs: f64,
) -> Spec {
    Spec {
        addr,
        query: QueryLoad {
            conns: la.conns,
            depth: la.depth.max(1),
            rate: la.rate,
            topics,
            header: header(la.header),
            sign: None,
        },
        brokers,
        duration: Duration::from_secs_f64(secs),
        max_requests: la.max_requests,
        threads: la.threads,
    }
}

/// An unmeasured warm-up (queries only), then the measured run.
pub(crate) fn warm_then_measure(
    addr: std::net::SocketAddr,
    la: &LoadArgs,
    topics: Arc<Vec<String>>,
    brokers: BrokerLoad,
) -> Result<Stats, String> {
    if la.warmup > 0.0 {
        load::run(&spec(addr, la, topics.clone(), BrokerLoad::default(), la.warmup)).map_err(|e| e.to_string())?;
    }
    load::run(&spec(addr, la, topics, brokers, la.duration)).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    load: LoadArgs,
    /// Topics queried (round robin); 1, 100 and 40000 are the documented cases.
    #[arg(long, default_value_t = 100)]
    topics: usize,
    /// Masters hosting every topic (route size).
    #[arg(long, default_value_t = 2)]
    brokers: usize,
}

pub fn query(a: &QueryArgs) -> Result<(), String> {
    let r = running(&a.target)?;
    let topo = Topology { clusters: 1, brokers_per_cluster: a.brokers, topics_per_cluster: a.topics };
    let inst = topology::install(r.addr, topo)?;
    let s = warm_then_measure(r.addr, &a.load, inst.query_topics(a.topics), BrokerLoad::default())?;
    println!("query over {} topics × {} brokers: {}", a.topics, a.brokers, s.summary());
    Ok(())
}

#[derive(Args, Debug)]
pub struct JmhArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    load: LoadArgs,
    #[arg(long, default_value_t = 4)]
    clusters: usize,
    #[arg(long, default_value_t = 8)]
    brokers: usize,
    /// Topics per cluster, hosted by each of its brokers.
    #[arg(long, default_value_t = 10_000)]
    topics: usize,
    /// Topics whose perm flips on every re-registration.
    #[arg(long, default_value_t = 100)]
    changed: usize,
    /// Each broker re-registers this often (0 = back to back).
    #[arg(long, default_value_t = 1000)]
    reg_interval_ms: u64,
}

pub fn jmh(a: &JmhArgs) -> Result<(), String> {
    let r = running(&a.target)?;
    let topo = Topology { clusters: a.clusters, brokers_per_cluster: a.brokers, topics_per_cluster: a.topics };
    let t0 = Instant::now();
    let inst = topology::install(r.addr, topo)?;
    println!("installed {} topic-queue entries in {:.1} s", topo.entries(), t0.elapsed().as_secs_f64());
    let topics = inst.query_topics(a.topics);
    let idle = warm_then_measure(r.addr, &a.load, topics.clone(), BrokerLoad::default())?;
    println!("idle:  {}", idle.summary());
    let churn_load = inst.churn(a.changed, Duration::from_millis(a.reg_interval_ms));
    let la = LoadArgs { warmup: 0.0, ..a.load.clone() };
    let churn = warm_then_measure(r.addr, &la, topics, churn_load)?;
    println!("churn: {}", churn.summary());
    println!(
        "churn / idle: QPS {:.2}, p50 {:.2}, p99 {:.2}, p999 {:.2}",
        churn.qps() / idle.qps(),
        churn.read_us(0.5) / idle.read_us(0.5),
        churn.read_us(0.99) / idle.read_us(0.99),
        churn.read_us(0.999) / idle.read_us(0.999)
    );
    if let Some(s) = &r.server {
        println!("server RSS {:.0} MB", s.rss().unwrap_or(0) as f64 / 1048576.0);
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct StormArgs {
    #[command(flatten)]
    target: Target,
    #[arg(long, default_value_t = 300)]
    brokers: usize,
    #[arg(long, default_value_t = 1000)]
    topics_per_broker: usize,
    /// Brokers per cluster (a cluster's brokers host the same topics).
    #[arg(long, default_value_t = 10)]
    brokers_per_cluster: usize,
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// Topics whose perm flips on every re-registration.
    #[arg(long, default_value_t = 10)]
    changed: usize,
    #[arg(long, default_value_t = 4)]
    query_conns: usize,
    /// Open-loop query rate during the storm.
    #[arg(long, default_value_t = 2000.0)]
    query_rate: f64,
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
}

pub fn storm(a: &StormArgs) -> Result<(), String> {
    let r = running(&a.target)?;
    let per = a.brokers_per_cluster.max(1);
    let topo = Topology {
        clusters: a.brokers.div_ceil(per),
        brokers_per_cluster: per,
        topics_per_cluster: a.topics_per_broker,
    };
    let plan = topology::planned(topo);
    let s = Spec {
        addr: r.addr,
        query: QueryLoad {
            conns: a.query_conns,
            depth: 1024,
            rate: Some(a.query_rate),
            topics: plan.query_topics(a.topics_per_broker),
            header: SerializeType::Json,
            sign: None,
        },
        brokers: plan.churn(a.changed, Duration::from_millis(a.interval_ms)),
        duration: Duration::from_secs_f64(a.duration),
        max_requests: u64::MAX,
        threads: 1,
    };
    let cpu0 = r.server.as_ref().and_then(Server::cpu);
    let st = load::run(&s).map_err(|e| e.to_string())?;
    let due = (topo.clusters * per) as f64 * a.duration * 1000.0 / a.interval_ms.max(1) as f64;
    println!(
        "storm: {} brokers × {} topics every {} ms ({:.0} registrations due)\n  {}",
        topo.clusters * per,
        a.topics_per_broker,
        a.interval_ms,
        due,
        st.summary()
    );
    if let Some(srv) = &r.server {
        let cpu = srv.cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
        println!(
            "  server CPU {:.2} s over {:.0} s, RSS {:.0} MB",
            cpu.unwrap_or_default().as_secs_f64(),
            a.duration,
            srv.rss().unwrap_or(0) as f64 / 1048576.0
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// Servers to measure, in order.
    #[arg(long, value_delimiter = ',', default_value = "ours,java")]
    servers: Vec<Kind>,
    #[arg(long, default_value = "1g")]
    java_heap: String,
    /// Brokers per cluster; each cluster has 10k topics: 1 cluster = 40k entries, 10 clusters = 400k.
    #[arg(long, default_value_t = 4)]
    brokers: usize,
    /// Our server binary (e.g. one built with `--no-default-features`, on the system allocator).
    #[arg(long)]
    ours_bin: Option<std::path::PathBuf>,
    /// After loading, wait up to this long for the RSS to settle (an allocator may give freed pages back over
    /// seconds; a JVM may shrink its heap after a GC): the figure is the RSS once it has not fallen for 3 s.
    #[arg(long, default_value_t = 1)]
    settle_secs: u64,
}

/// The RSS once it has stopped falling for 3 s (sampled every 500 ms), or at `limit`.
pub(crate) fn settled_rss_mb(s: &Server, limit: Duration) -> f64 {
    let started = std::time::Instant::now();
    let mut low = s.rss().unwrap_or(0);
    let mut low_since = std::time::Instant::now();
    while started.elapsed() < limit && low_since.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(500));
        let now = s.rss().unwrap_or(0);
        if now < low {
            low = now;
            low_since = std::time::Instant::now();
        }
    }
    s.rss().unwrap_or(0) as f64 / 1048576.0
}

pub fn memory(a: &MemoryArgs) -> Result<(), String> {
    let mut launch = Launch { java_heap: a.java_heap.clone(), ..Launch::default() };
    if let Some(bin) = &a.ours_bin {
        launch.ours_bin = bin.clone();
    }
    let settle = Duration::from_secs(a.settle_secs);
    let topo = Topology { clusters: 10, brokers_per_cluster: a.brokers, topics_per_cluster: 10_000 };
    let per_cluster = a.brokers * 10_000;
    let mut rows = Vec::new();
    for &k in &a.servers {
        let s = Server::start(k, &launch)?;
        let mb = |s: &Server| s.rss().unwrap_or(0) as f64 / 1048576.0;
        let base = mb(&s);
        let _first = topology::install_clusters(s.addr, topo, 0..1)?;
        let at_small = settled_rss_mb(&s, settle);
        let rest = topology::install_clusters(s.addr, topo, 1..10);
        let at_large = match rest {
            Ok(_keep) => format!("{:.0}", settled_rss_mb(&s, settle)),
            Err(e) => format!("failed: {e}"),
        };
        println!(
            "{k}: RSS empty {base:.0} MB, {} entries {at_small:.0} MB, {} entries {at_large} MB",
            per_cluster,
            per_cluster * 10
        );
        rows.push((k, base, at_small));
    }
    if let (Some(o), Some(j)) = (rows.iter().find(|r| r.0 == Kind::Ours), rows.iter().find(|r| r.0 == Kind::Java)) {
        println!("RSS Java / ours at {} entries: {:.2}", per_cluster, j.2 / o.2);
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct StartupArgs {
    #[arg(long, value_delimiter = ',', default_value = "ours,java")]
    servers: Vec<Kind>,
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

pub fn startup(a: &StartupArgs) -> Result<(), String> {
    let launch = Launch::default();
    let mut medians = Vec::new();
    for &k in &a.servers {
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..a.runs.max(1) {
            times.push(Server::start(k, &launch)?.start_to_ready);
        }
        times.sort();
        let med = times[times.len() / 2];
        println!(
            "{k}: start-to-ready {:?} ms (median {} ms)",
            times.iter().map(|t| t.as_millis()).collect::<Vec<_>>(),
            med.as_millis()
        );
        medians.push((k, med));
    }
    if let (Some(o), Some(j)) = (medians.iter().find(|m| m.0 == Kind::Ours), medians.iter().find(|m| m.0 == Kind::Java))
    {
        println!("start-to-ready Java / ours: {:.1}", j.1.as_secs_f64() / o.1.as_secs_f64());
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[arg(long, value_delimiter = ',', default_value = "java,ours,ours-unpinned,ours-1-reactor,ceiling")]
    servers: Vec<Kind>,
    /// Measure every server this many times, interleaved; the report shows each server's median round and the
    /// ratios of the rounds (this machine is shared and noisy).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    #[arg(long, default_value_t = 100)]
    topics: usize,
    #[arg(long, default_value_t = 2)]
    brokers: usize,
    #[arg(long, default_value = "1g")]
    java_heap: String,
    /// Where <date>.md and <date>.svg go.
    #[arg(long)]
    out_dir: Option<std::path::PathBuf>,
}

pub fn compare(a: &CompareArgs) -> Result<(), String> {
    let launch = Launch { java_heap: a.java_heap.clone(), ceiling_route_brokers: a.brokers, ..Launch::default() };
    let topo = Topology { clusters: 1, brokers_per_cluster: a.brokers, topics_per_cluster: a.topics };
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut runs = Vec::new();
    for (round, &k) in (0..a.rounds.max(1)).flat_map(|n| a.servers.iter().map(move |k| (n, k))) {
        if a.rounds > 1 {
            println!("round {}/{}", round + 1, a.rounds);
        }
        let s = Server::start(k, &launch)?;
        println!("{k}: pid {} ready after {} ms", s.pid(), s.start_to_ready.as_millis());
        let inst = topology::install(s.addr, topo)?;
        let topics = inst.query_topics(a.topics);
        if a.load.warmup > 0.0 {
            let w = load::run(&spec(s.addr, &a.load, topics.clone(), BrokerLoad::default(), a.load.warmup))
                .map_err(|e| e.to_string())?;
            println!("  warm-up: {:.0}/s", w.qps());
        }
        let cpu0 = s.cpu();
        let st = load::run(&spec(s.addr, &a.load, topics, BrokerLoad::default(), a.load.duration))
            .map_err(|e| format!("{k}: {e}\n{}", s.log_tail()))?;
        let cpu = s.cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
        println!("  {}", st.summary());
        runs.push((round, Row { kind: k, stats: st, cpu, rss: s.rss(), ready: s.start_to_ready }));
    }
    let dir = a.out_dir.clone().unwrap_or_else(|| servers::repo_root().join("perf/results"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let date = report::today();
    let svg = format!("{date}.svg");
    report::chart(&report::medians(&runs), &dir.join(&svg))?;
    let settings = settings_text(a, &load_before);
    let md = report::markdown(&runs, &settings, &svg);
    let path = dir.join(format!("{date}.md"));
    std::fs::write(&path, md).map_err(|e| e.to_string())?;
    println!("wrote {}", path.display());
    Ok(())
}

fn settings_text(a: &CompareArgs, load_before: &str) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let commit = std::process::Command::new("git")
        .args(["-C", &servers::repo_root().display().to_string(), "rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let l = &a.load;
    format!(
        "Generator: `namesrv-perf compare` at commit `{commit}`; {} connections × depth {} ({}), {:?} headers, {} s warm-up \
         + {} s measured per server, {} generator thread(s); GET_ROUTEINFO_BY_TOPIC over {} topics each hosted by {} \
         masters. Servers run one after another as processes on 127.0.0.1, {} round(s): Java {} (`-Xms{h} -Xmx{h}`, G1), \
         ours (`target/release/mqnamesrv`, defaults: one reactor per core, pinned), ours with `pinThreads=false`, ours \
         with `reactorThreads=1`, and the no-work ceiling (canned route-sized reply, 2 unpinned threads). The generator \
         runs on the same cores as the server. Machine: {cores} cores, {cpu}; load average before the run: {}. The machine is shared: compare \
         ratios, not absolutes.",
        l.conns,
        l.depth,
        l.rate.map_or("closed loop".to_string(), |r| format!("open loop {r:.0}/s")),
        l.header,
        l.warmup,
        l.duration,
        l.threads,
        a.topics,
        a.brokers,
        a.rounds.max(1),
        servers::JAVA_VERSION,
        load_before.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        h = a.java_heap,
    )
}
