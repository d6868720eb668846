//! Requests the generator sends, a light response parser (code and opaque only, no JSON tree) and a blocking
//! connection for setting up topologies.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use namesrv::model::{DataVersion, RegisterBrokerBody, TopicConfig};
use namesrv::protocol::body::encode_register_broker_body;
use namesrv::protocol::{frame, RemotingCommand, RequestCode, SerializeType};

/// The request `version` we send: 5.5.0's, so routes come back in the standard JSON dialect.
pub const CLIENT_VERSION: i32 = 513;

/// Who a simulated broker is.
#[derive(Clone, Debug)]
pub struct BrokerIdent {
    pub cluster: String,
    pub name: String,
    pub addr: String,
}

pub fn route_request(topic: &str, opaque: i32, st: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, opaque).with_ext("topic", topic);
    cmd.serialize_type = st;
    cmd
}

/// `cmd` with `AccessKey` and the `Signature` a Java client's `AclClientRPCHook` would add.
pub fn signed(cmd: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    use namesrv::acl::signature;
    let cmd = cmd.with_ext(signature::ACCESS_KEY, access_key);
    let sig = signature::sign(cmd.ext_fields.as_ref().expect("has an AccessKey"), &cmd.body, secret.as_bytes());
    cmd.with_ext(signature::SIGNATURE, sig)
}

/// A 5.x master's REGISTER_BROKER; `compressed` says whether the body is zlib (its first byte, 0x78).
pub fn register_request(b: &BrokerIdent, body: Bytes, opaque: i32, st: SerializeType) -> RemotingCommand {
    let compressed = body.first() == Some(&0x78);
    let mut cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER, opaque)
        .with_ext("brokerName", b.name.as_str())
        .with_ext("brokerAddr", b.addr.as_str())
        .with_ext("clusterName", b.cluster.as_str())
        .with_ext("haServerAddr", b.addr.as_str())
        .with_ext("brokerId", "0")
        .with_ext("enableActingMaster", "false")
        .with_ext("compressed", compressed.to_string())
        .with_body(body);
    cmd.version = CLIENT_VERSION;
    cmd.serialize_type = st;
    cmd
}

/// A RegisterBrokerBody JSON for `topics` at DataVersion `counter`; the first `read_only` topics get perm 4. The
/// timestamp stays put: the 5.x `mappingDataVersion` our encoder writes follows it, while a real broker's changes
/// only with its static-topic mappings — so two bodies with the same topics differ only in `dataVersion`, as a
/// broker's do.
pub fn register_body(topics: &[String], counter: i64, read_only: usize) -> Bytes {
    register_body_as(topics, counter, read_only, false)
}

/// `register_body`, compressed (zlib, as a broker with `compressedRegister=true` sends it) or not.
pub fn register_body_as(topics: &[String], counter: i64, read_only: usize, zlib: bool) -> Bytes {
    let body = RegisterBrokerBody {
        data_version: DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 },
        topic_configs: topics
            .iter()
            .enumerate()
            .map(|(i, t)| TopicConfig {
                perm: if i < read_only { 4 } else { 6 },
                ..TopicConfig::with_defaults(t.as_str())
            })
            .collect(),
        mapping_infos: Vec::new(),
        filter_server_list: Some(Vec::new()),
    };
    Bytes::from(encode_register_broker_body(&body, zlib, CLIENT_VERSION))
}

/// Appends one encoded frame.
pub fn encode_into(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    let mut b = BytesMut::new();
    frame::encode(cmd, &mut b);
    out.extend_from_slice(&b);
}

/// A request split for sending without copying its body: the encoded frame up to the body, and the body. The
/// length prefix counts the body, so writing `head` then `body` puts the same bytes on the wire as `encode_into`.
pub struct Prepared {
    pub head: Vec<u8>,
    pub body: Bytes,
    pub opaque: i32,
}

pub fn prepare(mut cmd: RemotingCommand) -> Prepared {
    let body = std::mem::take(&mut cmd.body);
    let mut head = Vec::new();
    encode_into(&cmd, &mut head);
    let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize + body.len();
    head[..4].copy_from_slice(&(length as u32).to_be_bytes());
    Prepared { head, body, opaque: cmd.opaque }
}

/// What the generator needs from a response frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub code: i32,
    pub opaque: i32,
    /// Bytes of the whole frame, length prefix included.
    pub len: usize,
}

