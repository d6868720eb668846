//! What a re-registration costs the server: one cluster of masters sharing N topics re-register back to back over
//! one connection, ours and the Java 5.5.0 name server one after the other in one run, same bodies. Three kinds:
//! the same body at a new DataVersion counter, the same body unchanged (what a Java broker sends every 30 s with
//! `forceRegister`), and a body with k topics' perm flipped. Headline: server CPU per registration (from
//! /proc/<pid>/stat, 10 ms ticks, so each phase runs long enough for hundreds of ticks on Java); wall time per
//! registration is the client's view. Java gets its JIT warmed by a warm-up phase of every kind first.

use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;

use crate::scenarios::running;
use crate::servers::Kind;
use crate::topology;
use crate::wire::{register_body_as, BlockingConn, BrokerIdent};
use crate::SideBySide;

#[derive(Args, Debug)]
pub struct ReregArgs {
    #[command(flatten)]
    servers: SideBySide,
    /// Masters of the cluster (each re-registers in turn).
    #[arg(long, default_value_t = 8)]
    brokers: usize,
    /// Topics per broker (all brokers carry the same topics).
    #[arg(long, default_value_t = 10_000)]
    topics: usize,
    /// Topics whose perm flips in the "changed" phase.
    #[arg(long, default_value_t = 100)]
    changed: usize,
    /// Registrations per measured phase.
    #[arg(long, default_value_t = 300)]
    count: usize,
    /// Registrations of each kind before measuring (JIT warm-up).
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    /// Compressed bodies (zlib), as brokers with `compressedRegister=true` send them.
    #[arg(long)]
    zlib: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NewCounter,
    Identical,
    Changed,
}

struct Measured {
    cpu_ms: f64,
    wall_ms: f64,
    wall_p99_ms: f64,
}

pub fn run(a: &ReregArgs) -> Result<(), String> {
    let topics = topology::cluster_topics(0, a.topics);
    let brokers = topology::brokers(1, a.brokers);
    let register_body = |topics: &[String], counter, read_only| register_body_as(topics, counter, read_only, a.zlib);
    let body_bytes = register_body(&topics, 1, 0).len();
    println!(
        "{} masters × {} shared topics, {:.2} MB {} bodies; {} measured registrations per phase after {} warm-up",
        a.brokers,
        a.topics,
        body_bytes as f64 / 1e6,
        if a.zlib { "zlib" } else { "JSON" },
        a.count,
        a.warmup
    );
    let mut rows = Vec::new();
    for target in a.servers.targets() {
        let kind = target.server;
        let r = running(&target)?;
        let server = r.server.as_ref().expect("started here");
        let mut conn = BlockingConn::connect(r.addr, Duration::from_secs(60)).map_err(|e| e.to_string())?;
        let mut counter = 1;
        for b in &brokers {
            call(&mut conn, b, register_body(&topics, counter, 0))?;
        }
        let phases = [Phase::NewCounter, Phase::Identical, Phase::Changed];
        for phase in phases {
            run_phase(&mut conn, &brokers, &topics, a, phase, a.warmup, &mut counter, || None)?;
        }
        for phase in phases {
            let m = run_phase(&mut conn, &brokers, &topics, a, phase, a.count, &mut counter, || server.cpu())?;
            let m = m.expect("measured");
            println!(
                "{kind:?} {phase:?}: CPU {:.3} ms/registration, wall {:.3} ms mean, {:.3} ms p99",
                m.cpu_ms, m.wall_ms, m.wall_p99_ms
            );
            rows.push((kind, phase, m));
        }
        println!("{kind:?} RSS {:.0} MB", server.rss().unwrap_or(0) as f64 / 1048576.0);
    }
    println!("\n| phase | server | CPU ms/registration | wall ms mean | wall ms p99 |\n|---|---|---|---|---|");
    for (kind, phase, m) in &rows {
        println!("| {phase:?} | {kind:?} | {:.3} | {:.3} | {:.3} |", m.cpu_ms, m.wall_ms, m.wall_p99_ms);
    }
    for phase in [Phase::NewCounter, Phase::Identical, Phase::Changed] {
        let of = |k: Kind| rows.iter().find(|(kk, p, _)| *kk == k && *p == phase).map(|(_, _, m)| m);
        if let (Some(o), Some(j)) = (of(Kind::Ours), of(Kind::Java)) {
            println!(
                "{phase:?}: Java/ours CPU {:.1}×, wall {:.1}×",
                j.cpu_ms / o.cpu_ms.max(1e-9),
                j.wall_ms / o.wall_ms.max(1e-9)
            );
        }
    }
    Ok(())
}

/// `count` registrations of one kind, brokers in turn; `cpu` reads the server's CPU time (`None`: not measured).
#[allow(clippy::too_many_arguments)]
fn run_phase(
    conn: &mut BlockingConn,
    brokers: &[BrokerIdent],
    topics: &[String],
    a: &ReregArgs,
    phase: Phase,
    count: usize,
    counter: &mut i64,
    cpu: impl Fn() -> Option<Duration>,
) -> Result<Option<Measured>, String> {
    let register_body = |topics: &[String], counter, read_only| register_body_as(topics, counter, read_only, a.zlib);
    // Bodies are built before the clock starts; the identical phase re-sends each broker's last body.
    let bodies: Vec<Bytes> = (0..count)
        .map(|i| match phase {
            Phase::NewCounter => {
                *counter += 1;
                register_body(topics, *counter, 0)
            }
            Phase::Identical => register_body(topics, *counter, 0),
            Phase::Changed => {
                *counter += 1;
                // Each broker's bodies alternate, so every one differs from that broker's previous one.
                register_body(topics, *counter, if (i / brokers.len()).is_multiple_of(2) { a.changed } else { 0 })
            }
        })
        .collect();
    let cpu0 = cpu();
    let mut walls = Vec::with_capacity(count);
    for (i, b) in bodies.into_iter().enumerate() {
        let t = Instant::now();
        call(conn, &brokers[i % brokers.len()], b)?;
        walls.push(t.elapsed());
    }
    let (Some(c0), Some(c1)) = (cpu0, cpu()) else {
        return Ok(None);
    };
    walls.sort();
    let n = count.max(1) as f64;
    let wall_ms = walls.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1e3 / n;
    let p99 = walls.get(((walls.len() as f64) * 0.99) as usize).or(walls.last()).copied().unwrap_or_default();
    Ok(Some(Measured {
        cpu_ms: c1.saturating_sub(c0).as_secs_f64() * 1e3 / n,
        wall_ms,
        wall_p99_ms: p99.as_secs_f64() * 1e3,
    }))
}

fn call(conn: &mut BlockingConn, b: &BrokerIdent, body: Bytes) -> Result<(), String> {
    let f = conn.register(b, body).map_err(|e| format!("register {}: {e}", b.name))?;
    if f.code != 0 {
        return Err(format!("register {} answered code {}", b.name, f.code));
    }
    Ok(())
}
