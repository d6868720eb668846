//! `mqnamesrv admin …`: a small admin client for a running name server (ours or the Java one).
//!
//! - `client`: a blocking remoting client over `std::net::TcpStream` (JSON headers, request version 513, so routes
//!   come back as standard JSON; cluster info in fastjson's default dialect is read by the lenient reader).
//! - `decode`: response bodies → `model` types.
//! - `table`: human-readable tables; `--json` prints JSON instead.
//! - one file per command group: `route` (route, topics), `cluster`, `kv`, `config`, `diff`, `perm` (write
//!   permission, topic deletion), `controller` (RIP-44 controller commands, sent to a controller's `-a` instead).
//!   mqadmin's command and flag names work too (`topicRoute -t`, `updateKvConfig -s -k -v`, `wipeWritePerm -b`,
//!   `electMaster -bn`, …); `-n` may stand before or after the command, and `NAMESRV_ADDR` is the default.
//! - `argv`: the command line before clap: mqadmin's `-bn`, and admin commands typed without `admin`.
//! - `servers`: with several name servers, a read goes to the first that answers and a write to every one, each
//!   server's outcome printed.
//!
//! Exit codes: 0 success (for `diff`: identical), 1 an error answered by a server (its code and remark are printed),
//! a missing topic, KV entry or controller broker group, or `diff` found differences, 2 a server that cannot be
//! reached or does not answer, or bad arguments. A write that failed on some servers exits with the worst failure's
//! code.

mod argv;
mod client;
mod cluster;
mod config;
mod controller;
mod decode;
mod diff;
mod health;
mod kv;
mod perm;
mod route;
mod servers;
mod table;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::model::{BrokerData, QueueData};
use crate::protocol::{RemotingCommand, ResponseCode};
pub use argv::mqadmin_argv;
use client::Client;

/// Where `-n` points when it is not given (the Java default).
pub(crate) const DEFAULT_NAMESRV: &str = "127.0.0.1:9876";