/// Parses the frame at the front of `buf`: `Ok(None)` when incomplete.
pub fn peek_frame(buf: &[u8]) -> Result<Option<FrameInfo>, String> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let length = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if !(4..=64 << 20).contains(&length) {
        return Err(format!("bad frame length {length}"));
    }
    if buf.len() < length + 4 {
        return Ok(None);
    }
    let word = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let hlen = (word & 0x00FF_FFFF) as usize;
    if hlen + 4 > length {
        return Err(format!("header length {hlen} > frame length {length}"));
    }
    let header = &buf[8..8 + hlen];
    let (code, opaque) = match word >> 24 {
        0 => (json_int(header, b"\"code\":"), json_int(header, b"\"opaque\":")),
        1 if hlen >= 9 => (
            Some(i32::from(i16::from_be_bytes([header[0], header[1]]))),
            Some(i32::from_be_bytes([header[5], header[6], header[7], header[8]])),
        ),
        t => return Err(format!("unknown header type {t}")),
    };
    match (code, opaque) {
        (Some(code), Some(opaque)) => Ok(Some(FrameInfo { code, opaque, len: length + 4 })),
        _ => Err(format!("header without code/opaque: {}", String::from_utf8_lossy(header))),
    }
}

/// The integer after `key` in a flat JSON header (fastjson writes numbers bare).
fn json_int(header: &[u8], key: &[u8]) -> Option<i32> {
    let at = header.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &header[at..];
    let (neg, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mut v: i64 = 0;
    let mut n = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        v = v * 10 + i64::from(c - b'0');
        n += 1;
    }
    if n == 0 {
        return None;
    }
    i32::try_from(if neg { -v } else { v }).ok()
}

/// One blocking connection, for setup and probes.
pub struct BlockingConn {
    stream: TcpStream,
    buf: Vec<u8>,
    opaque: i32,
}

impl BlockingConn {
    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<BlockingConn> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(BlockingConn { stream, buf: Vec::with_capacity(64 * 1024), opaque: 0 })
    }

    pub fn next_opaque(&mut self) -> i32 {
        self.opaque += 1;
        self.opaque
    }

    /// Sends `cmd` and returns the response with its opaque.
    pub fn call(&mut self, cmd: &RemotingCommand) -> io::Result<FrameInfo> {
        self.call_frame(cmd).map(|(f, _)| f)
    }

    /// Sends `cmd` and returns the response with its opaque, and its whole frame.
    pub fn call_frame(&mut self, cmd: &RemotingCommand) -> io::Result<(FrameInfo, Vec<u8>)> {
        let mut out = Vec::new();
        encode_into(cmd, &mut out);
        self.stream.write_all(&out)?;
        self.answer(cmd.opaque)
    }

    /// Sends a request encoded beforehand: no encoding, allocation or copy of the body on the sending side.
    pub fn call_prepared(&mut self, p: &Prepared) -> io::Result<FrameInfo> {
        self.stream.write_all(&p.head)?;
        self.stream.write_all(&p.body)?;
        self.answer(p.opaque).map(|(f, _)| f)
    }

    /// Reads until the response to `opaque`, dropping any other.
    fn answer(&mut self, opaque: i32) -> io::Result<(FrameInfo, Vec<u8>)> {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            while let Some(f) = peek_frame(&self.buf).map_err(io::Error::other)? {
                let frame: Vec<u8> = self.buf.drain(..f.len).collect();
                if f.opaque == opaque {
                    return Ok((f, frame));
                }
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    pub fn register(&mut self, b: &BrokerIdent, body: Bytes) -> io::Result<FrameInfo> {
        let o = self.next_opaque();
        self.call(&register_request(b, body, o, SerializeType::Json))
    }

    /// A registration encoded now, to send later with `call_prepared`.
    pub fn prepare_register(&mut self, b: &BrokerIdent, body: Bytes) -> Prepared {
        let o = self.next_opaque();
        prepare(register_request(b, body, o, SerializeType::Json))
    }

    pub fn route(&mut self, topic: &str) -> io::Result<FrameInfo> {
        let o = self.next_opaque();
        self.call(&route_request(topic, o, SerializeType::Json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepared_request_is_the_encoded_frame() {
        let b = BrokerIdent { cluster: "c".into(), name: "b".into(), addr: "127.0.0.1:10911".into() };
        let body = Bytes::from_static(b"{\"topicConfigSerializeWrapper\":{}}");
        let mut whole = Vec::new();
        encode_into(&register_request(&b, body.clone(), 7, SerializeType::Json), &mut whole);
        let p = prepare(register_request(&b, body, 7, SerializeType::Json));
        assert_eq!([&p.head[..], &p.body[..]].concat(), whole);
        assert_eq!(p.opaque, 7);
    }

    #[test]
    fn peeks_both_header_types() {
        for st in [SerializeType::Json, SerializeType::RocketMq] {
            let mut out = Vec::new();
            let cmd = route_request("T", -77, st);
            encode_into(&cmd, &mut out);
            let f = peek_frame(&out).unwrap().unwrap();
            assert_eq!((f.code, f.opaque, f.len), (105, -77, out.len()));
            assert_eq!(peek_frame(&out[..out.len() - 1]).unwrap(), None);
        }
    }
}
