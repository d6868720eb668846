//! What reactors, the decoder and the HTTP thread send the writer (`WriteCommand`, `ConnEvent`, `LiveQuery`) and
//! what it sends back (`Completion`, `LiveAnswer`). Its own module, below both `handlers` (which build commands)
//! and `writer` (which applies them), so that neither imports the other.

use std::sync::Arc;

use crate::model::{BodyMark, DataVersion, QueueData, SameBody};
use crate::protocol::RemotingCommand;
use crate::state::routes::{RegisterBroker, UnregisterBroker};
use crate::state::{ConnId, Snapshot};

/// Where a request came from, so its reply finds its way back (or is dropped if the connection is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub conn: ConnId,
    /// A header-only copy of the request (code, opaque, version, encoding, flag); the body is not kept.
    pub request: RemotingCommand,
    /// When the reactor decoded it, for the latency metric.
    pub received: std::time::Instant,
    /// Who sent it, for the audit trail: the peer's address and the account that signed it (`aclEnable`).
    pub peer: std::net::IpAddr,
    pub account: Option<String>,
}

impl Origin {
    pub(crate) fn new(conn: ConnId, req: &RemotingCommand, peer: std::net::IpAddr, account: Option<String>) -> Origin {
        let mut request = req.clone();
        request.body = bytes::Bytes::new();
        request.ext_fields = None;
        Origin { conn, request, received: std::time::Instant::now(), peer, account }
    }
}

/// How a REGISTER_BROKER's body reaches the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RegisterBody {
    /// Decoded into `RegisterBroker::body` at request version `version`, with its mark when the next body can be
    /// recognised by it.
    Decoded { mark: Option<BodyMark>, version: i32 },
    /// Recognised as the broker's last body at a new DataVersion: `RegisterBroker::body` holds only the
    /// DataVersion; the raw body is kept for the writer to decode if it cannot use its record.
    Same(Box<SameBody>),
}

impl RegisterBody {
    /// Topics in the registration `reg` carries this body for (a recognised body's count is its record's).
    pub(crate) fn topics(&self, reg: &RegisterBroker) -> usize {
        match self {
            RegisterBody::Decoded { .. } => reg.body.topic_configs.len(),
            RegisterBody::Same(same) => same.topics,
        }
    }
}

/// A state change, decoded and validated by a reactor; the writer only applies it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WriteOp {
    RegisterBroker(Box<RegisterBroker>, RegisterBody),
    UnregisterBroker(UnregisterBroker),
    BrokerHeartbeat {
        cluster: String,
        addr: String,
    },
    QueryDataVersion {
        cluster: String,
        addr: String,
        data_version: Option<DataVersion>,
    },
    WipeWritePerm {
        broker_name: String,
    },
    AddWritePerm {
        broker_name: String,
    },
    DeleteTopic {
        topic: String,
        cluster: Option<String>,
    },
    /// `None`: an entry without a broker name, where Java stops.
    RegisterTopic {
        topic: String,
        queue_datas: Vec<Option<QueueData>>,
    },
    PutKv {
        namespace: String,
        key: String,
        value: Option<String>,
    },
    DeleteKv {
        namespace: String,
        key: String,
    },
    UpdateConfig {
        pairs: Vec<(String, String)>,
    },
    /// FLEET_ROUTES: a cut of the tables with the live table's last-update times, which only the writer holds.
    /// Changes nothing; the reactor builds the answer from the cut (`Outcome::Exported`).
    ExportRoutes {
        kv: bool,
    },
}

