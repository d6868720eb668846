//! A blocking remoting client over one TCP connection, built on the crate's own frame codec. Responses are matched
//! by opaque; frames that match nothing are kept in `strays` so a test can assert that one-way requests got no
//! answer.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use namesrv::protocol::{frame, RemotingCommand, DEFAULT_MAX_FRAME};
use namesrv::test_support::protocol::command::FLAG_ONEWAY;

/// Default time to wait for a response.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Client {
    stream: TcpStream,
    addr: SocketAddr,
    buf: BytesMut,
    next_opaque: i32,
    /// Frames received that answered no pending request, in arrival order.
    pub strays: Vec<RemotingCommand>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_nodelay(true).expect("TCP_NODELAY");
        Client { stream, addr, buf: BytesMut::with_capacity(64 * 1024), next_opaque: 1, strays: Vec::new() }
    }

    /// Wraps a connection accepted from the server (the server connecting out, e.g. for 905).
    pub fn from_stream(stream: TcpStream) -> Client {
        let addr = stream.peer_addr().expect("peer address");
        Client { stream, addr, buf: BytesMut::with_capacity(64 * 1024), next_opaque: 1, strays: Vec::new() }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A fresh opaque for this connection.
    pub fn opaque(&mut self) -> i32 {
        let o = self.next_opaque;
        self.next_opaque += 1;
        o
    }

    /// A JSON-header request (Java client defaults: language JAVA, version 513) with a fresh opaque.
    pub fn cmd(&mut self, code: i32) -> RemotingCommand {
        let opaque = self.opaque();
        RemotingCommand::request(code, opaque)
    }

    /// Sends `cmd` and waits for the response with the same opaque. Panics on timeout or a closed connection.
    pub fn request(&mut self, cmd: RemotingCommand) -> RemotingCommand {
        self.try_request(cmd, REPLY_TIMEOUT).unwrap_or_else(|e| panic!("request to {}: {e}", self.addr))
    }

    /// Like `request`, with a timeout and the error returned.
    pub fn try_request(&mut self, cmd: RemotingCommand, timeout: Duration) -> Result<RemotingCommand, String> {
        self.send(&cmd)?;
        self.await_reply(cmd.opaque, Instant::now() + timeout)
    }

    /// Sends an already encoded request frame (e.g. one recorded from a real peer, byte for byte) and waits for the
    /// response with `opaque`. Panics on timeout or a closed connection.
    pub fn request_frame(&mut self, frame: &[u8], opaque: i32) -> RemotingCommand {
        self.send_raw(frame);
        self.await_reply(opaque, Instant::now() + REPLY_TIMEOUT)
            .unwrap_or_else(|e| panic!("request to {}: {e}", self.addr))
    }

    /// Reads frames until the response with `opaque`; anything else is kept in `strays`.
    fn await_reply(&mut self, opaque: i32, deadline: Instant) -> Result<RemotingCommand, String> {
        loop {
            let got = self.read_frame(deadline)?;
            if got.is_response() && got.opaque == opaque {
                return Ok(got);
            }
            self.strays.push(got);
        }
    }

    /// Sends `cmd` as a one-way request (flag bit 1 set); nothing is read.
    pub fn oneway(&mut self, mut cmd: RemotingCommand) {
        cmd.flag |= FLAG_ONEWAY;
        self.send(&cmd).unwrap_or_else(|e| panic!("oneway to {}: {e}", self.addr));
    }

    /// Writes raw bytes (malformed frames, split frames).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap_or_else(|e| panic!("write to {}: {e}", self.addr));
    }

    /// Reads the next frame, whatever it is.
    pub fn recv(&mut self, timeout: Duration) -> Result<RemotingCommand, String> {
        self.read_frame(Instant::now() + timeout)
    }

    /// Asserts that the peer closes the connection within `within` without sending anything.
    /// Note: the Java 5.x server only looks at a new connection once 12 bytes have arrived (its HAProxy detector),
    /// so a malformed first frame shorter than that is not rejected until more bytes follow.
    pub fn expect_closed(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        let mut chunk = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                panic!("{} did not close the connection within {within:?}", self.addr);
            }
            self.stream.set_read_timeout(Some(left)).expect("timeout");
            match self.stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => panic!("{} sent {n} bytes instead of closing: {:02x?}", self.addr, &chunk[..n.min(64)]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("read from {}: {e}", self.addr),
            }
        }
    }

    /// Asserts that nothing arrives for `quiet` (the connection may stay open).
    pub fn expect_silence(&mut self, quiet: Duration) {
        match self.read_frame(Instant::now() + quiet) {
            Err(e) if e.contains("timed out") => {}
            Err(e) => panic!("expected silence from {}, got error: {e}", self.addr),
            Ok(cmd) => panic!("expected silence from {}, got {cmd:?}", self.addr),
        }
    }

    fn send(&mut self, cmd: &RemotingCommand) -> Result<(), String> {
        let mut out = BytesMut::new();
        frame::encode(cmd, &mut out);
        self.stream.write_all(&out).map_err(|e| format!("write: {e}"))
    }

    fn read_frame(&mut self, deadline: Instant) -> Result<RemotingCommand, String> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match frame::decode(&mut self.buf, DEFAULT_MAX_FRAME) {
                Ok(Some(cmd)) => return Ok(cmd),
                Ok(None) => {}
                Err(e) => return Err(format!("undecodable frame: {e}")),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("timed out waiting for a frame".into());
            }
            self.stream.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("connection closed by peer".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err("timed out waiting for a frame".into())
                }
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}
