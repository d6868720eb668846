//! Bootstrap from a peer (`bootstrapFromPeers`, decision 0034): a name server that starts with no routes asks the
//! other name servers of `namesrvPeers` for their route table (FLEET_ROUTES) and serves it provisionally, as a warm
//! restart serves its file. It runs on a thread of its own after the listener is up, so the server answers from
//! its first second and a dead peer costs start-up nothing; the answer goes to the writer (`Import`), which
//! replays it like the warm-restart file.
//!
//! Only what a peer serves now is taken, each broker with the age the peer has for it (its clock's now minus the
//! broker's last update), so the broker expires here when it would there; a broker the peer has dropped is not in
//! the answer. A peer that is provisional itself gives the last-update times it was given, so nothing gets
//! younger by being passed on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use tracing::{info, warn};

use crate::acl::signature;
use crate::clock::Clock;
use crate::config::Config;
use crate::fleet::peer::{Conn, PeerError};
use crate::fleet_facts::wire::{FLEET_ROUTES, PEER_NOW, WANT_KV};
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::registration::saved::{decode_table, Table, WarmError};

/// The longest the bootstrap keeps asking peers (1 s to connect and 3 s to answer each, `fleet::peer`): after
/// it the server goes on with what its brokers send it, as without peers.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// A peer's table on its way to the writer, its ages already turned into last-update times on our clock.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Import {
    pub from: String,
    pub table: Table,
}

/// Why one peer gave no table.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BootstrapError {
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// A Java name server (REQUEST_CODE_NOT_SUPPORTED): decision 0034 says why its tables are not rebuilt.
    #[error("{0} does not serve FLEET_ROUTES (a Java name server?)")]
    NotOurs(String),
    #[error("{addr}: unreadable route table: {source}")]
    Frames { addr: String, source: WarmError },
}

/// How to ask.
pub(crate) struct Ask<'a> {
    pub sign: Option<&'a (String, signature::Key)>,
    pub want_kv: bool,
    pub max_frame: usize,
    pub max_inflated: usize,
}

/// One peer's table, with each last-update time moved from the peer's clock to ours (`now_ms`).
pub(crate) fn fetch(addr: &str, ask: &Ask, now_ms: i64) -> Result<Table, BootstrapError> {
    let mut conn = Conn::open(addr, ask.sign)?.max_frame(ask.max_frame);
    let mut cmd = RemotingCommand::request(FLEET_ROUTES, 0);
    if ask.want_kv {
        cmd = cmd.with_ext(WANT_KV, "true");
    }
    let got = conn.ask(cmd)?;
    match got.code {
        ResponseCode::SUCCESS => {}
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED => return Err(BootstrapError::NotOurs(addr.to_string())),
        _ => return Err(conn.refused(FLEET_ROUTES, &got).into()),
    }
    let mut table = decode_table(&got.body, ask.max_frame, ask.max_inflated)
        .map_err(|source| BootstrapError::Frames { addr: addr.to_string(), source })?;
    // Without the peer's clock the times are taken as they are (hosts in one fleet keep their clocks in step).
    let shift = got.ext_i64(PEER_NOW).map_or(0, |peer_now| now_ms.saturating_sub(peer_now));
    for b in &mut table.brokers {
        b.last_update_ms = b.last_update_ms.map(|t| t.saturating_add(shift));
    }
    Ok(table)
}

/// Asks `peers` in turn until one serves a table with brokers, for at most `DEADLINE`; `None` if none does (all
/// dead, all empty, all Java). `now_ms` is read per peer, as each answer's ages are.
pub(crate) fn first_table(peers: &[String], ask: &Ask, now_ms: impl Fn() -> i64) -> Option<Import> {
    let started = Instant::now();
    for addr in peers {
        if started.elapsed() >= DEADLINE {
            warn!(deadline_s = DEADLINE.as_secs(), "bootstrap: no peer served routes in time; waiting for brokers");
            return None;
        }
        match fetch(addr, ask, now_ms()) {
            Ok(table) if !table.brokers.is_empty() => return Some(Import { from: addr.clone(), table }),
            Ok(_) => info!(peer = %addr, "bootstrap: the peer has no routes either"),
            Err(e) => warn!(peer = %addr, error = %e, "bootstrap: no route table from this peer"),
        }
    }
    None
}

/// Starts the bootstrap thread when `bootstrapFromPeers` is on and there are peers: it asks them, hands the first
/// table with brokers to the writer through `to_writer`, and ends (the channel closes with it). KV entries are
/// asked for only when ours was empty at start (`want_kv`). Not a critical thread: without it, brokers fill the
/// tables within their registration period, as before.
pub(crate) fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    want_kv: bool,
    to_writer: Sender<Import>,
) -> std::io::Result<()> {
    if !config.bootstrap_from_peers {
        return Ok(());
    }
    let peers = crate::fleet::peers(config);
    if peers.is_empty() {
        return Ok(());
    }
    let sign = crate::fleet::signing(config);
    let (max_frame, max_inflated) = (config.max_frame_length, config.max_inflated_body);
    info!(peers = ?peers, "no routes at start: asking the fleet's other name servers for theirs");
    let run = move || {
        let ask = Ask { sign: sign.as_ref(), want_kv, max_frame, max_inflated };
        if let Some(import) = first_table(&peers, &ask, || clock.now_ms()) {
            // The writer has stopped if this fails: nothing left to serve.
            let _ = to_writer.send(import);
        }
    };
    std::thread::Builder::new().name("namesrv-bootstrap".into()).spawn(run).map(drop)
}
