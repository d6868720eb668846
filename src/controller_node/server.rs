//! The controller port: accepts brokers, mqadmin and the other controller nodes, decodes frames and runs each
//! request on its own task (a Raft write may wait for a commit; heartbeats and reads on the same connection must
//! not wait behind it). Answers go back through one writer task per connection. Every frame not whole in one read
//! is read under one byte budget for the whole port (`room.rs`) and within a deadline; a connection with no whole
//! frame for `controllerIdleSeconds` is closed, and at most `controllerMaxConnections` are kept, within the port's
//! share of the open-files limit (decision 0032).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tracing::{debug, warn};

use super::net;
use super::node::Node;
use super::room::{BufferGauge, FrameRoom, Room, ROOM_WAIT, SMALL_BUFFER};
use crate::conn_id::ConnId;
use crate::limit::Limit;
use crate::protocol::code::{ControllerRequestCode, ResponseCode};
use crate::protocol::command::RemotingCommand;
use crate::protocol::frame;

/// Requests of one connection running at once; past this the connection is not read until one finishes.
const MAX_IN_FLIGHT: usize = 64;

/// What every connection task needs besides the node.
pub(crate) struct Listener {
    pub max_frame: usize,
    /// The hosts of `controllerDLegerPeers`: the only ones whose Raft RPCs are served.
    pub raft_peers: HashSet<IpAddr>,
    /// `controllerFrameBytes`: the room of big frames being read, shared by the connections.
    pub frames: Arc<FrameRoom>,
    pub metrics: Arc<crate::metrics::ControllerMetrics>,
    /// Connections kept at once (`controllerMaxConnections` within the port's share of the open-files limit).
    pub max_connections: usize,
    /// `controllerIdleSeconds` (None = never).
    pub idle: Option<Duration>,
    /// `controllerFrameTimeoutSeconds` in ms (0 = no deadline).
    pub frame_timeout_ms: i64,
    /// Refusals since the last log line, and when that was (ms since `started`): one line per 10 s at most.
    pub refused: AtomicU64,
    pub last_refusal_log_ms: AtomicI64,
    pub started: tokio::time::Instant,
}

/// The rate a frame on the controller port must at least arrive at once it takes longer than
/// `controllerFrameTimeoutSeconds` ([`crate::limit::frame_deadline_ms`]): the name server's default
/// `frameMinBytesPerSecond`.
pub(crate) const CONTROLLER_FRAME_MIN_RATE: u64 = 256 * 1024;

/// At most one line per this interval for the controller port's refusals; all are counted.
const REFUSAL_LOG_INTERVAL_MS: i64 = 10_000;

