//! The controller node (RIP-44, `enableControllerInNamesrv=true`): its own thread running a small tokio runtime
//! with openraft, the controller port, the Raft RPCs between controller nodes, and the broker-liveness timers. It
//! shares nothing with the name server's reactors, writer or route tables (docs/decisions/0015-controller-node.md).
//!
//! ```text
//!  brokers, mqadmin ──► controller port (server) ──► Node::handle ──► leader: validate ─► Raft (openraft) ─► apply
//!  other controllers ──► the same port, private codes (net::serve_rpc)            ▲ client_write   │ every node
//!  904 heartbeats ──► Node's HeartbeatTable (local) ── close / scan ──► election ──┘                ▼
//!  1008 to the group on a new master (outbound)                         StateMachine ─► view (ArcSwap)
//! ```
//!
//! - `settings`: Java's `ControllerConfig` keys.
//! - `wire`: frames ↔ the core's requests and answers.
//! - `node`: one node's request path, elections and liveness.
//! - `net`: openraft's network over our frames; `server`: the port; `outbound`: 1008.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use openraft::{BasicNode, Raft};
use tokio::sync::oneshot;
use tracing::{error, info};

use crate::allow_list::AllowList;
use crate::clock::Clock;
use crate::controller::raft::{LogStore, LogStoreError, StateMachine, StateMachineError};
use crate::metrics::ControllerMetrics;

pub(crate) mod net;
pub(crate) mod node;
pub(crate) mod outbound;
pub(crate) mod room;
pub(crate) mod server;
pub(crate) mod settings;
pub(crate) mod wire;

pub(crate) use node::Node;
pub use settings::{Settings, SettingsError};

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum ControllerStartError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("cannot listen on the controller address {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Log(#[from] LogStoreError),
    #[error(transparent)]
    StateMachine(#[from] StateMachineError),
    #[error("cannot start the controller runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot start Raft: {0}")]
    Raft(String),
}

/// A running controller node.
pub struct ControllerHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ControllerHandle {
    /// Where the controller port listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving, shuts Raft down (its files stay) and joins the thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ControllerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The Raft timing: a leader heartbeats every 250 ms and a follower that hears nothing for 1–2 s stands for
/// election, so a controller failover takes about as long as a broker's (Java: DLedger's 3 s heartbeat timeout).
fn raft_config(group: &str) -> Result<openraft::Config, ControllerStartError> {
    let config = openraft::Config {
        cluster_name: group.to_owned(),
        heartbeat_interval: 250,
        election_timeout_min: 1000,
        election_timeout_max: 2000,
        ..Default::default()
    };
    config.validate().map_err(|e| ControllerStartError::Raft(e.to_string()))
}

/// Starts the controller node described by `settings`: binds its port (the port of this node's peer address, on
/// every interface, as DLedger does), opens its Raft files under `controllerStorePath`, forms the group on first
/// start, and serves on its own thread.
pub fn start(
    mut settings: Settings,
    max_frame: usize,
    clock: Arc<dyn Clock>,
    metrics: Arc<ControllerMetrics>,
    allow_list: AllowList,
) -> Result<ControllerHandle, ControllerStartError> {
    let this = settings.this().clone();
    let wanted: SocketAddr = this.addr.parse().map_err(|_| SettingsError::Peer {
        entry: this.addr.clone(),
        reason: "the address must be <ip>:<port>".into(),
    })?;
    let bind = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), wanted.port());
    let listener = StdListener::bind(bind)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| ControllerStartError::Bind { addr: bind.to_string(), source })?;
    let bound =
        listener.local_addr().map_err(|source| ControllerStartError::Bind { addr: bind.to_string(), source })?;
    if wanted.port() == 0 {
        // Port 0 (tests, one node): the peer address becomes the real one, so 1005 names a reachable leader.
        let real = SocketAddr::new(wanted.ip(), bound.port()).to_string();
        settings.peers.iter_mut().filter(|p| p.name == this.name).for_each(|p| p.addr = real.clone());
    }
    let settings = Arc::new(settings);
    let log = LogStore::open(&settings.store_path)?;
    let machine = StateMachine::open(&settings.store_path)?;
    let view = machine.view();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("controller")
        .build()
        .map_err(ControllerStartError::Runtime)?;
    let config = Arc::new(raft_config(&settings.group)?);
    let members: BTreeMap<_, _> = settings.peers.iter().map(|p| (p.id, BasicNode { addr: p.addr.clone() })).collect();
    let raft = runtime.block_on(async {
        let raft = Raft::new(settings.this().id, config, net::Network::new(max_frame), log, machine)
            .await
            .map_err(|e| ControllerStartError::Raft(e.to_string()))?;
        // The first start of every node forms the group with the same members; openraft refuses (harmlessly) on a
        // node that already has a log.
        if !raft.is_initialized().await.map_err(|e| ControllerStartError::Raft(e.to_string()))? {
            if let Err(e) = raft.initialize(members).await {
                info!(target: "controller", error = %e, "Raft group not initialized here");
            }
        }
        Ok::<_, ControllerStartError>(raft)
    })?;
    let node = Arc::new(Node::new(raft, Arc::clone(&settings), view, clock, Arc::clone(&metrics), allow_list));
    let ctx = Arc::new(server::Listener {
        max_frame,
        frames: room::FrameRoom::new(settings.frame_bytes, Arc::clone(&metrics)),
        max_connections: connection_share(settings.max_connections),
        idle: (settings.idle_secs > 0).then(|| std::time::Duration::from_secs(settings.idle_secs)),
        frame_timeout_ms: i64::try_from(settings.frame_timeout_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
        refused: Default::default(),
        last_refusal_log_ms: Default::default(),
        started: tokio::time::Instant::now(),
        metrics: Arc::clone(&metrics),
        raft_peers: settings.peers.iter().filter_map(|p| p.addr.parse::<SocketAddr>().ok()).map(|a| a.ip()).collect(),
    });
    let (stop, stopped) = oneshot::channel();
    let thread_node = Arc::clone(&node);
    let thread =
        crate::critical::spawn("controller".into(), move || runtime.block_on(run(listener, thread_node, ctx, stopped)))
            .map_err(ControllerStartError::Runtime)?;
    info!(target: "controller", addr = %settings.this().addr, id = %settings.self_name, group = %settings.group,
        peers = settings.peers.len(), store = %settings.store_path.display(), "controller started");
    Ok(ControllerHandle { addr: bound, stop: Some(stop), thread: Some(thread) })
}

