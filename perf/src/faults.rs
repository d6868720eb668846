//! `namesrv-perf faults …`: what faults cost the well-behaved clients and the server's memory, measured side by side
//! in one run (clean, then under the fault) so the ratio survives a noisy shared machine. The pass/fail checks of
//! the same faults are in tests/reliability.rs; the figures go into docs/reliability.md.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::{Args, ValueEnum};
use namesrv::protocol::{frame, RemotingCommand, RequestCode};

use crate::load::{BrokerLoad, Stats};
use crate::scenarios::{running, warm_then_measure, Running};
use crate::servers::cpu_of;
use crate::topology::{self, Topology};
use crate::wire::{register_body, BlockingConn, BrokerIdent};
use crate::{LoadArgs, Target};

#[derive(Args, Debug)]
pub struct FaultsArgs {
    fault: Fault,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    load: LoadArgs,
    /// Topics queried by the well-behaved clients (each hosted by 2 masters).
    #[arg(long, default_value_t = 100)]
    topics: usize,
    /// idle: connections held.
    #[arg(long, default_value_t = 10_000)]
    idle_conns: usize,
    /// garbage: connections sending garbage.
    #[arg(long, default_value_t = 1000)]
    garbage_conns: usize,
    /// garbage: each connection sends again at most this often (reconnecting if the server closed it).
    #[arg(long, default_value_t = 1000)]
    resend_ms: u64,
    /// slow: connections that never read.
    #[arg(long, default_value_t = 8)]
    readers: usize,
    /// slow: topics of one extra broker; they set the size of the topic-list reply (~25 bytes each).
    #[arg(long, default_value_t = 5000)]
    list_topics: usize,
    /// flap: how long brokers flap (the query load is measured in three equal thirds of it).
    #[arg(long, default_value_t = 60.0)]
    flap_seconds: f64,
    /// flap: threads that flap.
    #[arg(long, default_value_t = 4)]
    flappers: usize,
    /// flap: connect-register-drop cycles per second in all (0 = as fast as they go).
    #[arg(long, default_value_t = 500.0)]
    flap_rate: f64,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
enum Fault {
    /// Many idle connections: RSS per connection, and the query p99 with them held vs without.
    Idle,
    /// Connections sending garbage (random bytes, oversized and short length prefixes, bad headers, unknown codes,
    /// half frames); each closed one reconnects and sends again.
    Garbage,
    /// Clients that pipeline GET_ALL_TOPIC_LIST requests (large replies) and never read them.
    Slow,
    /// Brokers that connect, register three topics of their own and drop the connection.
    Flap,
}

pub fn run(a: &FaultsArgs) -> Result<(), String> {
    let r = running(&a.target)?;
    let topo = Topology { clusters: 1, brokers_per_cluster: 2, topics_per_cluster: a.topics };
    let inst = topology::install(r.addr, topo)?;
    let topics = inst.query_topics(a.topics);
    println!("load average before: {}", loadavg());
    if a.load.warmup > 0.0 {
        let la = LoadArgs { duration: a.load.warmup, warmup: 0.0, ..a.load.clone() };
        warm_then_measure(r.addr, &la, topics.clone(), BrokerLoad::default())?;
    }
    let cpu0 = cpus(&r);
    let clean =
        warm_then_measure(r.addr, &LoadArgs { warmup: 0.0, ..a.load.clone() }, topics.clone(), BrokerLoad::default())?;
    let cpu1 = cpus(&r);
    println!("clean:        {}", clean.summary());
    let rss0 = rss(&r);
    // The faulted run has no warm-up of its own: the server is already warm.
    let la = LoadArgs { warmup: 0.0, ..a.load.clone() };
    let faulted = match a.fault {
        Fault::Idle => {
            let idle_conns = a.idle_conns;
            let held = (0..idle_conns)
                .map(|_| TcpStream::connect_timeout(&r.addr, Duration::from_secs(10)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("idle connection: {e}"))?;
            std::thread::sleep(Duration::from_secs(1));
            let with = rss(&r);
            let st = warm_then_measure(r.addr, &la, topics, BrokerLoad::default())?;
            drop(held);
            std::thread::sleep(Duration::from_secs(1));
            println!(
                "idle: RSS {:.1} MiB → {:.1} MiB with {idle_conns} idle connections ({:.0} bytes each); {:.1} MiB after \
                 closing them",
                mib(rss0),
                mib(with),
                with.saturating_sub(rss0) as f64 / idle_conns.max(1) as f64,
                mib(rss(&r))
            );
            st
        }
        Fault::Garbage => {
            let (garbage_conns, resend_ms) = (a.garbage_conns, a.resend_ms);
            let stop = Arc::new(AtomicBool::new(false));
            let counts = Arc::new(GarbageCounts::default());
            let gen = {
                let (stop, counts, addr) = (stop.clone(), counts.clone(), r.addr);
                let every = Duration::from_millis(resend_ms);
                std::thread::spawn(move || garbage(addr, garbage_conns, every, &stop, &counts))
            };
            std::thread::sleep(Duration::from_secs(1));
            let st = warm_then_measure(r.addr, &la, topics, BrokerLoad::default());
            stop.store(true, Ordering::Relaxed);
            let _ = gen.join();
            println!(
                "garbage: {garbage_conns} connections; {} garbage sends, {} closed by the server, {} answered \
                 (unknown code), {} connect failures; RSS {:.1} → {:.1} MiB",
                counts.sent.load(Ordering::Relaxed),
                counts.closed.load(Ordering::Relaxed),
                counts.answered.load(Ordering::Relaxed),
                counts.connect_failed.load(Ordering::Relaxed),
                mib(rss0),
                mib(rss(&r))
            );
            st?
        }
        Fault::Slow => {
            let (readers, list_topics) = (a.readers, a.list_topics);
            let big = BrokerIdent {
                cluster: "perf-slow".into(),
                name: "perf-slow-b0".into(),
                addr: "10.250.0.1:10911".into(),
            };
            let names = topology::topic_names("perf-slow-list", list_topics);
            let mut keep = BlockingConn::connect(r.addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
            keep.register(&big, register_body(&names, 1, 0)).map_err(|e| e.to_string())?;
            let rss1 = rss(&r);
            let socks = slow_readers(r.addr, readers)?;
            std::thread::sleep(Duration::from_secs(2));
            let st = warm_then_measure(r.addr, &la, topics, BrokerLoad::default());
            let held = rss(&r);
            for s in &socks {
                let _ = s.shutdown(Shutdown::Both);
            }
            drop(socks);
            std::thread::sleep(Duration::from_secs(1));
            println!(
                "slow: {readers} readers that never read; RSS {:.1} MiB with the list broker → {:.1} MiB while they \
                 are held ({:.1} MiB each) → {:.1} MiB after they close",
                mib(rss1),
                mib(held),
                mib(held.saturating_sub(rss1)) / readers.max(1) as f64,
                mib(rss(&r))
            );
            drop(keep);
            st?
        }
        Fault::Flap => {
            let (flap_seconds, flappers, flap_rate) = (a.flap_seconds, a.flappers, a.flap_rate);
            let stop = Arc::new(AtomicBool::new(false));
            let cycles = Arc::new(AtomicU64::new(0));
            let failures = Arc::new(AtomicU64::new(0));
            let period =
                if flap_rate > 0.0 { Duration::from_secs_f64(flappers as f64 / flap_rate) } else { Duration::ZERO };
            let handles: Vec<_> = (0..flappers)
                .map(|t| {
                    let (stop, cycles, failures, addr) = (stop.clone(), cycles.clone(), failures.clone(), r.addr);
                    std::thread::spawn(move || flap(addr, t, period, &stop, &cycles, &failures))
                })
                .collect();
            // RSS after each third of the run: equal work in each, so growth from the first to the last is a leak.
            let third = Duration::from_secs_f64(flap_seconds / 3.0);
            let la = LoadArgs { duration: third.as_secs_f64(), ..la };
            let mut thirds = Vec::new();
            let mut worst: Option<Stats> = None;
            for _ in 0..3 {
                let st = warm_then_measure(r.addr, &la, topics.clone(), BrokerLoad::default())?;
                thirds.push((rss(&r), cycles.load(Ordering::Relaxed)));
                match &worst {
                    Some(w) if w.read_us(0.99) >= st.read_us(0.99) => {}
                    _ => worst = Some(st),
                }
            }
            stop.store(true, Ordering::Relaxed);
            for h in handles {
                let _ = h.join();
            }
            std::thread::sleep(Duration::from_secs(1));
            let n = cycles.load(Ordering::Relaxed);
            println!(
                "flap: {n} connect-register-drop cycles in {flap_seconds:.0} s ({:.0}/s), {} failed; RSS {:.1} MiB \
                 before, after each third {}, {:.1} MiB a second after the end",
                n as f64 / flap_seconds,
                failures.load(Ordering::Relaxed),
                mib(rss0),
                thirds.iter().map(|(b, c)| format!("{:.1} MiB ({c} cycles)", mib(*b))).collect::<Vec<_>>().join(", "),
                mib(rss(&r))
            );
            println!("flap: the third with the worst p99 is reported below");
            worst.expect("three thirds")
        }
    };
    let cpu2 = cpus(&r);
    println!("under fault:  {}", faulted.summary());
    // CPU seconds per wall second: on 2 shared cores, a fault that costs the generator CPU shows up as latency too.
    let per_s = |a: Duration, b: Duration, wall: Duration| (b.saturating_sub(a)).as_secs_f64() / wall.as_secs_f64();
    println!(
        "CPU (cores busy) server {:.2} clean, {:.2} under fault (whole fault phase); this generator {:.2}, {:.2}",
        per_s(cpu0.0, cpu1.0, cpu1.2 - cpu0.2),
        per_s(cpu1.0, cpu2.0, cpu2.2 - cpu1.2),
        per_s(cpu0.1, cpu1.1, cpu1.2 - cpu0.2),
        per_s(cpu1.1, cpu2.1, cpu2.2 - cpu1.2),
    );
    println!(
        "under fault / clean: p50 {:.2}, p99 {:.2}, p999 {:.2}, QPS {:.2} (load average after: {})",
        faulted.read_us(0.5) / clean.read_us(0.5),
        faulted.read_us(0.99) / clean.read_us(0.99),
        faulted.read_us(0.999) / clean.read_us(0.999),
        faulted.qps() / clean.qps(),
        loadavg()
    );
    Ok(())
}

/// CPU time of the server and of this process so far, and when they were read.
fn cpus(r: &Running) -> (Duration, Duration, Instant) {
    let server = r.server.as_ref().and_then(|s| s.cpu()).unwrap_or_default();
    (server, cpu_of(std::process::id()).unwrap_or_default(), Instant::now())
}

fn rss(r: &Running) -> u64 {
    r.server.as_ref().and_then(|s| s.rss()).unwrap_or(0)
}

fn mib(b: u64) -> f64 {
    b as f64 / 1048576.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[derive(Default)]
struct GarbageCounts {
    sent: AtomicU64,
    closed: AtomicU64,
    answered: AtomicU64,
    connect_failed: AtomicU64,
}

/// The garbage of connection `i`: the same kinds as tests/reliability.rs, chosen by `i`.
fn garbage_bytes(i: usize, x: &mut u64) -> Vec<u8> {
    let frame = |word: u32, rest: &[u8]| {
        let mut v = ((rest.len() + 4) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(&word.to_be_bytes());
        v.extend_from_slice(rest);
        v
    };
    let encoded = |cmd: RemotingCommand| {
        let mut out = BytesMut::new();
        frame::encode(&cmd, &mut out);
        out.to_vec()
    };
    match i % 8 {
        0 => (0..1024)
            .map(|_| {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                *x as u8 | 0x02
            })
            .collect(),
        1 => b"GET /cluster HTTP/1.1\r\nHost: namesrv\r\n\r\n".to_vec(),
        2 => 0x7fff_ffffu32.to_be_bytes().to_vec(),
        3 => vec![0, 0, 0, 2, 0, 0],
        4 => frame(9, b"{\"code\":,"),
        5 => frame((7 << 24) | 2, b"{}"),
        6 => encoded(RemotingCommand::request(9999, i as i32)),
        _ => {
            let full = encoded(RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1).with_ext("topic", "x"));
            full[..full.len() / 2].to_vec()
        }
    }
}

/// Keeps `n` garbage connections busy until `stop`: each sends its garbage, and every `every` checks whether the
/// server closed it (then reconnects) or answered (then sends again); half frames just stay.
fn garbage(addr: SocketAddr, n: usize, every: Duration, stop: &AtomicBool, counts: &GarbageCounts) {
    let mut slots: Vec<(Option<TcpStream>, Instant)> = (0..n).map(|_| (None, Instant::now())).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (i, (slot, due)) in slots.iter_mut().enumerate() {
            if *due > now {
                continue;
            }
            *due = now + every;
            if let Some(s) = slot.as_mut() {
                match s.read(&mut chunk) {
                    Ok(0) => {
                        counts.closed.fetch_add(1, Ordering::Relaxed);
                        *slot = None;
                    }
                    Ok(_) => {
                        counts.answered.fetch_add(1, Ordering::Relaxed);
                        if s.write_all(&garbage_bytes(i, &mut x)).is_ok() {
                            counts.sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => {
                        counts.closed.fetch_add(1, Ordering::Relaxed);
                        *slot = None;
                    }
                }
                continue;
            }
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(mut s) => {
                    if s.write_all(&garbage_bytes(i, &mut x)).is_ok() {
                        counts.sent.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = s.set_nonblocking(true);
                    *slot = Some(s);
                }
                Err(_) => {
                    counts.connect_failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `n` connections, each with a thread writing GET_ALL_TOPIC_LIST requests in 64 KiB chunks until the server stops
/// reading (the write blocks); nothing is ever read. Shut the returned sockets down to end the threads.
fn slow_readers(addr: SocketAddr, n: usize) -> Result<Vec<TcpStream>, String> {
    let mut req = BytesMut::new();
    frame::encode(&RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 1), &mut req);
    let batch: Arc<Vec<u8>> = Arc::new(req.iter().copied().cycle().take(req.len() * 4096).collect());
    (0..n)
        .map(|_| {
            let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
            let mut w = s.try_clone().map_err(|e| e.to_string())?;
            let batch = batch.clone();
            std::thread::spawn(move || while w.write_all(&batch).is_ok() {});
            Ok(s)
        })
        .collect()
}

/// One flapping broker thread: connect, register three topics of a fresh broker, drop the connection; paced to one
/// cycle per `period`.
fn flap(addr: SocketAddr, t: usize, period: Duration, stop: &AtomicBool, cycles: &AtomicU64, failures: &AtomicU64) {
    let mut next = Instant::now();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += period;
        i += 1;
        let b = BrokerIdent {
            cluster: "perf-flap".into(),
            name: format!("perf-flap-{t}-{i}"),
            addr: format!("10.251.{}.{}:10911", t % 250, i % 250 + 1),
        };
        let names = [format!("{}-a", b.name), format!("{}-b", b.name), format!("{}-c", b.name)];
        let ok = BlockingConn::connect(addr, Duration::from_secs(5))
            .and_then(|mut c| c.register(&b, register_body(&names, 1, 0)))
            .is_ok_and(|f| f.code == 0);
        if ok {
            cycles.fetch_add(1, Ordering::Relaxed);
        } else {
            failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}
