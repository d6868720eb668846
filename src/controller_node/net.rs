//! Raft between our controller nodes, over our own remoting frames on the controller port: openraft's three RPCs
//! as private request codes (outside Java's 0–2016 and DLedger's 50000–51005), their messages as JSON bodies
//! (openraft's serde types). Java DLedger nodes cannot join, and need not: brokers never send these codes.
//!
//! Client side: one connection per target, opened on first use, dropped on any error (openraft retries with
//! backoff). Server side: `serve_rpc` runs on the receiving node's connection task; only addresses of
//! `controllerDLegerPeers` may send Raft RPCs, so nobody else on the network can vote or append.

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::Raft;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::controller::raft::{Node, NodeId};
use crate::protocol::code::ResponseCode;
use crate::protocol::command::RemotingCommand;
use crate::protocol::frame;

pub(crate) const APPEND_ENTRIES: i32 = 52001;
pub(crate) const VOTE: i32 = 52002;
pub(crate) const INSTALL_SNAPSHOT: i32 = 52003;

/// Whether `code` is one of ours (served by `serve_rpc`).
pub(crate) fn is_raft_rpc(code: i32) -> bool {
    (APPEND_ENTRIES..=INSTALL_SNAPSHOT).contains(&code)
}

/// The Raft groups that travel over these frames: `u64` node ids and addresses as `BasicNode` (the controller's
/// group and the replicated KV group, decision 0033).
pub(crate) trait NetConfig: openraft::RaftTypeConfig<NodeId = NodeId, Node = Node> {}
impl<C: openraft::RaftTypeConfig<NodeId = NodeId, Node = Node>> NetConfig for C {}

/// Builds one `PeerClient` per target openraft replicates to.
pub(crate) struct Network<C> {
    pub max_frame: usize,
    pub group: std::marker::PhantomData<C>,
}

impl<C> Network<C> {
    pub(crate) fn new(max_frame: usize) -> Network<C> {
        Network { max_frame, group: std::marker::PhantomData }
    }
}

impl<C: NetConfig> RaftNetworkFactory<C> for Network<C> {
    type Network = PeerClient<C>;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> PeerClient<C> {
        PeerClient::new(target, node.addr.clone(), self.max_frame)
    }
}

pub(crate) struct PeerClient<C> {
    target: NodeId,
    addr: String,
    max_frame: usize,
    conn: Option<(TcpStream, BytesMut)>,
    opaque: i32,
    group: std::marker::PhantomData<C>,
}

type Rpc<T, E = openraft::error::Infallible> = Result<T, RPCError<NodeId, Node, RaftError<NodeId, E>>>;

impl<C: NetConfig> PeerClient<C> {
    /// A client of `target` at `addr` that connects on first use.
    pub(crate) fn new(target: NodeId, addr: String, max_frame: usize) -> PeerClient<C> {
        PeerClient { target, addr, max_frame, conn: None, opaque: 0, group: std::marker::PhantomData }
    }

    /// One request and its response, within `ttl`. A transport failure drops the connection.
    pub(crate) async fn call<Req, Resp, E>(&mut self, code: i32, req: &Req, ttl: Duration) -> Rpc<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: DeserializeOwned + std::error::Error,
    {
        let body = serde_json::to_vec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        self.opaque = self.opaque.wrapping_add(1);
        let cmd = RemotingCommand::request(code, self.opaque).with_body(body);
        let answer = match tokio::time::timeout(ttl, self.exchange(&cmd)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
            Err(_) => {
                self.conn = None;
                let e = io::Error::new(io::ErrorKind::TimedOut, format!("no answer from {} in {ttl:?}", self.addr));
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
        };
        if answer.code != ResponseCode::SUCCESS {
            let e = io::Error::other(format!("{} refused: {:?}", self.addr, answer.remark));
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let result: Result<Resp, RaftError<NodeId, E>> =
            serde_json::from_slice(&answer.body).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn exchange(&mut self, cmd: &RemotingCommand) -> io::Result<RemotingCommand> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(&self.addr).await?;
            stream.set_nodelay(true)?;
            self.conn = Some((stream, BytesMut::with_capacity(4096)));
        }
        let (stream, buf) = self.conn.as_mut().expect("connected above");
        let mut out = BytesMut::new();
        frame::encode(cmd, &mut out);
        stream.write_all(&out).await?;
        loop {
            match frame::decode(buf, self.max_frame) {
                Ok(Some(answer)) if answer.is_response() && answer.opaque == cmd.opaque => return Ok(answer),
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
            if stream.read_buf(buf).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

impl<C: NetConfig> RaftNetwork<C> for PeerClient<C> {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<NodeId>> {
        self.call(APPEND_ENTRIES, &rpc, option.hard_ttl()).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call(INSTALL_SNAPSHOT, &rpc, option.hard_ttl()).await
    }

    async fn vote(&mut self, rpc: VoteRequest<NodeId>, option: RPCOption) -> Rpc<VoteResponse<NodeId>> {
        self.call(VOTE, &rpc, option.hard_ttl()).await
    }
}

/// Runs a Raft RPC from a peer on this node's Raft and answers with openraft's result as JSON.
pub(crate) async fn serve_rpc<C: NetConfig>(raft: &Raft<C>, req: &RemotingCommand) -> RemotingCommand {
    let body = match req.code {
        APPEND_ENTRIES => match serde_json::from_slice(&req.body) {
            Ok(rpc) => serde_json::to_vec(&raft.append_entries(rpc).await),
            Err(e) => return bad_request(req, e),
        },
        VOTE => match serde_json::from_slice(&req.body) {
            Ok(rpc) => serde_json::to_vec(&raft.vote(rpc).await),
            Err(e) => return bad_request(req, e),
        },
        INSTALL_SNAPSHOT => match serde_json::from_slice(&req.body) {
            Ok(rpc) => serde_json::to_vec(&raft.install_snapshot(rpc).await),
            Err(e) => return bad_request(req, e),
        },
        other => {
            let remark = format!(" request type {other} not supported");
            return RemotingCommand::response_to(req, ResponseCode::REQUEST_CODE_NOT_SUPPORTED, Some(remark));
        }
    };
    match body {
        Ok(body) => RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(body),
        Err(e) => RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(e.to_string())),
    }
}

fn bad_request(req: &RemotingCommand, e: serde_json::Error) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(format!("invalid Raft message: {e}")))
}