/// Query and change a running name server.
#[derive(Args, Debug, Clone)]
pub struct AdminArgs {
    /// Name server address host:port; repeat it (or separate with ';') to name several servers: reads go to the
    /// first that answers, writes to every one. Default: $NAMESRV_ADDR, then 127.0.0.1:9876.
    #[arg(
        short = 'n',
        long = "namesrvAddr",
        visible_alias = "namesrv",
        value_name = "HOST:PORT",
        global = true,
        action = clap::ArgAction::Append
    )]
    pub namesrv: Vec<String>,
    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Sign requests with this account (`aclEnable` servers); without it, `$ROCKETMQ_HOME/conf/tools.yml` is used
    /// if it exists, as mqadmin does.
    #[arg(long = "accessKey", visible_alias = "access-key", value_name = "AK", global = true, requires = "secret_key")]
    pub access_key: Option<String>,
    /// The account's secret key (with --accessKey).
    #[arg(long = "secretKey", visible_alias = "secret-key", value_name = "SK", global = true, requires = "access_key")]
    pub secret_key: Option<String>,
    /// How long to wait for a connection and for each response, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 3000, global = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum AdminCommand {
    /// Route of a topic: brokers (name, cluster, id → address) and queues (read/write counts, perm, sysflag).
    #[command(visible_alias = "topicRoute")]
    Route {
        /// Topic name (or `-t TOPIC`, as mqadmin takes it).
        #[arg(required_unless_present = "topic_flag", conflicts_with = "topic_flag")]
        topic: Option<String>,
        /// Topic name, as mqadmin's topicRoute takes it.
        #[arg(short = 't', long = "topic", id = "topic_flag", value_name = "TOPIC")]
        topic_flag: Option<String>,
    },
    /// Clusters, their brokers, and each broker's ids and addresses.
    #[command(visible_alias = "clusterList")]
    Cluster,
    /// Every topic the name server knows, sorted.
    #[command(visible_alias = "topicList")]
    Topics,
    /// KV configuration (namespaced key/value pairs).
    #[command(subcommand)]
    Kv(KvCommand),
    /// Name server configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Compare cluster info and every topic route across two or more servers (-n A -n B); exit 1 if they differ.
    Diff,
    /// What is wrong, as the server judges it: groups without a master, wiped write permission, late heartbeats,
    /// lost brokers, topics nobody can write to, fleet drift. Exit 0 when nothing is, 1 when something is, 2 when
    /// the server cannot be read: fit for cron and probes. Reads the HTTP endpoint (httpAddress), not -n.
    Health {
        /// The server's HTTP endpoint, host:port (its httpAddress); repeat it or separate with ';' for several.
        /// Default: $NAMESRV_HTTP.
        #[arg(long = "http", value_name = "HOST:PORT", action = clap::ArgAction::Append)]
        http: Vec<String>,
    },
    /// Clear the write permission of a broker's queues in the name server(s) (205), so that producers stop sending
    /// to it before it is taken down. Undone by addWritePerm, or when the broker registers changed topic configs.
    #[command(name = "wipeWritePerm")]
    WipeWritePerm {
        /// Broker name (the broker group) whose queues lose their write permission.
        #[arg(short = 'b', long = "brokerName", value_name = "BROKER")]
        broker: String,
    },
    /// Give a broker's queues read and write permission again in the name server(s) (327).
    #[command(name = "addWritePerm")]
    AddWritePerm {
        /// Broker name (the broker group) whose queues get read and write permission back.
        #[arg(short = 'b', long = "brokerName", value_name = "BROKER")]
        broker: String,
    },
    /// Delete a topic's routes in the name server(s) (216); with -c only that cluster's brokers' queues. The name
    /// server part of mqadmin's deleteTopic: a broker that still has the topic files it again when it registers.
    #[command(name = "deleteTopic")]
    DeleteTopic {
        /// Topic to delete.
        #[arg(short = 't', long = "topic", value_name = "TOPIC")]
        topic: String,
        /// Only the queues of this cluster's brokers; without it, the whole topic.
        #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
        cluster: Option<String>,
    },
    /// mqadmin's name for `config get`.
    #[command(name = "getNamesrvConfig")]
    GetNamesrvConfig,
    /// mqadmin's name for `config set KEY=VALUE`: change one setting on every name server.
    ///
    /// The key is checked first against the name server's settings (Java's NamesrvConfig and NettyServerConfig
    /// keys, and ours). A key the server ignores (one nobody knows: Java ignores it too) or refuses (set at start
    /// only: NO_PERMISSION, nothing of the update applied) is warned about on stderr and still sent. A boolean key
    /// takes only true or false, in any case: Java reads the value with Boolean.parseBoolean, for which anything
    /// but "true" is false, so `-v maybe` or a typo would silently turn the switch off; such a value is refused
    /// and nothing is sent.
    #[command(name = "updateNamesrvConfig")]
    UpdateNamesrvConfig {
        /// The setting's name (Java's key, e.g. orderMessageEnable).
        #[arg(short = 'k', long = "key", value_name = "KEY")]
        key: String,
        /// Its new value (true or false for a boolean key).
        #[arg(short = 'v', long = "value", value_name = "VALUE")]
        value: String,
    },
    /// mqadmin's name for `kv put NAMESPACE KEY VALUE`.
    #[command(name = "updateKvConfig")]
    UpdateKvConfig {
        /// KV namespace (ORDER_TOPIC_CONFIG for order topics).
        #[arg(short = 's', long = "namespace", value_name = "NAMESPACE")]
        namespace: String,
        /// Key within the namespace.
        #[arg(short = 'k', long = "key", value_name = "KEY")]
        key: String,
        /// Value to store.
        #[arg(short = 'v', long = "value", value_name = "VALUE")]
        value: String,
    },
    /// `kv get NAMESPACE KEY` with mqadmin-style flags.
    #[command(name = "getKvConfig")]
    GetKvConfig {
        /// KV namespace.
        #[arg(short = 's', long = "namespace", value_name = "NAMESPACE")]
        namespace: String,
        /// Key within the namespace.
        #[arg(short = 'k', long = "key", value_name = "KEY")]
        key: String,
    },
    /// mqadmin's name for `kv delete NAMESPACE KEY`.
    #[command(name = "deleteKvConfig")]
    DeleteKvConfig {
        /// KV namespace.
        #[arg(short = 's', long = "namespace", value_name = "NAMESPACE")]
        namespace: String,
        /// Key within the namespace.
        #[arg(short = 'k', long = "key", value_name = "KEY")]
        key: String,
    },
    /// A controller's group, its leader (id, address), whether this node leads, and its peers (1005).
    #[command(name = "controller-meta", visible_alias = "getControllerMetaData")]
    ControllerMeta(controller::MetaArgs),
    /// Per broker group: the master (id, address, epoch), the SyncStateSet epoch, and the replicas in and out of
    /// the SyncStateSet with their liveness (1006, asked of the controller leader).
    #[command(name = "sync-state-set", visible_alias = "getSyncStateSet")]
    SyncStateSet(controller::SyncStateArgs),
    /// Make a designated broker the master of its group (1002 to the controller leader); prints the new master (a
    /// broker that already is the master is no error).
    #[command(name = "elect-master", visible_alias = "electMaster")]
    ElectMaster(controller::ElectArgs),
    /// Remove brokers (or a master-less group) from the controller's metadata (1011 to the controller leader).
    #[command(name = "clean-broker-metadata", visible_alias = "cleanBrokerMetadata")]
    CleanBrokerMetadata(controller::CleanArgs),
}