impl WriteOp {
    /// What the audit trail says about this write: names and counts, never values.
    pub(crate) fn facts(&self) -> String {
        use crate::audit::push;
        let mut out = String::new();
        match self {
            WriteOp::RegisterBroker(r, body) => {
                push(&mut out, "clusterName", &r.cluster_name);
                push(&mut out, "brokerName", &r.broker_name);
                push(&mut out, "brokerAddr", &r.broker_addr);
                push(&mut out, "brokerId", &r.broker_id.to_string());
                push(&mut out, "topics", &body.topics(r).to_string());
                push(&mut out, "sameBody", if matches!(body, RegisterBody::Same(_)) { "true" } else { "false" });
            }
            WriteOp::UnregisterBroker(u) => {
                push(&mut out, "clusterName", &u.cluster_name);
                push(&mut out, "brokerName", &u.broker_name);
                push(&mut out, "brokerAddr", &u.broker_addr);
                push(&mut out, "brokerId", &u.broker_id.to_string());
            }
            WriteOp::BrokerHeartbeat { cluster, addr } | WriteOp::QueryDataVersion { cluster, addr, .. } => {
                push(&mut out, "clusterName", cluster);
                push(&mut out, "brokerAddr", addr);
            }
            WriteOp::WipeWritePerm { broker_name } | WriteOp::AddWritePerm { broker_name } => {
                push(&mut out, "brokerName", broker_name);
            }
            WriteOp::DeleteTopic { topic, cluster } => {
                push(&mut out, "topic", topic);
                if let Some(c) = cluster {
                    push(&mut out, "cluster", c);
                }
            }
            WriteOp::RegisterTopic { topic, queue_datas } => {
                push(&mut out, "topic", topic);
                push(&mut out, "queueDatas", &queue_datas.len().to_string());
            }
            WriteOp::PutKv { namespace, key, .. } | WriteOp::DeleteKv { namespace, key } => {
                push(&mut out, "namespace", namespace);
                push(&mut out, "key", key);
            }
            WriteOp::ExportRoutes { kv } => push(&mut out, "kv", if *kv { "true" } else { "false" }),
            WriteOp::UpdateConfig { pairs } => {
                let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
                push(&mut out, "keys", &keys.join(","));
            }
        }
        out
    }

    /// Liveness that every broker sends every few seconds: its accepted audit line is DEBUG, not INFO.
    pub(crate) fn is_liveness(&self) -> bool {
        matches!(self, WriteOp::BrokerHeartbeat { .. } | WriteOp::QueryDataVersion { .. })
    }
}

/// One request for the writer. It travels boxed: the bounded channel preallocates and touches every slot, and a
/// pointer-sized slot keeps 64k of them at 1 MiB of RSS instead of ~16 MiB.
#[derive(Clone, Debug)]
pub(crate) struct WriteCommand {
    pub origin: Origin,
    pub op: WriteOp,
    /// The request body's length: what this command counts against `writerQueueBytes`.
    pub bytes: usize,
    /// The snapshot the decoder thread read while decoding this command; `None` from a reactor. The writer lets go
    /// of it once the command is applied, and gives a decoded body's topics back to the decoder, so each is freed on
    /// the thread that allocated it (decision 0026).
    pub decoded_with: Option<Arc<Snapshot>>,
}

/// The writer's queue as the reactors and the decoder see it: bounded by count (the channel) and by body bytes.
#[derive(Clone, Debug)]
pub(crate) struct WriterQueue {
    pub tx: crossbeam_channel::Sender<Box<WriteCommand>>,
    pub bytes: std::sync::Arc<crate::limit::ByteBudget>,
}

/// Why the writer did not take a command; the command comes back with it.
pub(crate) enum Refused {
    /// Its queue is full, by count or by bytes.
    Busy(Box<WriteCommand>),
    /// It has stopped.
    Stopped(Box<WriteCommand>),
}

/// Hands `command` to the writer without blocking.
pub(crate) fn try_submit(writer: &WriterQueue, command: Box<WriteCommand>) -> Result<(), Refused> {
    let bytes = command.bytes;
    if !writer.bytes.try_take(bytes) {
        return Err(Refused::Busy(command));
    }
    writer.tx.try_send(command).map_err(|e| {
        writer.bytes.release(bytes);
        match e {
            crossbeam_channel::TrySendError::Full(c) => Refused::Busy(c),
            crossbeam_channel::TrySendError::Disconnected(c) => Refused::Stopped(c),
        }
    })
}

/// Hands `command` to the writer without blocking. `Err` is the reply to send instead: SYSTEM_BUSY when the
/// writer's queue is full (by count or by bytes), SYSTEM_ERROR when the writer has stopped.
pub(crate) fn submit(writer: &WriterQueue, command: WriteCommand) -> Result<(), RemotingCommand> {
    try_submit(writer, Box::new(command)).map_err(refusal)
}

