//! Replicated KV (`kvReplicationEnabled=true`, decision 0033): the name servers of a fleet keep one KV table
//! through a Raft group of their own, on openraft (never home-made consensus), on its own thread and port.
//!
//! ```text
//!  reactor: PUT_KV_CONFIG / DELETE_KV_CONFIG ──try_send──► KV Raft thread (namesrv-kv-raft, one-thread tokio)
//!     leader: client_write ──► RaftLog (fsync) ──► replicate ──► committed on a majority
//!     follower: forwards the entry to the leader over the Raft port (KV_FORWARD), waits for the local apply
//!  every node, in log order: KvMachine::apply ──► the same WriteOp to the writer ──► kvConfig.json, snapshot
//!  the node whose client asked: the writer answers it after the publish; no commit in time: SYSTEM_ERROR
//! ```
//!
//! - `machine`: what an entry carries, the state machine and its snapshot file, the rule for differing files.
//! - `node`: the write path (propose, forward, answer), the seed, the Raft port.
//!
//! Membership is static: `kvReplicationPeers` forms the group at the first start; only the admin request
//! KV_MEMBERS (adminAllowList) changes it afterwards. Nothing else does: not DNS, not `namesrvPeers`.
//! Must never: touch the route tables, or block a reactor (reactors only `try_send` to it).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use openraft::{BasicNode, Raft};
use tokio::sync::{mpsc, oneshot};
use tracing::{error, info};

use crate::allow_list::AllowList;
use crate::config::Config;
use crate::controller::raft::{LogStoreError, NodeId, RaftLog};
use crate::controller_node::net;
use crate::metrics::KvRaftMetrics;
use crate::state::Snapshot;
use crate::write_command::ReactorLink;
use crate::write_command::WriteCommand;

pub(crate) mod machine;
pub(crate) mod node;

pub(crate) use machine::{KvMachineError, KvTypeConfig};

/// KV writes waiting for the KV Raft thread; past this the reactors answer SYSTEM_BUSY.
pub(crate) const QUEUE: usize = 4096;

/// Why replication could not start.
#[derive(Debug, thiserror::Error)]
pub enum KvRaftStartError {
    #[error("kvReplicationPeers entry {entry:?}: {reason}")]
    Peer { entry: String, reason: String },
    #[error("kvReplicationNodeId={id} is not one of kvReplicationPeers ({peers})")]
    NotAMember { id: NodeId, peers: String },
    #[error("cannot listen on the KV replication address {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Log(#[from] LogStoreError),
    #[error(transparent)]
    Machine(#[from] KvMachineError),
    #[error("cannot start the KV replication thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot start KV replication Raft: {0}")]
    Raft(String),
}

/// The replication keys, checked.
#[derive(Clone, Debug)]
pub(crate) struct KvSettings {
    pub me: NodeId,
    pub peers: BTreeMap<NodeId, String>,
    pub join: bool,
    pub store: PathBuf,
    pub timeout: Duration,
    pub snapshot_entries: u64,
    pub bind_ip: IpAddr,
}

/// Parses `kvReplicationPeers`: `id=ip:port`, `;`- or `,`-separated.
pub(crate) fn parse_peers(text: &str) -> Result<BTreeMap<NodeId, String>, KvRaftStartError> {
    let mut peers = BTreeMap::new();
    for entry in text.split([';', ',']).map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| KvRaftStartError::Peer { entry: entry.to_owned(), reason: reason.to_owned() };
        let (id, addr) = entry.split_once('=').ok_or_else(|| bad("expected id=ip:port"))?;
        let id: NodeId = id.trim().parse().map_err(|_| bad("the id must be a number"))?;
        let addr = addr.trim();
        // An IP literal, never a host name: the group's members must not change with DNS.
        if addr.parse::<SocketAddr>().is_err() {
            return Err(bad("the address must be ip:port (an IP literal, not a host name)"));
        }
        if peers.insert(id, addr.to_owned()).is_some() {
            return Err(bad("the id is listed twice"));
        }
    }
    Ok(peers)
}

impl KvSettings {
    pub(crate) fn from_config(config: &Config) -> Result<KvSettings, KvRaftStartError> {
        let peers = parse_peers(&config.kv_replication_peers)?;
        let me = config.kv_replication_node_id;
        if !peers.contains_key(&me) {
            return Err(KvRaftStartError::NotAMember { id: me, peers: config.kv_replication_peers.clone() });
        }
        Ok(KvSettings {
            me,
            peers,
            join: config.kv_replication_join,
            store: PathBuf::from(&config.kv_replication_store_path),
            // Start keys, bounded here: a write never waits less than 100 ms nor more than a minute.
            timeout: Duration::from_millis(config.kv_replication_timeout_millis.clamp(100, 60_000)),
            snapshot_entries: config.kv_replication_snapshot_entries.max(1),
            bind_ip: config.bind_address.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into()),
        })
    }

    fn my_addr(&self) -> &str {
        &self.peers[&self.me]
    }
}

