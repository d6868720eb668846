//! `namesrv-perf acl`: what authentication costs a route query. Four variants, measured in interleaved rounds
//! under the same closed-loop load: ours with ACL off and unsigned queries (the baseline), ACL off with signed
//! queries (the cost of two more ext fields to decode), `aclEnable` with signed queries (plus the account lookup and
//! the HMAC-SHA1 over each request), and `authenticationEnabled` (ACL 2.0: the same check against a learned user). The headline is server CPU per request; QPS on a shared 2-core machine is
//! bounded by the generator, which also signs (once per request, like a real client).

use std::time::{Duration, Instant};

use clap::Args;

use crate::load;
use crate::scenarios::spec;
use crate::servers::{self, Kind, Launch, Server, ACL_READER};
use crate::topology::{self, Topology};
use crate::wire::BlockingConn;
use crate::LoadArgs;

#[derive(Args, Debug)]
pub struct AclArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    #[arg(long, default_value_t = 100)]
    topics: usize,
    #[arg(long, default_value_t = 2)]
    brokers: usize,
}

struct Variant {
    name: &'static str,
    kind: Kind,
    signed: bool,
}

const VARIANTS: [Variant; 4] = [
    Variant { name: "ACL off, unsigned", kind: Kind::Ours, signed: false },
    Variant { name: "ACL off, signed", kind: Kind::Ours, signed: true },
    Variant { name: "ACL on, signed", kind: Kind::OursAcl, signed: true },
    Variant { name: "ACL 2.0 on, signed", kind: Kind::OursAcl2, signed: true },
];

/// One measured run: QPS, server CPU µs per request, read p99 µs.
type Measured = (f64, f64, f64);

pub fn run(a: &AclArgs) -> Result<(), String> {
    let launch = Launch::default();
    let topo = Topology { clusters: 1, brokers_per_cluster: a.brokers, topics_per_cluster: a.topics };
    let mut results: Vec<Vec<Measured>> = VARIANTS.iter().map(|_| Vec::new()).collect();
    for round in 0..a.rounds.max(1) {
        println!("round {}/{}", round + 1, a.rounds.max(1));
        for (i, v) in VARIANTS.iter().enumerate() {
            let s = Server::start(v.kind, &launch)?;
            let inst = topology::install(s.addr, topo)?;
            if v.kind == Kind::OursAcl {
                withdraw_loopback_trust(&s)?;
            }
            let topics = inst.query_topics(a.topics);
            let mut sp = spec(s.addr, &a.load, topics, Default::default(), a.load.warmup);
            sp.query.sign = v.signed.then(|| (ACL_READER.0.to_string(), ACL_READER.1.to_string()));
            if a.load.warmup > 0.0 {
                load::run(&sp).map_err(|e| e.to_string())?;
            }
            sp.duration = Duration::from_secs_f64(a.load.duration);
            let cpu0 = s.cpu();
            let st = load::run(&sp).map_err(|e| format!("{}: {e}\n{}", v.name, s.log_tail()))?;
            let cpu = s.cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a)).unwrap_or_default();
            if st.errors > 0 || st.ok == 0 {
                return Err(format!(
                    "{}: {} errors, {} answered: the run is not valid\n{}",
                    v.name,
                    st.errors,
                    st.ok,
                    s.log_tail()
                ));
            }
            let answered = (st.ok + st.not_found).max(1) as f64;
            let m = (st.qps(), cpu.as_secs_f64() * 1e6 / answered, st.read_us(99.0));
            println!("  {:<20} {:>9.0}/s  CPU {:>5.2} µs/request  p99 {:>6.0} µs", v.name, m.0, m.1, m.2);
            results[i].push(m);
        }
    }
    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    println!("\nmedians over {} rounds:", a.rounds.max(1));
    let base_cpu = median(&mut results[0].iter().map(|m| m.1).collect());
    for (v, rs) in VARIANTS.iter().zip(&results) {
        let (qps, cpu, p99) = (
            median(&mut rs.iter().map(|m| m.0).collect()),
            median(&mut rs.iter().map(|m| m.1).collect()),
            median(&mut rs.iter().map(|m| m.2).collect()),
        );
        println!("| {} | {qps:.0} | {cpu:.2} | {:.2}× | {p99:.0} |", v.name, cpu / base_cpu);
    }
    Ok(())
}

/// Rewrites the account file without the loopback trust and waits until an unsigned query is refused (the server
/// re-reads the file every half second).
fn withdraw_loopback_trust(s: &Server) -> Result<(), String> {
    std::fs::write(s.dir().join("plain_acl.yml"), servers::acl_accounts(false)).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c = BlockingConn::connect(s.addr, Duration::from_secs(1)).map_err(|e| e.to_string())?;
    loop {
        let f = c.route("perf-acl-probe").map_err(|e| e.to_string())?;
        if f.code == 16 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("ours-acl still answers unsigned queries (code {})\n{}", f.code, s.log_tail()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