#[derive(Subcommand, Debug, Clone)]
pub enum KvCommand {
    /// Print the value of one key.
    Get {
        /// KV namespace.
        namespace: String,
        /// Key within the namespace.
        key: String,
    },
    /// Set a key (on every server given with -n).
    Put {
        /// KV namespace (ORDER_TOPIC_CONFIG for order topics).
        namespace: String,
        /// Key within the namespace.
        key: String,
        /// Value to store.
        value: String,
    },
    /// Delete a key (on every server given with -n).
    Delete {
        /// KV namespace.
        namespace: String,
        /// Key within the namespace.
        key: String,
    },
    /// All keys and values of a namespace.
    List {
        /// KV namespace.
        namespace: String,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum ConfigCommand {
    /// All configuration items, sorted by key.
    Get,
    /// Change items at run time (on every server given with -n); start-only keys are refused by the server.
    ///
    /// As updateNamesrvConfig: keys the server ignores or refuses are warned about and still sent; a value other
    /// than true or false for a boolean key is refused before anything is sent (Java's Boolean.parseBoolean would
    /// read it as false).
    Set {
        /// KEY=VALUE pairs.
        #[arg(required = true, value_name = "KEY=VALUE")]
        items: Vec<String>,
    },
}

/// Why a command failed. `exit_code` maps each kind to the process exit code.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Cannot resolve or connect.
    Unreachable { addr: String, reason: String },
    /// Connected, but the exchange failed (timeout, closed connection, undecodable frame).
    Io { addr: String, reason: String },
    /// The server answered with an error code.
    Server { addr: String, code: i32, remark: Option<String> },
    /// GET_ROUTEINFO_BY_TOPIC answered TOPIC_NOT_EXIST.
    TopicNotExist { addr: String, topic: String },
    /// The server answered, but the body could not be read.
    BadBody { addr: String, reason: String },
    /// Arguments that clap cannot check.
    Usage(String),
    /// An error from a controller rather than a name server (the same kinds, named so).
    Controller(Box<CliError>),
    /// A controller request answered REQUEST_CODE_NOT_SUPPORTED: no controller serves that address, as on a name
    /// server's port (a name server, Java's or ours, answers so to every controller code).
    ControllerOff { addr: String },
}

impl CliError {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Server { .. }
            | CliError::TopicNotExist { .. }
            | CliError::BadBody { .. }
            | CliError::ControllerOff { .. } => 1,
            CliError::Unreachable { .. } | CliError::Io { .. } | CliError::Usage(_) => 2,
            CliError::Controller(e) => e.exit_code(),
        }
    }

    /// `e`, said of a controller.
    fn controller(e: CliError) -> CliError {
        match e {
            CliError::Server { addr, code: ResponseCode::REQUEST_CODE_NOT_SUPPORTED, .. } => {
                CliError::ControllerOff { addr }
            }
            e => CliError::Controller(Box::new(e)),
        }
    }

    fn describe(&self, f: &mut std::fmt::Formatter<'_>, server: &str) -> std::fmt::Result {
        match self {
            CliError::Unreachable { addr, reason } => write!(f, "cannot connect to {server} {addr}: {reason}"),
            CliError::Io { addr, reason } => write!(f, "{server} {addr}: {reason}"),
            CliError::Server { addr, code, remark } => write!(f, "{server} {addr} {}", answer(*code, remark)),
            CliError::TopicNotExist { addr, topic } => {
                write!(f, "topic {topic:?} does not exist on name server {addr} (TOPIC_NOT_EXIST, 17)")
            }
            CliError::BadBody { addr, reason } => write!(f, "{server} {addr}: {reason}"),
            CliError::Usage(msg) => f.write_str(msg),
            CliError::Controller(e) => e.describe(f, "controller"),
            CliError::ControllerOff { addr } => write!(
                f,
                "the controller is off at {addr} (enableControllerInNamesrv=false?): it answered \
                 REQUEST_CODE_NOT_SUPPORTED (3) to a controller request. A controller listens on its own port, the \
                 one of controllerDLegerPeers, not on the name server's"
            ),
        }
    }
}