/// A running KV Raft thread.
pub(crate) struct KvRaftHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl KvRaftHandle {
    /// Where the KV Raft port listens.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for KvRaftHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Heartbeats every 100 ms and elections after 500–1000 ms of silence: a KV write on a group that lost its leader
/// waits about a second for the next one, well within `kvReplicationTimeoutMillis`.
fn raft_config(settings: &KvSettings) -> Result<openraft::Config, KvRaftStartError> {
    let config = openraft::Config {
        cluster_name: "namesrv-kv".to_owned(),
        heartbeat_interval: 100,
        election_timeout_min: 500,
        election_timeout_max: 1000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(settings.snapshot_entries),
        // The KV table is small: a lagging or new node takes a snapshot rather than the log being kept for it.
        max_in_snapshot_log_to_keep: 0,
        ..Default::default()
    };
    config.validate().map_err(|e| KvRaftStartError::Raft(e.to_string()))
}

/// What the KV thread is given by the server.
pub(crate) struct Wiring {
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub writer: crossbeam_channel::Sender<Box<WriteCommand>>,
    pub reactors: Vec<ReactorLink>,
    pub metrics: Arc<KvRaftMetrics>,
    pub allow_list: AllowList,
    pub max_frame: usize,
}

/// Binds the KV Raft port, opens the Raft files, forms the group on the first start (unless joining), and runs
/// the KV Raft thread. Returns the handle and the queue the reactors send KV writes to.
pub(crate) fn start(
    settings: KvSettings,
    wiring: Wiring,
) -> Result<(KvRaftHandle, mpsc::Sender<Box<WriteCommand>>), KvRaftStartError> {
    let port = settings.my_addr().rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).unwrap_or(0);
    let bind = SocketAddr::new(settings.bind_ip, port);
    let listener = StdListener::bind(bind)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| KvRaftStartError::Bind { addr: bind.to_string(), source })?;
    let bound = listener.local_addr().map_err(|source| KvRaftStartError::Bind { addr: bind.to_string(), source })?;
    let log = RaftLog::<KvTypeConfig>::open(&settings.store)?;
    let waiting = machine::Waiting::default();
    let sink = machine::Sink { writer: wiring.writer.clone(), waiting: waiting.clone(), me: settings.me };
    let local = (*wiring.cell.load().kv).clone();
    let kv_machine = machine::KvMachine::open(&settings.store, local, sink, Arc::clone(&wiring.metrics))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("namesrv-kv-raft")
        .build()
        .map_err(KvRaftStartError::Thread)?;
    let config = Arc::new(raft_config(&settings)?);
    let members: BTreeMap<_, _> =
        settings.peers.iter().map(|(id, addr)| (*id, BasicNode { addr: addr.clone() })).collect();
    let raft = runtime.block_on(async {
        let network = net::Network::<KvTypeConfig>::new(wiring.max_frame);
        let raft = Raft::new(settings.me, config, network, log, kv_machine)
            .await
            .map_err(|e| KvRaftStartError::Raft(e.to_string()))?;
        // Every member's first start forms the group with the same members (openraft refuses, harmlessly, on a
        // node that has a log). A joining node forms nothing: the group adds it (KV_MEMBERS).
        if !settings.join && !raft.is_initialized().await.map_err(|e| KvRaftStartError::Raft(e.to_string()))? {
            if let Err(e) = raft.initialize(members).await {
                info!(target: "kv_raft", error = %e, "KV Raft group not initialized here");
            }
        }
        Ok::<_, KvRaftStartError>(raft)
    })?;
    wiring.metrics.enabled.store(true, std::sync::atomic::Ordering::Relaxed);
    let (tx, rx) = mpsc::channel(QUEUE);
    let node = Arc::new(node::KvNode::new(raft, settings.clone(), waiting, wiring));
    let (stop, stopped) = oneshot::channel();
    let thread = crate::critical::spawn("namesrv-kv-raft".into(), move || {
        runtime.block_on(node::run(node, listener, rx, stopped));
    })
    .map_err(KvRaftStartError::Thread)?;
    info!(target: "kv_raft", addr = %bound, id = settings.me, peers = settings.peers.len(),
        store = %settings.store.display(), "KV replication started");
    Ok((KvRaftHandle { addr: bound, stop: Some(stop), thread: Some(thread) }, tx))
}

/// Logs what a Raft shutdown left undone.
pub(crate) fn log_shutdown(result: Result<(), impl std::fmt::Display>) {
    if let Err(e) = result {
        error!(target: "kv_raft", error = %e, "KV Raft did not shut down cleanly");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_ids_and_ip_literals_and_a_bad_entry_is_named() {
        let peers = parse_peers(" 1=10.0.0.1:9880; 2=[::1]:9880 ,3=10.0.0.3:9880").unwrap();
        assert_eq!(peers.len(), 3);
        assert_eq!(peers[&2], "[::1]:9880");
        for (bad, why) in [
            ("1=ns1.example.com:9880", "IP literal"),
            ("x=10.0.0.1:9880", "number"),
            ("1=10.0.0.1", "ip:port"),
            ("1=10.0.0.1:1;1=10.0.0.2:1", "twice"),
            ("10.0.0.1:9880", "id=ip:port"),
        ] {
            let e = parse_peers(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let mut c =
            Config { kv_replication_peers: "1=10.0.0.1:9880".into(), kv_replication_node_id: 2, ..Config::default() };
        assert!(matches!(KvSettings::from_config(&c), Err(KvRaftStartError::NotAMember { id: 2, .. })));
        c.kv_replication_node_id = 1;
        c.kv_replication_timeout_millis = 0;
        assert_eq!(KvSettings::from_config(&c).unwrap().timeout, Duration::from_millis(100), "bounded");
    }
}
