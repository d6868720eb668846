//! What reactors send the writer (`WriteCommand`, `ConnEvent`) and what it sends back (`Completion`).

use crate::model::{DataVersion, QueueData};
use crate::protocol::RemotingCommand;
use crate::state::routes::{RegisterBroker, UnregisterBroker};
use crate::state::ConnId;

/// Where a request came from, so its reply finds its way back (or is dropped if the connection is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub conn: ConnId,
    /// A header-only copy of the request (code, opaque, version, encoding, flag); the body is not kept.
    pub request: RemotingCommand,
    /// When the reactor decoded it, for the latency metric.
    pub received: std::time::Instant,
}

impl Origin {
    pub fn new(conn: ConnId, req: &RemotingCommand) -> Origin {
        let mut request = req.clone();
        request.body = bytes::Bytes::new();
        request.ext_fields = None;
        Origin { conn, request, received: std::time::Instant::now() }
    }
}

/// A state change, decoded and validated by a reactor; the writer only applies it.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    RegisterBroker(Box<RegisterBroker>),
    UnregisterBroker(UnregisterBroker),
    BrokerHeartbeat { cluster: String, addr: String },
    QueryDataVersion { cluster: String, addr: String, data_version: Option<DataVersion> },
    WipeWritePerm { broker_name: String },
    AddWritePerm { broker_name: String },
    DeleteTopic { topic: String, cluster: Option<String> },
    RegisterTopic { topic: String, queue_datas: Vec<QueueData> },
    PutKv { namespace: String, key: String, value: Option<String> },
    DeleteKv { namespace: String, key: String },
    UpdateConfig { pairs: Vec<(String, String)> },
}

/// One request for the writer. It travels boxed: the bounded channel preallocates and touches every slot, and a
/// pointer-sized slot keeps 64k of them at 1 MiB of RSS instead of ~16 MiB.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteCommand {
    pub origin: Origin,
    pub op: WriteOp,
}

/// Hands `command` to the writer without blocking. `Err` is the reply to send instead: SYSTEM_BUSY when the
/// writer's queue is full, SYSTEM_ERROR when the writer has stopped.
pub fn submit(
    writer: &crossbeam_channel::Sender<Box<WriteCommand>>,
    command: WriteCommand,
) -> Result<(), RemotingCommand> {
    writer.try_send(Box::new(command)).map_err(|e| match e {
        crossbeam_channel::TrySendError::Full(c) => crate::handlers::system_busy(&c.origin.request),
        crossbeam_channel::TrySendError::Disconnected(c) => {
            crate::handlers::system_error(&c.origin.request, "name server is shutting down")
        }
    })
}

/// Connection life-cycle events; they travel on their own unbounded channel so none is ever refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnEvent {
    /// Closed by the peer, by an error, by a broken frame, or idle past the limit.
    Closed(ConnId),
}

/// What the writer hands back to a reactor.
#[derive(Debug)]
pub enum Completion {
    /// Send this response on `conn` if it is still the same connection.
    Reply { conn: ConnId, response: RemotingCommand, code: i32, received: std::time::Instant },
    /// A request refused for a limit (by the decoder thread): sent like `Reply`, counted and logged as a refusal.
    Refused {
        conn: ConnId,
        response: RemotingCommand,
        code: i32,
        limit: crate::handlers::Limit,
        received: std::time::Instant,
    },
    /// Close `conn` (its broker expired).
    Close { conn: ConnId },
    /// Send a NOTIFY_MIN_BROKER_ID_CHANGE (905) one-way to a broker.
    Notify(crate::state::routes::MinBrokerIdNotice),
    /// A connection another reactor accepted and deals to this one.
    Adopt { stream: mio::net::TcpStream, peer: std::net::SocketAddr },
}
