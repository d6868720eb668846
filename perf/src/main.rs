//! `namesrv-perf`: load generator, scenarios, the no-work ceiling server and the side-by-side comparison with the
//! Java name server. Loopback only; every run is bounded in time and request count. See perf/README.md.

mod acl;
mod bigcluster;
mod ceiling;
mod faults;
mod load;
mod pace;
mod report;
mod rereg;
mod scenarios;
mod servers;
mod topology;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use servers::Kind;

#[derive(Parser, Debug)]
#[command(name = "namesrv-perf", about = "Load generator and comparison harness for namesrv")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Route queries over N topics (closed or open loop).
    Query(scenarios::QueryArgs),
    /// The "JMH topology": clusters × brokers × topics re-registering while clients query; churn vs idle.
    Jmh(scenarios::JmhArgs),
    /// Registration storm: many brokers re-registering every interval, with a light query load.
    Storm(scenarios::StormArgs),
    /// RSS of the server process at 40k and 400k topic-queue entries.
    Memory(scenarios::MemoryArgs),
    /// Start-to-ready time: process spawn to the first answered request.
    Startup(scenarios::StartupArgs),
    /// Java 5.5.0, ours and the ceiling one after another under the same load; writes perf/results/<date>.md.
    Compare(scenarios::CompareArgs),
    /// Faults (idle connections, garbage, slow readers, flapping brokers): well-behaved p99 clean vs under the fault.
    Faults(faults::FaultsArgs),
    /// What aclEnable=true costs a route query: ACL off unsigned / off signed / on signed, interleaved rounds.
    Acl(acl::AclArgs),
    /// CPU per re-registration (same body at a new DataVersion, identical, k topics changed): ours vs Java.
    Rereg(rereg::ReregArgs),
    /// 10 clusters × 30 brokers × 10k topics (3M entries): cold load, then reads at a fixed rate alone, with
    /// re-registrations every 30 s and every 3 s; ours vs Java.
    BigCluster(bigcluster::BigClusterArgs),
    /// The no-work ceiling server (started by `compare`; runs until killed).
    Ceiling(CeilingArgs),
}

/// Which server to load: one this harness starts, or one already running.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Start this server as a process (ours needs `cargo build --release` first).
    #[arg(long, default_value = "ours")]
    server: Kind,
    /// Load a server that is already running instead (no CPU/RSS figures then).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Our server binary.
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    /// Java heap, used for -Xms and -Xmx.
    #[arg(long, default_value = "1g")]
    java_heap: String,
    /// A `KEY=VALUE` line for our server's properties file (repeatable), e.g. `decoderQueueBytes=1073741824`.
    #[arg(long = "ours-set")]
    ours_set: Vec<String>,
}

/// The servers a side-by-side scenario starts one after the other, and how.
#[derive(Args, Debug, Clone)]
pub struct SideBySide {
    /// Servers to measure, in this order.
    #[arg(long, value_delimiter = ',', default_value = "ours,java")]
    servers: Vec<Kind>,
    /// Java heap (-Xms/-Xmx); the shipped runserver.sh uses 4g.
    #[arg(long, default_value = "4g")]
    java_heap: String,
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    /// A `KEY=VALUE` line for our server's properties file (repeatable).
    #[arg(long = "ours-set")]
    ours_set: Vec<String>,
}

impl SideBySide {
    /// Each server in turn, as a target this harness starts.
    pub fn targets(&self) -> impl Iterator<Item = Target> + '_ {
        self.servers.iter().map(|&kind| Target {
            server: kind,
            addr: None,
            ours_bin: self.ours_bin.clone(),
            java_heap: self.java_heap.clone(),
            ours_set: self.ours_set.clone(),
        })
    }
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Header {
    Json,
    Rocketmq,
}

/// Generator settings shared by the scenarios.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Query connections.
    #[arg(long, default_value_t = 16)]
    conns: usize,
    /// Requests in flight per connection (closed loop), or its cap (open loop).
    #[arg(long, default_value_t = 8)]
    depth: usize,
    /// Open loop at this total rate (requests/s); closed loop when absent.
    #[arg(long)]
    rate: Option<f64>,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Unmeasured seconds of the same load first.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Stop after this many query responses.
    #[arg(long, default_value_t = 50_000_000)]
    max_requests: u64,
    #[arg(long, value_enum, default_value = "json")]
    header: Header,
    /// Generator threads (connections are dealt among them).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

#[derive(Args, Debug)]
struct CeilingArgs {
    #[arg(long)]
    port: u16,
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Broker groups in the canned route body.
    #[arg(long, default_value_t = 2)]
    route_brokers: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Query(a) => scenarios::query(&a),
        Cmd::Jmh(a) => scenarios::jmh(&a),
        Cmd::Storm(a) => scenarios::storm(&a),
        Cmd::Memory(a) => scenarios::memory(&a),
        Cmd::Startup(a) => scenarios::startup(&a),
        Cmd::Compare(a) => scenarios::compare(&a),
        Cmd::Faults(a) => faults::run(&a),
        Cmd::Acl(a) => acl::run(&a),
        Cmd::Rereg(a) => rereg::run(&a),
        Cmd::BigCluster(a) => bigcluster::run(&a),
        Cmd::Ceiling(a) => {
            ceiling::serve(a.port, a.threads, ceiling::canned_route_body(a.route_brokers)).map_err(|e| e.to_string())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("namesrv-perf: {e}");
            ExitCode::FAILURE
        }
    }
}
