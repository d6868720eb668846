//! Wires the server together: loads the KV file, publishes the first snapshot, binds the listener (shared by the
//! reactors), starts the writer and the (pinned) reactor threads, and hands back a `ServerHandle`.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use crossbeam_channel::{bounded, unbounded, Sender};
use socket2::{Domain, Protocol, Socket, Type};
use tracing::{info, warn};

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::controller_node::{self, ControllerHandle, ControllerStartError, Settings as ControllerSettings};
use crate::decoder::Decoder;
use crate::feed::Feed;
use crate::http::{HttpContext, HttpServer, Limits as HttpLimits};
use crate::metrics::Metrics;
use crate::persist::{self, LoadError};
use crate::reactor::{Reactor, Settings, Shared};
use crate::state::Snapshot;
use crate::tls::{TlsError, TlsSetup};
use crate::warm;
use crate::write_command::{ReactorLink, WriterQueue};
use crate::writer::{Writer, WriterInputs};

/// How many applied bodies can wait for the decoder to drop them, on the thread that allocated their names
/// (decision 0026): a few registrations' worth, so the topic lists waiting there stay a small part of
/// `writerQueueBytes`.
const SPENT_BODIES: usize = 8;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid listen address {0}")]
    Address(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Kv(#[from] LoadError),
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot serve HTTP on {addr} (httpAddress): {source}")]
    Http { addr: String, source: std::io::Error },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    AclPath(#[from] crate::config::AclPathError),
    #[error(transparent)]
    Acl(#[from] crate::acl_reload::AclFileError),
    #[error("controller: {0}")]
    Controller(#[from] ControllerStartError),
    #[error("KV replication: {0}")]
    KvRaft(#[from] crate::kv_raft::KvRaftStartError),
    #[error("aclEnable (ACL 1.0, plain_acl.yml) and authenticationEnabled (ACL 2.0, users on the brokers) are both set: choose one")]
    AuthModes,
    #[error("authenticationEnabled needs innerClientAuthenticationCredentials, the credential the cluster's brokers sign with")]
    NoInnerCredentials,
    #[error(transparent)]
    Users(#[from] crate::acl::users::UsersError),
}

/// A running server.
pub struct ServerHandle {
    local_addr: SocketAddr,
    cell: Arc<ArcSwap<Snapshot>>,
    shutdown: Arc<AtomicBool>,
    stop_writer: Sender<()>,
    /// Dropped at stop: ends the ACL reload thread.
    stop_acl: Option<Sender<()>>,
    /// Dropped at stop: ends the fleet thread (`namesrvPeers`).
    stop_fleet: Option<Sender<()>>,
    wakers: Vec<Arc<mio::Waker>>,
    threads: Vec<JoinHandle<()>>,
    /// `httpAddress`: the endpoint, stopped with the rest.
    http: Option<HttpServer>,
    /// Closed at stop: ends the `/events` streams.
    feed: Arc<Feed>,
    metrics: Metrics,
    draining: Arc<AtomicBool>,
    drain_limit: Duration,
    /// `enableShutdownGracefully`: stay up the whole wait, answering GO_AWAY, as Java does.
    go_away: bool,
    /// `enableControllerInNamesrv`: the controller node, on its own thread and port.
    controller: Option<ControllerHandle>,
    /// `kvReplicationEnabled`: the KV Raft thread, on its own port.
    kv_raft: Option<crate::kv_raft::KvRaftHandle>,
}

impl ServerHandle {
    /// The address the listeners are bound to (the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The snapshot readers see right now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.cell.load_full()
    }

    /// The HTTP endpoint's address, when `httpAddress` is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(HttpServer::local_addr)
    }

    /// The controller port, when `enableControllerInNamesrv` started one.
    pub fn controller_addr(&self) -> Option<SocketAddr> {
        self.controller.as_ref().map(ControllerHandle::local_addr)
    }

    /// The KV Raft port, when `kvReplicationEnabled` started one.
    pub fn kv_raft_addr(&self) -> Option<SocketAddr> {
        self.kv_raft.as_ref().map(crate::kv_raft::KvRaftHandle::local_addr)
    }

    /// The controller node, when one runs.
    pub fn controller(&self) -> Option<&ControllerHandle> {
        self.controller.as_ref()
    }

    /// The live counters (what `/metrics` shows).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Stops the reactors (closing every connection) and the writer, and waits for the threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Graceful stop: no new connections; requests already handed to the writer get their replies (KV writes are
    /// durable before they are acknowledged); 5.x clients are told GO_AWAY if `enableShutdownGracefully`; then
    /// stop. Bounded by `shutdownWaitTimeSeconds` (with `enableShutdownGracefully`) or 5 s. Returns whether
    /// everything owed was delivered in time.
    pub fn shutdown_gracefully(mut self) -> bool {
        self.draining.store(true, Ordering::Release);
        for w in &self.wakers {
            let _ = w.wake();
        }
        let deadline = Instant::now() + self.drain_limit;
        let drained = loop {
            let all = self.metrics.reactors.iter().all(|r| r.drained.load(Ordering::Acquire));
            if (all && !self.go_away) || Instant::now() >= deadline {
                break all;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.stop();
        drained
    }

    fn stop(&mut self) {
        self.shutdown.store(true, Ordering::Release);
        for w in &self.wakers {
            let _ = w.wake();
        }
        // Before the writer: what the KV group applied meanwhile still reaches it.
        if let Some(mut kv_raft) = self.kv_raft.take() {
            kv_raft.stop_and_join();
        }
        let _ = self.stop_writer.send(());
        self.stop_acl.take();
        self.stop_fleet.take();
        self.feed.close();
        if let Some(h) = &mut self.http {
            h.stop();
        }
        if let Some(controller) = self.controller.take() {
            controller.shutdown();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What Java's `NamesrvStartup` prints to stdout and logs once the server listens, in its words: bind address
/// and port joined by `:` (no IPv6 brackets, as Java's string concatenation does).
pub fn boot_line(listening: SocketAddr) -> String {
    format!("The Name Server boot success. serializeType=JSON, address {}:{}", listening.ip(), listening.port())
}

/// Starts a server with the system clock.
pub fn start(config: Config) -> Result<ServerHandle, StartError> {
    start_with_clock(config, Arc::new(SystemClock))
}

/// Starts a server with the given clock (tests move time by hand): files and listeners first (any failure stops
/// start-up before a thread runs), then the writer, the decoder, the reactors, the HTTP and ACL-reload threads.
#[doc(hidden)]
pub fn start_with_clock(config: Config, clock: Arc<dyn Clock>) -> Result<ServerHandle, StartError> {
    let kv = persist::load_kv(Path::new(&config.kv_config_path))?;
    let config = Arc::new(config);
    let tls = Arc::new(TlsSetup::from_config(&config)?);
    let reactors = config.reactor_count().max(1);
    let listeners = bind_listeners(&config, reactors)?;
    let local_addr = listeners[0].local_addr().map_err(|e| StartError::Bind { addr: addr_text(&config), source: e })?;
    let mut metrics = Metrics::new(reactors);
    let http_listener = match config.http_address.trim() {
        "" => None,
        addr => Some(HttpServer::bind(addr).map_err(|source| StartError::Http { addr: addr.into(), source })?),
    };
    let (acl, reloader) = load_acl(&config, &metrics)?;
    let mut controller_cap = None;
    let controller = match config.enable_controller_in_namesrv {
        true => {
            let settings = ControllerSettings::from_keys(&config.extra, config.scan_not_active_broker_interval)
                .map_err(ControllerStartError::from)?;
            controller_cap = Some(settings.max_connections);
            Some(controller_node::start(
                settings,
                config.max_frame_length,
                Arc::clone(&clock),
                Arc::clone(&metrics.controller),
                config.admin_allow_list.clone(),
            )?)
        }
        false => None,
    };

    let cell = Arc::new(ArcSwap::from_pointee(Writer::initial_snapshot(kv.clone(), config.clone())));
    let fleet = crate::fleet::Fleet::from_config(&config, cell.clone(), clock.clone(), crate::fleet::members::system());
    metrics.fleet = fleet.as_ref().map(|(_, view)| view.clone());
    let (writer_tx, writer_rx) = bounded(config.writer_queue_capacity.max(1));
    let writer_queue =
        WriterQueue { tx: writer_tx, bytes: Arc::new(crate::limit::ByteBudget::new(config.writer_queue_bytes)) };
    let (events_tx, events_rx) = unbounded();
    // Small: each job pins a registration body, and a full queue answers SYSTEM_BUSY like the writer's.
    let (decoder_tx, decoder_rx) = bounded(256);
    let decoder_bytes = Arc::new(crate::limit::ByteBudget::new(config.decoder_queue_bytes));
    let (stop_tx, stop_rx) = bounded(1);
    let shutdown = Arc::new(AtomicBool::new(false));
    let draining = Arc::new(AtomicBool::new(false));
    let started_ms = clock.now_ms();

    // Each reactor's poll, waker and inbox: the writer and the decoder reach the reactors through these links.
    let mut parts = Vec::with_capacity(reactors);
    let mut links = Vec::with_capacity(reactors);
    for listener in listeners {
        let (inbox_tx, inbox_rx) = unbounded();
        let poll = mio::Poll::new().map_err(StartError::Thread)?;
        let waker = Arc::new(mio::Waker::new(poll.registry(), crate::reactor::WAKER).map_err(StartError::Thread)?);
        links.push(ReactorLink { inbox: inbox_tx, waker });
        parts.push((poll, listener, inbox_rx));
    }
    // `kvReplicationEnabled`: KV writes go to the KV Raft thread instead of the writer (off: no thread, no port).
    let (kv_raft, kv_writes) = match config.kv_replication_enabled {
        true => {
            let wiring = crate::kv_raft::Wiring {
                cell: cell.clone(),
                writer: writer_queue.tx.clone(),
                reactors: links.clone(),
                metrics: metrics.kv_raft.clone(),
                allow_list: config.admin_allow_list.clone(),
                max_frame: config.max_frame_length,
            };
            let (handle, tx) = crate::kv_raft::start(crate::kv_raft::KvSettings::from_config(&config)?, wiring)?;
            (Some(handle), Some(tx))
        }
        false => (None, None),
    };
    let shared = Shared {
        kv_writes,
        cell: cell.clone(),
        writer: writer_queue.clone(),
        events: events_tx,
        clock: clock.clone(),
        decoder: decoder_tx,
        decoder_bytes: decoder_bytes.clone(),
        open_connections: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        shutdown: shutdown.clone(),
        draining: draining.clone(),
        peers: Arc::new(links.clone()),
        next_reactor: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        tls: tls.clone(),
        acl: acl.clone(),
        acl_metrics: metrics.acl.clone(),
        settings: Settings {
            max_connections: remoting_share(&config, controller_cap),
            ..Settings::from_config(&config, started_ms)
        },
    };
    let mut built = Vec::with_capacity(reactors);
    for (i, (poll, listener, inbox_rx)) in parts.into_iter().enumerate() {
        let reactor = Reactor::new(i as u16, poll, listener, inbox_rx, shared.clone(), metrics.reactors[i].clone())
            .map_err(|e| StartError::Bind { addr: addr_text(&config), source: e })?;
        built.push(reactor);
    }
    drop(shared);
    // Small: a body the decoder has not taken back yet is dropped by the writer instead.
    let (spent_tx, spent_rx) = bounded(SPENT_BODIES);
    let decoder = Decoder {
        spent: spent_rx,
        jobs: decoder_rx,
        bytes: decoder_bytes,
        cell: cell.clone(),
        writer: writer_queue.clone(),
        reactors: links.clone(),
        clock: clock.clone(),
        started_ms,
        acl: acl.clone(),
        acl_metrics: metrics.acl.clone(),
    };
    // The feed is kept only where somebody can read it.
    let feed_size = if http_listener.is_some() { config.event_feed_size } else { 0 };
    let feed = Arc::new(Feed::new(feed_size, started_ms));
    let writer = Writer::new(kv, config.clone(), cell.clone(), links.clone(), clock.clone(), metrics.writer.clone())
        .with_queue_bytes(writer_queue.bytes.clone())
        .with_feed(feed.clone())
        .with_spent(spent_tx);

    let mut threads = Vec::with_capacity(reactors + 4);
    // Small: the console asks every few seconds; a full queue answers the HTTP request 503.
    let (live_tx, live_rx) = bounded(8);
    let (imports_tx, imports) = bounded(1);
    let inputs = WriterInputs { commands: writer_rx, events: events_rx, stop: stop_rx, live_queries: live_rx, imports };
    // A peer's KV is taken only into an empty table, and never with replicated KV: there the group's log or snapshot
    // is the one source, and a copy imported through the writer alone would differ from what the group committed.
    let want_peer_kv = kv_empty(&cell) && !config.kv_replication_enabled;
    let (writer, warm) = warm_start(writer, &config);
    threads.push(critical("namesrv-writer".into(), move || writer.run(inputs))?);
    if !warm {
        crate::fleet::bootstrap::start(&config, clock.clone(), want_peer_kv, imports_tx).map_err(StartError::Thread)?;
    }
    threads.push(critical("namesrv-decoder".into(), move || decoder.run())?);
    let pinned = start_reactors(built, config.pin_threads, &mut threads)?;
    let http = match http_listener {
        Some(listener) => {
            let ctx = HttpContext {
                cell: cell.clone(),
                metrics: metrics.clone(),
                writer: writer_queue.tx.clone(),
                clock,
                started_ms,
                draining: draining.clone(),
                feed: feed.clone(),
                live: live_tx,
                acl: acl.clone(),
                tls,
                limits: HttpLimits::from_config(&config),
                census: Default::default(),
                fleet: metrics.fleet.clone(),
            };
            Some(HttpServer::start(listener, ctx).map_err(StartError::Thread)?)
        }
        None => None,
    };
    let stop_acl = match (reloader, &acl) {
        (Some(AclKeeper::File(reloader)), _) => {
            let (tx, rx) = bounded::<()>(1);
            threads.push(critical("namesrv-acl-reload".into(), move || reloader.run(rx))?);
            Some(tx)
        }
        (Some(AclKeeper::Users { base, path, users }), Some(acl)) => {
            let sync = crate::auth_sync::UserSync {
                base,
                cell: acl.clone(),
                snapshot: cell.clone(),
                path,
                interval: Duration::from_secs(config.auth_users_refresh_seconds.max(1)),
                metrics: metrics.acl.clone(),
                users,
                failing: false,
                next: 0,
            };
            let (tx, rx) = bounded::<()>(1);
            threads.push(critical("namesrv-auth-users".into(), move || sync.run(rx))?);
            Some(tx)
        }
        _ => None,
    };
    // Not critical: a fleet view that stopped leaves the name server serving.
    let stop_fleet = match fleet {
        Some((fleet, _)) => {
            let (tx, rx) = bounded::<()>(1);
            let t = std::thread::Builder::new().name("namesrv-fleet".into()).spawn(move || fleet.run(rx));
            threads.push(t.map_err(StartError::Thread)?);
            Some(tx)
        }
        None => None,
    };
    info!(address = %local_addr, reactors, pinned, "namesrv listening");
    // Java waits shutdownWaitTimeSeconds only with enableShutdownGracefully; we always let in-flight work finish,
    // bounded by that setting or 5 s.
    let drain_secs =
        if config.enable_shutdown_gracefully { config.shutdown_wait_time_seconds.max(0) as u64 } else { 5 };
    let handle = ServerHandle {
        local_addr,
        cell,
        shutdown,
        stop_writer: stop_tx,
        stop_acl,
        stop_fleet,
        wakers: links.iter().map(|l| l.waker.clone()).collect(),
        threads,
        http,
        feed,
        metrics,
        draining,
        drain_limit: Duration::from_secs(drain_secs),
        go_away: config.enable_shutdown_gracefully,
        controller,
        kv_raft,
    };
    if let Some(addr) = handle.http_addr() {
        info!(address = %addr, "HTTP endpoint: /metrics /health /ready /routes/{{topic}} /cluster");
        if !config.nsaddr_list.trim().is_empty() {
            info!(address = %addr, list = config.nsaddr_list.trim(), "address server: /rocketmq/nsaddr");
        }
    } else if !config.nsaddr_list.trim().is_empty() {
        warn!("nsaddrList is set but httpAddress is not: the address server /rocketmq/nsaddr is off");
    }
    Ok(handle)
}

/// The warm-restart file replayed if there is one (`routeSnapshotPath`); whether it gave any route to serve.
fn warm_start(mut writer: Writer, config: &Config) -> (Writer, bool) {
    let path = Path::new(config.route_snapshot_path.trim());
    if path.as_os_str().is_empty() {
        return (writer, false);
    }
    match warm::load(path, config.max_frame_length, config.max_inflated_body) {
        Ok(saved) => {
            let (brokers, timed_out) = writer.warm_start(saved);
            info!(path = %path.display(), brokers, timed_out, "warm restart: serving saved routes provisionally");
            (writer, brokers > 0)
        }
        // Not fatal: the brokers re-register within their period anyway.
        Err(e) => {
            warn!(path = %path.display(), error = %e, "warm restart file unreadable, starting empty");
            (writer, false)
        }
    }
}

fn kv_empty(cell: &ArcSwap<Snapshot>) -> bool {
    cell.load().kv.is_empty()
}

/// One thread per reactor, pinned to a core each (`pinThreads`) when the cores can be listed. Returns whether they
/// were pinned.
fn start_reactors(built: Vec<Reactor>, pin: bool, threads: &mut Vec<JoinHandle<()>>) -> Result<bool, StartError> {
    let cores = if pin { core_affinity::get_core_ids().unwrap_or_default() } else { Vec::new() };
    for (i, reactor) in built.into_iter().enumerate() {
        let core = if cores.is_empty() { None } else { Some(cores[i % cores.len()]) };
        threads.push(critical(format!("namesrv-reactor-{i}"), move || {
            if let Some(core) = core {
                if !core_affinity::set_for_current(core) {
                    warn!(reactor = i, "cannot pin reactor thread to its core");
                }
            }
            reactor.run()
        })?);
    }
    Ok(!cores.is_empty())
}

/// Runs `body` on a thread of its own that the process cannot live without. If it panics, the process exits
/// (code 70): answering routes from a snapshot nobody updates any more, while `/health` says ok, is worse than a
/// restart by the service manager, after which brokers re-register within their 30 s period.
fn critical(name: String, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StartError> {
    crate::critical::spawn(name, body).map_err(StartError::Thread)
}

/// The exit code when a critical thread panicked (EX_SOFTWARE).
#[doc(hidden)]
pub const EXIT_THREAD_PANICKED: i32 = crate::critical::EXIT_THREAD_PANICKED;

/// The accounts as loaded now, and what keeps them current: the account file's reload thread (`aclEnable`), or
/// the users learned from the brokers (`authenticationEnabled`).
type AclParts = (Option<Arc<ArcSwap<crate::acl::Acl>>>, Option<AclKeeper>);

enum AclKeeper {
    File(crate::acl_reload::Reloader),
    /// Everything but the snapshot, which does not exist yet when the accounts are loaded.
    Users {
        base: crate::acl::users::Base,
        path: std::path::PathBuf,
        users: Vec<crate::acl::users::User>,
    },
}

fn load_acl(config: &Config, metrics: &Metrics) -> Result<AclParts, StartError> {
    match (config.acl_enable, config.authentication_enabled) {
        (false, false) => Ok((None, None)),
        (true, true) => Err(StartError::AuthModes),
        (true, false) => load_acl_file(config, metrics),
        (false, true) => load_users(config, metrics),
    }
}

/// ACL 2.0: the name server's own credentials now, the last good user list from disk, the brokers later.
fn load_users(config: &Config, metrics: &Metrics) -> Result<AclParts, StartError> {
    use crate::acl::users;
    let inner = users::inner_credentials(&config.inner_client_authentication_credentials)?;
    if inner.is_none() {
        return Err(StartError::NoInnerCredentials);
    }
    let base = users::Base {
        inner,
        init: users::init_user(&config.init_authentication_user)?,
        open_codes: users::open_codes(&config.authentication_whitelist),
    };
    let path = std::path::PathBuf::from(config.auth_users_path.trim());
    let cached = crate::auth_sync::load_cache(&path);
    let acl = users::acl(&base, &cached);
    info!(path = %path.display(), users = cached.len(), "ACL 2.0 authentication enabled; users are learned from the brokers");
    metrics.acl.enabled.store(true, Ordering::Relaxed);
    metrics.acl.users_mode.store(true, Ordering::Relaxed);
    metrics.acl.accounts.store(acl.accounts.len() as u64, Ordering::Relaxed);
    Ok((Some(Arc::new(ArcSwap::from_pointee(acl))), Some(AclKeeper::Users { base, path, users: cached })))
}

fn load_acl_file(config: &Config, metrics: &Metrics) -> Result<AclParts, StartError> {
    let path = config.acl_path().map_err(StartError::AclPath)?;
    let (acl, seen) = crate::acl_reload::load(&path)?;
    info!(path = %path.display(), accounts = acl.accounts.len(), white = acl.global_white.len(), "ACL enabled");
    metrics.acl.enabled.store(true, Ordering::Relaxed);
    metrics.acl.accounts.store(acl.accounts.len() as u64, Ordering::Relaxed);
    let cell = Arc::new(ArcSwap::from_pointee(acl));
    let reloader = crate::acl_reload::Reloader { path, cell: cell.clone(), metrics: metrics.acl.clone(), seen };
    Ok((Some(cell), Some(AclKeeper::File(reloader))))
}

/// `bindAddress` and `listenPort` as a socket address. The address is an IPv4 or IPv6 address, bare (`::`, as Java
/// takes it) or in brackets (`[::]`); `::` listens on IPv6 and IPv4 alike.
fn listen_addr(config: &Config) -> Option<SocketAddr> {
    let bind = config.bind_address.trim();
    let bare = bind.strip_prefix('[').and_then(|b| b.strip_suffix(']')).unwrap_or(bind);
    let ip: std::net::IpAddr = bare.parse().ok()?;
    Some(SocketAddr::new(ip, config.listen_port))
}

fn addr_text(config: &Config) -> String {
    format!("{}:{}", config.bind_address, config.listen_port)
}

/// One listening socket, cloned for every reactor: each polls it, accepts, and deals new connections round-robin
/// (SO_REUSEPORT would let a second server bind the same port silently, which a drop-in must not allow).
fn bind_listeners(config: &Config, n: usize) -> Result<Vec<TcpListener>, StartError> {
    let text = addr_text(config);
    let addr = listen_addr(config).ok_or_else(|| StartError::Address(text.clone()))?;
    let backlog = if config.server_socket_backlog > 0 { config.server_socket_backlog } else { 1024 };
    let first = bind_one(addr, backlog).map_err(|source| StartError::Bind { addr: text.clone(), source })?;
    let mut out = Vec::with_capacity(n);
    for _ in 1..n {
        out.push(first.try_clone().map_err(|source| StartError::Bind { addr: text.clone(), source })?);
    }
    out.insert(0, first);
    Ok(out)
}

fn bind_one(addr: SocketAddr, backlog: i32) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}

/// `maxConnections` within this port's share of the open-files limit, the controller port's share taken first
/// ([`crate::limit::fd_shares`], decision 0032): a flood of connections on either port cannot take the descriptors the
/// other needs, and accepting stops with a refusal, not with EMFILE.
fn remoting_share(config: &Config, controller_cap: Option<usize>) -> usize {
    let nofile = crate::limit::open_files_limit();
    let (cap, _) = crate::limit::fd_shares(nofile, config.max_connections, controller_cap);
    if cap != config.max_connections {
        tracing::info!(
            max_connections = config.max_connections,
            open_files = nofile,
            effective = cap,
            "maxConnections lowered to this port's share of the open-files limit"
        );
    }
    cap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_address_takes_bare_and_bracketed_ipv6() {
        let at =
            |bind: &str| listen_addr(&Config { bind_address: bind.into(), listen_port: 9876, ..Config::default() });
        assert_eq!(at("0.0.0.0"), Some("0.0.0.0:9876".parse().unwrap()));
        assert_eq!(at("::"), Some("[::]:9876".parse().unwrap()));
        assert_eq!(at("[::1]"), Some("[::1]:9876".parse().unwrap()));
        assert_eq!(at(" 127.0.0.1 "), Some("127.0.0.1:9876".parse().unwrap()));
        assert_eq!(at("localhost"), None);
    }

    #[test]
    fn boot_line_is_javas() {
        assert_eq!(
            boot_line("0.0.0.0:9876".parse().unwrap()),
            "The Name Server boot success. serializeType=JSON, address 0.0.0.0:9876"
        );
        assert_eq!(
            boot_line("[::]:9876".parse().unwrap()),
            "The Name Server boot success. serializeType=JSON, address :::9876"
        );
    }
}
