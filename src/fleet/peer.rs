//! Asking one peer what it knows, on the fleet thread, with the crate's blocking client ([`crate::remoting::Conn`]),
//! whose every wait is bounded: a peer that hangs costs a check at most `CONNECT_TIMEOUT` per address its name resolves
//! to and `ANSWER_TIMEOUT` per request, one that answers garbage an error, and no answer is read past `MAX_ANSWER`
//! bytes.

use std::time::Duration;

use crate::acl::signature;
use crate::fleet_facts::wire::{self, Told, FLEET_FACTS};
use crate::fleet_facts::{self as facts, Aspect, BodyError, Facts, Items};
use crate::protocol::{RemotingCommand, RequestCode as C, ResponseCode};
use crate::remoting::RemoteError;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);
/// The largest answer read: a full topic list of ~200k names. Bigger is refused unread, as a broken frame.
pub(crate) const MAX_ANSWER: usize = 8 * 1024 * 1024;
/// KV namespaces asked of a peer that speaks only the standard codes, one request each.
const MAX_NAMESPACES: usize = 32;

/// Why a peer could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("cannot reach {addr}: {source}")]
    Unreachable { addr: String, source: RemoteError },
    #[error("{addr}: {source}")]
    Io { addr: String, source: RemoteError },
    #[error("{addr} answered request {request} with code {code}: {remark}")]
    Refused { addr: String, request: i32, code: i32, remark: String },
    #[error("{addr}: {source}")]
    Body { addr: String, source: BodyError },
}

/// What a check learned, per aspect.
pub struct Answer {
    pub told: [Told; 4],
    /// Whether the peer answered FLEET_FACTS (one of ours) or only the standard codes (Java's).
    pub ours: bool,
    /// Requests sent, bytes sent and bytes read, for the decision's measurement and the log.
    pub requests: u32,
    pub sent: usize,
    pub bytes: usize,
}

/// One connection to a peer (also the bootstrap's, `fleet::bootstrap`).
pub(crate) struct Conn<'a> {
    addr: &'a str,
    conn: crate::remoting::Conn,
    /// Signing with the inner credential: every request then carries our mark ([`crate::acl::outbound`]), so that a
    /// peer cannot replay it to us under another code.
    signed: bool,
}

impl<'a> Conn<'a> {
    pub(crate) fn open(addr: &'a str, sign: Option<&'a (String, signature::Key)>) -> Result<Conn<'a>, PeerError> {
        let conn = crate::remoting::Conn::connect(addr, CONNECT_TIMEOUT, ANSWER_TIMEOUT)
            .map_err(|e| failed(addr, e))?
            .max_frame(MAX_ANSWER)
            .signing(sign.cloned());
        Ok(Conn { addr, conn, signed: sign.is_some() })
    }

    /// Sends a request (signed when we have an account) and waits for its answer, whatever its code.
    /// Reads answers of up to `max` bytes instead of `MAX_ANSWER` (a whole route table: `maxFrameLength`).
    pub(crate) fn max_frame(self, max: usize) -> Conn<'a> {
        Conn { conn: self.conn.max_frame(max), ..self }
    }

    pub(crate) fn ask(&mut self, cmd: RemotingCommand) -> Result<RemotingCommand, PeerError> {
        let mut cmd = RemotingCommand { opaque: self.conn.request(cmd.code).opaque, ..cmd };
        if self.signed {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or_default();
            cmd = crate::acl::outbound::stamp(cmd, now_ms);
        }
        self.conn.ask(cmd).map_err(|e| failed(self.addr, e))
    }

    fn answer(&self, told: [Told; 4], ours: bool) -> Answer {
        Answer { told, ours, requests: self.conn.requests, sent: self.conn.sent, bytes: self.conn.read }
    }

    /// `ask`, and a SUCCESS answer's body; any other code is `Refused`.
    fn body(&mut self, cmd: RemotingCommand) -> Result<bytes::Bytes, PeerError> {
        let request = cmd.code;
        let got = self.ask(cmd)?;
        if got.code != ResponseCode::SUCCESS {
            return Err(self.refused(request, &got));
        }
        Ok(got.body)
    }

    pub(crate) fn refused(&self, request: i32, got: &RemotingCommand) -> PeerError {
        let remark = crate::clip::clip(got.remark.as_deref().unwrap_or(""), 200).into_owned();
        PeerError::Refused { addr: self.addr.to_string(), request, code: got.code, remark }
    }

    fn read<T>(&self, r: Result<T, BodyError>) -> Result<T, PeerError> {
        r.map_err(|source| PeerError::Body { addr: self.addr.to_string(), source })
    }
}

