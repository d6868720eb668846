//! `mqnamesrv`: command line → Config → tracing → server::start → wait for SIGINT/SIGTERM → shutdown.
//! `mqnamesrv admin …` runs the admin client instead (`namesrv::cli`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use tracing::{info, warn};

use namesrv::config::Config;
use namesrv::protocol::props;

/// jemalloc hands freed pages back to the OS within seconds (with its background thread); glibc kept the freed heap
/// of a cold load (decision 0014; the number: perf/results/2026-12-06-numbers-from-comments.md).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The keys besides tls.* that `-D` sets.
const LOG_KEYS: [&str; 4] = ["logDir", "logMaxFileSize", "logMaxFiles", "logFormat"];

/// A drop-in replacement for the Apache RocketMQ NameServer (mqnamesrv).
///
/// Listens on 0.0.0.0:9876 by default. Configuration uses the Java key names (listenPort, bindAddress,
/// scanNotActiveBrokerInterval, serverChannelMaxIdleTimeSeconds, kvConfigPath, orderMessageEnable, …) plus
/// reactorThreads, pinThreads, maxFrameLength, writerQueueCapacity and maxInflatedBody. Logs go to stderr, or with
/// logDir to logDir/namesrv.log rolled by size (logMaxFileSize, logMaxFiles); logFormat=json for JSON lines. Set
/// RUST_LOG (e.g. RUST_LOG=debug) for more.
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
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS", action = clap::ArgAction::Append)]
    namesrv_addr: Vec<String>,
    /// A TLS setting as Java takes it, as a system property (-Dtls.server.mode=enforcing), or a log setting
    /// (-DlogDir=/var/log/rocketmq, logMaxFileSize, logMaxFiles, logFormat); these override the -c file.
    #[arg(short = 'D', value_name = "KEY=VALUE")]
    system_props: Vec<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Query and change a running name server: route, cluster, topics, kv, config, diff, and mqadmin's commands
    /// (topicRoute, clusterList, topicList, getNamesrvConfig, updateNamesrvConfig, updateKvConfig, getKvConfig,
    /// deleteKvConfig, wipeWritePerm, addWritePerm, deleteTopic); and a controller (-a): getControllerMetaData,
    /// getSyncStateSet, electMaster, cleanBrokerMetadata. `mqnamesrv admin --help` lists them all.
    Admin(namesrv::cli::AdminArgs),
    /// Run only the controller (RIP-44), as Java's `mqcontroller` (ControllerStartup) does: the controller keys of
    /// the -c file (controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId, controllerStorePath, …),
    /// no name server. `mqnamesrv -c controller.properties controller`.
    Controller,
}

fn main() -> ExitCode {
    #[cfg(feature = "jemalloc")]
    {
        // One thread purges what the others freed, without waiting for more allocations; if jemalloc cannot start it,
        // purging happens on the allocating threads instead, later.
        let _ = tikv_jemalloc_ctl::max_background_threads::write(1);
        let _ = tikv_jemalloc_ctl::background_thread::write(true);
    }
    // mqadmin's two-letter `-bn` (electMaster, cleanBrokerMetadata) is rewritten to `--brokerName` first.
    let args = Args::parse_from(namesrv::cli::mqadmin_argv(std::env::args_os()));
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
            Some((k, v)) if k.starts_with("tls.") || LOG_KEYS.contains(&k) => {
                warnings.extend(config.apply(&[(k.into(), v.into())]))
            }
            _ => {
                warnings.push(format!("ignoring -D{prop}: only tls.* and log* settings are read as system properties"))
            }
        }
    }
    if args.print_config_item {
        for w in &warnings {
            eprintln!("mqnamesrv: warning: {w}");
        }
        print!("{}", props::write(&config.all_entries()));
        return ExitCode::SUCCESS;
    }
    if let Err(e) = namesrv::logging::init(&config) {
        eprintln!("mqnamesrv: {e}");
        return ExitCode::from(2);
    }
    for w in &warnings {
        warn!("{w}");
    }

    if matches!(args.command, Some(Command::Controller)) {
        return run_controller(&config, signals_or_exit());
    }
    let handle = match namesrv::server::start(config) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mqnamesrv: {e}");
            return ExitCode::from(1);
        }
    };
    // Java prints this line to stdout and to its log, word for word; start scripts wait for "boot success".
    let tip = namesrv::server::boot_line(handle.local_addr());
    info!("{tip}");
    println!("{tip}");

    let Some(mut signals) = signals_or_exit() else { return ExitCode::from(1) };
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

fn signals_or_exit() -> Option<signal_hook::iterator::Signals> {
    signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| eprintln!("mqnamesrv: cannot install signal handlers: {e}"))
        .ok()
}

/// `mqnamesrv controller`: the controller alone, until SIGINT or SIGTERM.
fn run_controller(config: &Config, signals: Option<signal_hook::iterator::Signals>) -> ExitCode {
    let Some(mut signals) = signals else { return ExitCode::from(1) };
    let started = namesrv::controller_node::Settings::from_keys(&config.extra, config.scan_not_active_broker_interval)
        .map_err(namesrv::controller_node::ControllerStartError::from)
        .and_then(|settings| {
            let clock = std::sync::Arc::new(namesrv::clock::SystemClock);
            namesrv::controller_node::start(
                settings,
                config.max_frame_length,
                clock,
                Default::default(),
                config.admin_allow_list.clone(),
            )
        });
    let handle = match started {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mqnamesrv: controller: {e}");
            return ExitCode::from(1);
        }
    };
    // Java's ControllerStartup line, word for word.
    let tip = "The Controller Server boot success. serializeType=JSON";
    info!(address = %handle.local_addr(), "{tip}");
    println!("{tip}");
    if let Some(sig) = signals.forever().next() {
        info!(signal = sig, "controller shutting down");
    }
    handle.shutdown();
    ExitCode::SUCCESS
}