/// The reply to a refused command (audited).
pub(crate) fn refusal(refused: Refused) -> RemotingCommand {
    let (c, response) = match refused {
        Refused::Busy(c) => {
            let busy = crate::protocol::command::system_busy(&c.origin.request);
            (c, busy)
        }
        Refused::Stopped(c) => {
            let stopping = crate::protocol::command::system_error(&c.origin.request, "name server is shutting down");
            (c, stopping)
        }
    };
    if crate::audit::enabled() {
        let o = &c.origin;
        let (code, remark) = (response.code, response.remark.as_deref().unwrap_or(""));
        crate::audit::applied(o.peer, o.account.as_deref(), o.request.code, &c.op.facts(), code, remark, false);
    }
    response
}

/// Connection life-cycle events; they travel on their own unbounded channel so none is ever refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    /// Closed by the peer, by an error, by a broken frame, or idle past the limit.
    Closed(ConnId),
}

/// What the writer did with one command. The reply is built from it where the request was decoded
/// ([`crate::handlers::complete`]), so the writer never builds wire replies.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Applied; the reply is SUCCESS.
    Done,
    /// REGISTER_BROKER applied (`Some`: master/HA addresses, notices sent) or refused (`None`).
    Registered(crate::state::routes::RegisterOutcome),
    /// WIPE/ADD_WRITE_PERM_OF_BROKER: how many topics changed.
    PermChanged(i32),
    /// QUERY_DATA_VERSION: whether the broker's DataVersion differs from the stored one, and the stored one.
    DataVersion { changed: bool, stored: Option<DataVersion> },
    /// A KV or config change that could not be made durable; it was rolled back.
    NotDurable(String),
    /// FLEET_ROUTES: the cut to encode (O(live brokers) taken by the writer, O(topic entries) encoded by the
    /// reactor), the writer's clock when it was taken, and whether the KV entries go with it.
    Exported { cut: Box<crate::state::routes::ExportCut>, now_ms: i64, kv: bool },
}

impl Outcome {
    /// The response code the reply will carry (for the audit trail, before the reply exists).
    pub(crate) fn code(&self) -> i32 {
        use crate::protocol::ResponseCode;
        match self {
            Outcome::Registered(None) | Outcome::NotDurable(_) => ResponseCode::SYSTEM_ERROR,
            _ => ResponseCode::SUCCESS,
        }
    }
}

/// What the writer hands back to a reactor.
#[derive(Debug)]
pub(crate) enum Completion {
    /// The outcome of `request` (a header-only copy) from `conn`; the reactor builds the reply if the connection is
    /// still the same.
    Done { conn: ConnId, request: RemotingCommand, outcome: Outcome, received: std::time::Instant },
    /// Send this response (built by the decoder thread) on `conn` if it is still the same connection.
    Reply { conn: ConnId, response: RemotingCommand, code: i32, received: std::time::Instant },
    /// A request refused for a limit (by the decoder thread): sent like `Reply`, counted and logged as a refusal
    /// of `peer` (with its audit line, for a write).
    Refused {
        conn: ConnId,
        peer: std::net::IpAddr,
        response: RemotingCommand,
        code: i32,
        limit: crate::limit::Limit,
        audit: Option<Box<crate::audit::RefusedWrite>>,
        received: std::time::Instant,
    },
    /// Close `conn` (its broker expired).
    Close { conn: ConnId },
    /// Send a NOTIFY_MIN_BROKER_ID_CHANGE (905) one-way to a broker.
    Notify(crate::state::routes::MinBrokerIdNotice),
    /// A connection another reactor accepted and deals to this one.
    Adopt { stream: mio::net::TcpStream, peer: std::net::SocketAddr },
}

/// How the writer, and the decoder, reach one reactor: its completion inbox and the waker that makes it read it.
/// Here, beside `Completion`, so that the reactors and the decoder name it without importing the writer.
#[derive(Clone, Debug)]
pub(crate) struct ReactorLink {
    pub inbox: crossbeam_channel::Sender<Completion>,
    pub waker: Arc<mio::Waker>,
}

/// An operator's look at the writer-private live table (the web console's brokers, the health verdicts), answered
/// between batches.
#[derive(Debug)]
pub(crate) struct LiveQuery {
    /// A tokio one-shot: the HTTP task that asks awaits it without holding its thread; sending never blocks.
    pub reply: tokio::sync::oneshot::Sender<LiveAnswer>,
}

/// The live table and the brokers that left it lately (oldest first).
#[derive(Clone, Debug, Default)]
pub(crate) struct LiveAnswer {
    pub rows: Vec<LiveRow>,
    pub removed: Vec<Removal>,
}

pub(crate) use crate::state::liveness::{LiveRow, Removal};