/// `answered NO_PERMISSION (16): remark's first line`.
fn answer(code: i32, remark: &Option<String>) -> String {
    match remark {
        Some(r) if !r.is_empty() => format!("answered {} ({code}): {}", code_name(code), first_line(r)),
        _ => format!("answered {} ({code})", code_name(code)),
    }
}

impl CliError {
    /// What went wrong, without the server's address: for a line that already names it.
    pub(crate) fn reason(&self) -> String {
        match self {
            CliError::Unreachable { reason, .. } => format!("cannot connect: {reason}"),
            CliError::Io { reason, .. } | CliError::BadBody { reason, .. } => reason.clone(),
            CliError::Server { code, remark, .. } => answer(*code, remark),
            CliError::Controller(e) => e.reason(),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.describe(f, "name server")
    }
}

/// A remark's first line (the TOPIC_NOT_EXIST remark ends with a second line pointing at a FAQ).
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The Java name of a response code, or "error".
pub(crate) fn code_name(code: i32) -> &'static str {
    controller::response_name(code).unwrap_or_else(|| crate::protocol::code::response_name(code))
}

/// What a command prints on stdout and the exit code it ends with.
pub(crate) struct Output {
    pub text: String,
    pub code: u8,
}

impl Output {
    fn ok(text: String) -> Output {
        Output { text, code: 0 }
    }

    fn json(value: &serde_json::Value) -> Output {
        Output::ok(json_text(value))
    }
}

fn json_text(value: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// `--accessKey/--secretKey`, else mqadmin's `$ROCKETMQ_HOME/conf/tools.yml` (ignored with a warning if broken).
fn credentials(args: &AdminArgs) -> Option<(String, crate::acl::signature::Key)> {
    let (ak, sk) = basic_credentials(args)?;
    Some((ak, crate::acl::signature::Key::new(sk.as_bytes())))
}

/// `host:port` entries of several `;`-separated lists, blanks dropped.
fn split_addrs<'a>(lists: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    lists.into_iter().flat_map(|l| l.split(';')).map(str::trim).filter(|a| !a.is_empty()).map(String::from).collect()
}