async fn run(listener: StdListener, node: Arc<Node>, ctx: Arc<server::Listener>, stopped: oneshot::Receiver<()>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            error!(target: "controller", error = %e, "controller port unusable");
            return;
        }
    };
    let scan = tokio::spawn(timers(Arc::clone(&node)));
    tokio::select! {
        _ = server::serve(listener, Arc::clone(&node), ctx) => {}
        _ = stopped => {}
    }
    scan.abort();
    if let Err(e) = node.raft.shutdown().await {
        error!(target: "controller", error = %e, "Raft did not shut down cleanly");
    }
}

/// `scanNotActiveBrokerInterval`, `scanInactiveMasterInterval`, the gauges of `/metrics` every second, and the
/// leader-change hook on every change of Raft's metrics (so the time leadership began is not late by a scan).
async fn timers(node: Arc<Node>) {
    let mut raft = node.raft.metrics();
    let (not_active, inactive_master) = node.scan_intervals();
    let mut not_active = tokio::time::interval(Duration::from_millis(not_active));
    let mut inactive_master = tokio::time::interval(Duration::from_millis(inactive_master));
    let mut gauges = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = not_active.tick() => node.scan_not_active().await,
            _ = inactive_master.tick() => node.scan_inactive_masters().await,
            _ = gauges.tick() => node.refresh_metrics(),
            // Err once Raft has shut down: the branch is off, the scans go on until the node stops.
            Ok(()) = raft.changed() => {
                node.note_leadership();
            }
        }
    }
}

/// `controllerMaxConnections` within the controller port's share of the open-files limit ([`crate::limit::fd_shares`],
/// decision 0032), so that a flood here leaves the name-server port its descriptors.
fn connection_share(configured: usize) -> usize {
    let nofile = crate::limit::open_files_limit();
    let cap = crate::limit::fd_shares(nofile, 0, Some(configured)).1.unwrap_or(configured);
    if cap != configured {
        info!(target: "controller", controller_max_connections = configured, open_files = nofile, effective = cap,
            "controllerMaxConnections lowered to the controller port's share of the open-files limit");
    }
    cap
}