/// Asks `addr` what it knows: FLEET_FACTS first unless `java` says the peer is known not to speak it, else (or
/// when it answers REQUEST_CODE_NOT_SUPPORTED) the standard codes.
pub fn check(
    addr: &str,
    ours: &Facts,
    java: bool,
    sign: Option<&(String, signature::Key)>,
) -> Result<Answer, PeerError> {
    let mut conn = Conn::open(addr, sign)?;
    let digests = ours.aspects.clone().map(|a| a.as_ref().map(facts::digest));
    if !java {
        let mut cmd = RemotingCommand::request(FLEET_FACTS, 0);
        for aspect in Aspect::ALL {
            if let Some(d) = digests[aspect.index()] {
                cmd = cmd.with_ext(aspect.name(), wire::hex(d));
            }
        }
        let got = conn.ask(cmd)?;
        if got.code == ResponseCode::SUCCESS {
            let told = conn.read(wire::read_answer(&got.body, &digests))?;
            return Ok(conn.answer(told, true));
        }
        if got.code != ResponseCode::REQUEST_CODE_NOT_SUPPORTED {
            return Err(conn.refused(FLEET_FACTS, &got));
        }
    }
    let told = standard(&mut conn, ours)?;
    Ok(conn.answer(told, false))
}

/// The standard codes: cluster info, the topic list, the configuration, and the KV namespaces we know of.
fn standard(conn: &mut Conn, ours: &Facts) -> Result<[Told; 4], PeerError> {
    let body = conn.body(RemotingCommand::request(C::GET_BROKER_CLUSTER_INFO, 0))?;
    let brokers = conn.read(facts::brokers_from_cluster_info(&body))?;
    // A peer with enableAllTopicList=false refuses the list: its topics are then not compared.
    let topics = match conn.ask(RemotingCommand::request(C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 0))? {
        got if got.code == ResponseCode::SUCCESS => Told::Items(conn.read(facts::topics_from_list(&got.body))?),
        _ => Told::Nothing,
    };
    let body = conn.body(RemotingCommand::request(C::GET_NAMESRV_CONFIG, 0))?;
    let config = conn.read(facts::config_from_properties(&body))?;
    let mut kv = Items::new();
    for ns in ours.kv_namespaces().into_iter().take(MAX_NAMESPACES) {
        let got = conn.ask(RemotingCommand::request(C::GET_KVLIST_BY_NAMESPACE, 0).with_ext("namespace", &ns))?;
        match got.code {
            ResponseCode::SUCCESS => conn.read(facts::kv_from_table(&ns, &got.body, &mut kv))?,
            // Java: no such namespace.
            ResponseCode::QUERY_NOT_FOUND => {}
            _ => return Err(conn.refused(C::GET_KVLIST_BY_NAMESPACE, &got)),
        }
    }
    Ok([Told::Items(brokers), topics, Told::Items(kv), Told::Items(config)])
}

/// `e` said of the peer at `addr`: not reached, or reached and the exchange failed.
fn failed(addr: &str, e: RemoteError) -> PeerError {
    let addr = addr.to_string();
    if e.is_unreachable() {
        PeerError::Unreachable { addr, source: e }
    } else {
        PeerError::Io { addr, source: e }
    }
}