/// The account as (access key, secret key): for signing, or as HTTP Basic credentials (`health`).
fn basic_credentials(args: &AdminArgs) -> Option<(String, String)> {
    match (&args.access_key, &args.secret_key) {
        (Some(ak), Some(sk)) => Some((ak.clone(), sk.clone())),
        _ => {
            let home = std::env::var_os("ROCKETMQ_HOME")?;
            let path = std::path::Path::new(&home).join("conf/tools.yml");
            let text = std::fs::read_to_string(&path).ok()?;
            match crate::acl::file::tools_credentials(&text) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("mqnamesrv admin: warning: ignoring {}: {e}", path.display());
                    None
                }
            }
        }
    }
}

/// Options every command shares.
pub(crate) struct Ctx {
    pub addrs: Vec<String>,
    pub json: bool,
    pub timeout: Duration,
    /// The account requests are signed with, if any.
    pub credentials: Option<(String, crate::acl::signature::Key)>,
}

impl Ctx {
    fn new(args: &AdminArgs) -> Ctx {
        let mut addrs: Vec<String> = args
            .namesrv
            .iter()
            .flat_map(|a| a.split(';'))
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(String::from)
            .collect();
        if addrs.is_empty() {
            // mqadmin's habit: NAMESRV_ADDR (";"-separated) when -n is not given, then the Java default.
            let env = std::env::var("NAMESRV_ADDR").unwrap_or_default();
            addrs.extend(env.split(';').map(str::trim).filter(|a| !a.is_empty()).map(String::from));
        }
        if addrs.is_empty() {
            addrs.push(DEFAULT_NAMESRV.to_string());
        }
        Ctx { addrs, json: args.json, timeout: Duration::from_millis(args.timeout), credentials: credentials(args) }
    }

    fn connect(&self, addr: &str) -> Result<Client, CliError> {
        Client::connect(addr, self.timeout).map(|c| c.signing(self.credentials.clone()))
    }
}

/// Sends `cmd` and returns the response if it is SUCCESS; any other code is `CliError::Server`.
fn call(client: &mut Client, cmd: RemotingCommand) -> Result<RemotingCommand, CliError> {
    let resp = client.request(cmd)?;
    if resp.code == ResponseCode::SUCCESS {
        Ok(resp)
    } else {
        Err(CliError::Server { addr: client.addr().to_string(), code: resp.code, remark: resp.remark })
    }
}

fn bad_body(client: &Client, reason: String) -> CliError {
    CliError::BadBody { addr: client.addr().to_string(), reason }
}

/// Java `PermName.perm2String`: `R`, `W`, `X` (inherit) or `-` in three positions.
pub(crate) fn perm_text(perm: i32) -> String {
    use crate::model::perm::{INHERIT, READ, WRITE};
    let bit = |mask: i32, c: char| if perm & mask != 0 { c } else { '-' };
    [bit(READ, 'R'), bit(WRITE, 'W'), bit(INHERIT, 'X')].iter().collect()
}

/// `RW- (6)`.
fn perm_cell(perm: i32) -> String {
    format!("{} ({perm})", perm_text(perm))
}

fn broker_json(bd: &BrokerData) -> serde_json::Value {
    let addrs: serde_json::Map<String, serde_json::Value> =
        bd.broker_addrs.iter().map(|(id, a)| (id.to_string(), a.clone().into())).collect();
    let mut v = serde_json::json!({
        "brokerName": &*bd.broker_name,
        "cluster": &*bd.cluster,
        "brokerAddrs": addrs,
        "enableActingMaster": bd.enable_acting_master,
    });
    if let Some(zone) = &bd.zone_name {
        v["zoneName"] = zone.clone().into();
    }
    v
}

fn queue_json(q: &QueueData) -> serde_json::Value {
    serde_json::json!({
        "brokerName": &*q.broker_name,
        "readQueueNums": q.read_queue_nums,
        "writeQueueNums": q.write_queue_nums,
        "perm": q.perm,
        "permText": perm_text(q.perm),
        "topicSysFlag": q.topic_sys_flag,
    })
}

