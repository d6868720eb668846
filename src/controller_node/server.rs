//! The controller port: accepts brokers, mqadmin and the other controller nodes, decodes frames and runs each
//! request on its own task (a Raft write may wait for a commit; heartbeats and reads on the same connection must
//! not wait behind it). Answers go back through one writer task per connection. Big frames are read under one byte
//! budget for the whole port (`room.rs`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tracing::{debug, warn};

use super::net;
use super::node::Node;
use super::room::{BufferGauge, FrameRoom, Room, BIG_FRAME, ROOM_WAIT};
use crate::protocol::code::{ControllerRequestCode, ResponseCode};
use crate::protocol::command::RemotingCommand;
use crate::protocol::frame;
use crate::state::ConnId;

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
}

/// Connection ids on the controller port: a reactor number no reactor has, so they never meet the name server's.
const CONTROLLER_REACTOR: u16 = u16::MAX;

pub(crate) async fn serve(listener: TcpListener, node: Arc<Node>, ctx: Arc<Listener>) {
    let next = AtomicU32::new(0);
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let conn = ConnId { reactor: CONTROLLER_REACTOR, token: next.fetch_add(1, Ordering::Relaxed), gen: 0 };
                tokio::spawn(connection(stream, peer, conn, Arc::clone(&node), Arc::clone(&ctx)));
            }
            // Out of descriptors and the like: keep serving the connections we have.
            Err(e) => {
                warn!(target: "controller", error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection(stream: TcpStream, peer: SocketAddr, conn: ConnId, node: Arc<Node>, ctx: Arc<Listener>) {
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
    // The room of the big frame at the front of `buf`, once taken; it goes with the frame to its handler.
    let mut room: Option<Room> = None;
    'read: loop {
        loop {
            if room.is_none() {
                match admit(&ctx, &buf).await {
                    Ok(taken) => room = taken,
                    Err(NoRoom(len)) => {
                        warn!(target: "controller", %peer, frame = len, wait_s = ROOM_WAIT.as_secs(),
                            "no room in controllerFrameBytes for a big frame in time: closing");
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
        }
        gauge.set(buf.capacity());
        match rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        gauge.set(buf.capacity());
    }
    drop((room, gauge));
    node.on_connection_closed(conn).await;
    drop(tx);
    let _ = writer.await;
}

/// No room came for a frame of this many bytes within `ROOM_WAIT`.
struct NoRoom(usize);

/// The room for the frame at the front of `buf`, taken before `frame::decode` reserves its declared length: `None`
/// if it needs none (short, already whole, or over `maxFrameLength`, which `decode` refuses).
async fn admit(ctx: &Arc<Listener>, buf: &BytesMut) -> Result<Option<Room>, NoRoom> {
    let Some(len) = frame::frame_len(buf).and_then(|l| usize::try_from(l).ok()) else {
        return Ok(None);
    };
    if len <= BIG_FRAME || len > ctx.max_frame || buf.len() >= len {
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