impl Listener {
    /// Counts a refusal for `limit`; logs it with `what` unless one was logged in the last 10 s (then the next line
    /// says how many more there were).
    fn refuse(&self, limit: Limit, peer: SocketAddr, what: &str) {
        let now = self.started.elapsed().as_millis() as i64;
        let last = self.last_refusal_log_ms.load(Ordering::Relaxed);
        let due = (last == 0 || now - last >= REFUSAL_LOG_INTERVAL_MS)
            && self
                .last_refusal_log_ms
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if due {
            let more = self.refused.swap(0, Ordering::Relaxed);
            warn!(target: "controller", %peer, limit = limit.name(), more,
                "{what} (at most one such line every 10 s: `more` were not logged; all are counted in \
                 namesrv_limit_hits_total)");
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        self.metrics.limit_hit(limit);
    }
}

/// One open connection, counted in `namesrv_controller_connections` until it ends.
struct Open(Arc<Listener>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.metrics.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Connection ids on the controller port: a reactor number no reactor has, so they never meet the name server's.
const CONTROLLER_REACTOR: u16 = u16::MAX;

pub(crate) async fn serve(listener: TcpListener, node: Arc<Node>, ctx: Arc<Listener>) {
    let next = AtomicU32::new(0);
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let before = ctx.metrics.connections.fetch_add(1, Ordering::AcqRel);
                let open = Open(Arc::clone(&ctx));
                if ctx.max_connections > 0 && before >= ctx.max_connections as u64 {
                    // Accepted and closed at once: better than leaving it in the backlog.
                    drop((stream, open));
                    ctx.refuse(Limit::ControllerConnections, peer, "controllerMaxConnections reached: closed at once");
                    continue;
                }
                let conn = ConnId { reactor: CONTROLLER_REACTOR, token: next.fetch_add(1, Ordering::Relaxed), gen: 0 };
                tokio::spawn(connection(stream, peer, conn, Arc::clone(&node), open));
            }
            // Out of descriptors and the like: keep serving the connections we have.
            Err(e) => {
                warn!(target: "controller", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Why a connection's read ended early.
enum Late {
    /// No whole frame for `controllerIdleSeconds`.
    Idle,
    /// The frame of this many bytes (0: its prefix) did not arrive within its deadline.
    Frame(u64),
}

async fn connection(stream: TcpStream, peer: SocketAddr, conn: ConnId, node: Arc<Node>, open: Open) {
    let ctx = Arc::clone(&open.0);
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<RemotingCommand>(MAX_IN_FLIGHT);
    let writer = tokio::spawn(async move {
        let mut out = BytesMut::new();
        while let Some(cmd) = rx.recv().await {
            out.clear();
            frame::encode(&cmd, &mut out);
            if wr.write_all(&out).await.is_err() {
                break;
            }
        }
    });
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut buf = BytesMut::with_capacity(8192);
    let mut gauge = BufferGauge::new(&ctx.metrics);
    // The room of the frame at the front of `buf`, once taken; it goes with the frame to its handler.
    let mut room: Option<Room> = None;
    // The last whole frame (idle), and when the frame at the front of `buf` began or took its room (deadline).
    let mut last_frame = tokio::time::Instant::now();
    let mut frame_since: Option<tokio::time::Instant> = None;
    'read: loop {
        loop {
            if room.is_none() {
                match admit(&ctx, &buf).await {
                    Ok(Some(taken)) => {
                        room = Some(taken);
                        frame_since = Some(tokio::time::Instant::now());
                    }
                    Ok(None) => {}
                    Err(NoRoom(len)) => {
                        warn!(target: "controller", %peer, frame = len, wait_s = ROOM_WAIT.as_secs(),
                            "no room in controllerFrameBytes for a frame in time: closing");
                        break 'read;
                    }
                }
            }
            match frame::decode(&mut buf, ctx.max_frame) {
                Ok(Some(cmd)) if cmd.is_response() => room = None,
                // In order, on this task: a heartbeat must be in the table before a close that follows it.
                Ok(Some(cmd)) if cmd.code == ControllerRequestCode::BROKER_HEARTBEAT => {
                    let _room = room.take();
                    if let Some(answer) = node.handle(&cmd, conn, peer.ip()).await {
                        let _ = tx.send(answer).await;
                    }
                }
                Ok(Some(cmd)) => {
                    let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else { break 'read };
                    let (node, tx, ctx, room) = (Arc::clone(&node), tx.clone(), Arc::clone(&ctx), room.take());
                    tokio::spawn(async move {
                        if let Some(answer) = answer(&node, &ctx, &cmd, peer, conn).await {
                            let _ = tx.send(answer).await;
                        }
                        drop((permit, room));
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    debug!(target: "controller", %peer, error = %e, "bad frame: closing");
                    break 'read;
                }
            }
            last_frame = tokio::time::Instant::now();
            frame_since = None;
        }
        if room.is_none() && buf.capacity() > SMALL_BUFFER {
            // The buffer of a frame that took room goes with the room: what is left is less than one read.
            let mut small = BytesMut::with_capacity(8192.max(buf.len()));
            small.extend_from_slice(&buf);
            buf = small;
        }
        if !buf.is_empty() && frame_since.is_none() {
            frame_since = Some(tokio::time::Instant::now());
        }
        gauge.set(buf.capacity());
        let (deadline, late) = match frame_since {
            Some(since) if ctx.frame_timeout_ms > 0 => {
                let len = frame::frame_len(&buf).unwrap_or(0);
                let ms = crate::limit::frame_deadline_ms(len, ctx.frame_timeout_ms, CONTROLLER_FRAME_MIN_RATE);
                (since.checked_add(Duration::from_millis(ms as u64)), Late::Frame(len))
            }
            Some(_) => (None, Late::Idle),
            None => (ctx.idle.and_then(|idle| last_frame.checked_add(idle)), Late::Idle),
        };
        let read = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, rd.read_buf(&mut buf)).await,
            None => Ok(rd.read_buf(&mut buf).await),
        };
        match read {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(_)) => {}
            Err(_) => {
                match late {
                    Late::Idle => debug!(target: "controller", %peer, "idle for controllerIdleSeconds: closing"),
                    Late::Frame(len) => ctx.refuse(
                        Limit::FrameDeadline,
                        peer,
                        &format!("frame of {len} bytes not whole within controllerFrameTimeoutSeconds: closing"),
                    ),
                }
                break;
            }
        }
        gauge.set(buf.capacity());
    }
    drop((room, gauge));
    node.on_connection_closed(conn).await;
    drop(tx);
    let _ = writer.await;
    drop(open);
}

/// No room came for a frame of this many bytes within `ROOM_WAIT`.
struct NoRoom(usize);

/// The room for the frame at the front of `buf`, taken before `frame::decode` reserves its declared length: every
/// frame not whole in `buf` takes it, however short, so that half-sent frames on many connections hold no more than
/// the budget and one read each. `None` if it needs none (no prefix yet, already whole, or over `maxFrameLength`,
/// which `decode` refuses).
async fn admit(ctx: &Arc<Listener>, buf: &BytesMut) -> Result<Option<Room>, NoRoom> {
    let Some(len) = frame::frame_len(buf).and_then(|l| usize::try_from(l).ok()) else {
        return Ok(None);
    };
    if len > ctx.max_frame || buf.len() >= len {
        return Ok(None);
    }
    ctx.frames.admit(len, ROOM_WAIT).await.map(Some).ok_or(NoRoom(len))
}

async fn answer(
    node: &Node,
    ctx: &Listener,
    cmd: &RemotingCommand,
    peer: SocketAddr,
    conn: ConnId,
) -> Option<RemotingCommand> {
    if !net::is_raft_rpc(cmd.code) {
        return node.handle(cmd, conn, peer.ip()).await;
    }
    if !ctx.raft_peers.contains(&peer.ip()) {
        warn!(target: "audit", %peer, code = cmd.code, "Raft RPC from a host that is not a controller peer: refused");
        let remark = format!("{} is not a controller peer", peer.ip());
        return Some(RemotingCommand::response_to(cmd, ResponseCode::NO_PERMISSION, Some(remark)));
    }
    Some(net::serve_rpc(&node.raft, cmd).await)
}