/// Runs one admin command; errors go to stderr as one line naming the server.
pub fn run(args: AdminArgs) -> ExitCode {
    let ctx = Ctx::new(&args);
    let result = match &args.command {
        AdminCommand::Route { topic, topic_flag } => {
            route::route(&ctx, topic.as_deref().or(topic_flag.as_deref()).unwrap_or_default())
        }
        AdminCommand::Cluster => cluster::cluster(&ctx),
        AdminCommand::Topics => route::topics(&ctx),
        AdminCommand::Kv(cmd) => kv::run(&ctx, cmd),
        AdminCommand::Config(cmd) => config::run(&ctx, cmd),
        AdminCommand::Diff => diff::diff(&ctx),
        AdminCommand::Health { http } => {
            let mut list = split_addrs(http.iter().map(String::as_str));
            if list.is_empty() {
                list = split_addrs(std::env::var("NAMESRV_HTTP").ok().as_deref());
            }
            health::health(&list, basic_credentials(&args).as_ref(), ctx.timeout, ctx.json)
        }
        AdminCommand::WipeWritePerm { broker } => perm::write_perm(&ctx, broker, perm::Change::Wipe),
        AdminCommand::AddWritePerm { broker } => perm::write_perm(&ctx, broker, perm::Change::Add),
        AdminCommand::DeleteTopic { topic, cluster } => perm::delete_topic(&ctx, topic, cluster.as_deref()),
        AdminCommand::GetNamesrvConfig => config::run(&ctx, &ConfigCommand::Get),
        AdminCommand::UpdateNamesrvConfig { key, value } => {
            config::run(&ctx, &ConfigCommand::Set { items: vec![format!("{key}={value}")] })
        }
        AdminCommand::UpdateKvConfig { namespace, key, value } => {
            kv::run(&ctx, &KvCommand::Put { namespace: namespace.clone(), key: key.clone(), value: value.clone() })
        }
        AdminCommand::GetKvConfig { namespace, key } => {
            kv::run(&ctx, &KvCommand::Get { namespace: namespace.clone(), key: key.clone() })
        }
        AdminCommand::DeleteKvConfig { namespace, key } => {
            kv::run(&ctx, &KvCommand::Delete { namespace: namespace.clone(), key: key.clone() })
        }
        AdminCommand::ControllerMeta(a) => controller::meta(&ctx, a).map_err(CliError::controller),
        AdminCommand::SyncStateSet(a) => controller::sync_state_set(&ctx, a).map_err(CliError::controller),
        AdminCommand::ElectMaster(a) => controller::elect_master(&ctx, a).map_err(CliError::controller),
        AdminCommand::CleanBrokerMetadata(a) => {
            controller::clean_broker_metadata(&ctx, a).map_err(CliError::controller)
        }
    };
    match result {
        Ok(out) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout.write_all(out.text.as_bytes()).and_then(|()| stdout.flush());
            ExitCode::from(out.code)
        }
        Err(e) => {
            eprintln!("mqnamesrv admin: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_text_is_javas() {
        assert_eq!(perm_text(6), "RW-");
        assert_eq!(perm_text(7), "RWX");
        assert_eq!(perm_text(4), "R--");
        assert_eq!(perm_text(0), "---");
        assert_eq!(perm_cell(2), "-W- (2)");
    }

    #[test]
    fn server_errors_name_code_and_first_remark_line() {
        let e = CliError::Server {
            addr: "h:1".into(),
            code: 17,
            remark: Some("No topic route info in name server for the topic: T\nSee https://x".into()),
        };
        assert_eq!(
            e.to_string(),
            "name server h:1 answered TOPIC_NOT_EXIST (17): No topic route info in name server for the topic: T"
        );
        assert_eq!(e.exit_code(), 1);
    }
}
