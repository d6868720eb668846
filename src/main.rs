//! `mqnamesrv`: command line → Config → tracing → server::start → wait for SIGINT/SIGTERM → shutdown.
//! `mqnamesrv admin …` runs the admin client instead (`namesrv::cli`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use tracing::{info, warn};

use namesrv::config::Config;
use namesrv::protocol::props;

/// A drop-in replacement for the Apache RocketMQ NameServer (mqnamesrv).
///
/// Listens on 0.0.0.0:9876 by default. Configuration uses the Java key names (listenPort, bindAddress,
/// scanNotActiveBrokerInterval, serverChannelMaxIdleTimeSeconds, kvConfigPath, orderMessageEnable, …) plus
/// reactorThreads, pinThreads, maxFrameLength, writerQueueCapacity and maxInflatedBody. Logs go to stderr;
/// set RUST_LOG (e.g. RUST_LOG=debug) for more.
#[derive(Parser, Debug)]
#[command(name = "mqnamesrv", version = namesrv::VERSION)]
struct Args {
    /// Name server config properties file (Java key names).
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Print all config items and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config_item: bool,
    /// Accepted for compatibility with the Java start-up; has no effect on a name server. Before `admin`, the
    /// name server the admin command talks to.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    namesrv_addr: Option<String>,
    /// A TLS setting as Java takes it, as a system property: -Dtls.server.mode=enforcing (tls.* keys only; these
    /// override the -c file).
    #[arg(short = 'D', value_name = "KEY=VALUE")]
    system_props: Vec<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Query and change a running name server (route, cluster, topics, kv, config, diff).
    Admin(namesrv::cli::AdminArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Admin(mut admin)) = args.command {
        // `mqnamesrv -n host:port admin …` (the flag before the subcommand, as mqadmin users type it) counts too.
        if admin.namesrv.is_empty() {
            admin.namesrv.extend(args.namesrv_addr);
        }
        return namesrv::cli::run(admin);
    }
    let (mut config, mut warnings) = match &args.config_file {
        Some(path) => match Config::from_file(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("mqnamesrv: {e}");
                return ExitCode::from(2);
            }
        },
        None => (Config::default(), Vec::new()),
    };
    for prop in &args.system_props {
        match prop.split_once('=') {
            Some((k, v)) if k.starts_with("tls.") => warnings.extend(config.apply(&[(k.into(), v.into())])),
            _ => warnings.push(format!("ignoring -D{prop}: only tls.* settings are read as system properties")),
        }
    }
    if args.print_config_item {
        for w in &warnings {
            eprintln!("mqnamesrv: warning: {w}");
        }
        print!("{}", props::write(&config.all_entries()));
        return ExitCode::SUCCESS;
    }
    if let Err(e) = init_logging(&config) {
        eprintln!("mqnamesrv: {e}");
        return ExitCode::from(2);
    }
    for w in &warnings {
        warn!("{w}");
    }

    let handle = match namesrv::server::start(config) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mqnamesrv: {e}");
            return ExitCode::from(1);
        }
    };
    // Java prints this line to stdout; start scripts grep for it.
    println!("The Name Server boot success. serializeType=JSON, address={}", handle.local_addr());

    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mqnamesrv: cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(sig) = signals.forever().next() {
        info!(signal = sig, "shutting down: no new connections, finishing requests in flight");
    }
    // A second signal stops at once.
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            std::process::exit(1);
        }
    });
    let complete = handle.shutdown_gracefully();
    info!(complete, "stopped");
    ExitCode::SUCCESS
}

/// Logs to stderr (`RUST_LOG` filters, default `info`); with `auditLogPath`, the audit trail (target `audit`) goes
/// to that file instead, appended, one line per event.
fn init_logging(config: &Config) -> Result<(), String> {
    use tracing_subscriber::filter::{filter_fn, EnvFilter};
    use tracing_subscriber::prelude::*;

    let env = || EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let path = config.audit_log_path.trim();
    let audit_file = match path {
        "" => None,
        p => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("cannot open auditLogPath {p}: {e}"))?,
        ),
    };
    let to_file = audit_file.is_some();
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(env())
        .with_filter(filter_fn(move |m| !(to_file && m.target() == namesrv::audit::TARGET)));
    let audit = audit_file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::sync::Mutex::new(f))
            .with_ansi(false)
            .with_filter(env())
            .with_filter(filter_fn(|m| m.target() == namesrv::audit::TARGET))
    });
    tracing_subscriber::registry().with(stderr).with(audit).init();
    Ok(())
}
