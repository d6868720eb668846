//! A small blocking remoting client: one `TcpStream` per server, JSON headers, request version 513, responses matched
//! by opaque. Every wait is bounded by the `--timeout`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;

use crate::protocol::{frame, RemotingCommand, DEFAULT_MAX_FRAME};

use super::CliError;

pub(super) struct Client {
    stream: TcpStream,
    /// The address as the user wrote it, for messages.
    addr: String,
    timeout: Duration,
    buf: BytesMut,
    next_opaque: i32,
    /// Sign every request as this account (`AccessKey`, `Signature`), as Java's `AclClientRPCHook` does.
    sign: Option<(String, crate::acl::signature::Key)>,
}

impl Client {
    /// Resolves `addr` (`host:port`) and connects to the first address that accepts within `timeout`.
    pub(super) fn connect(addr: &str, timeout: Duration) -> Result<Client, CliError> {
        let unreachable = |reason: String| CliError::Unreachable { addr: addr.to_string(), reason };
        let candidates: Vec<SocketAddr> =
            addr.to_socket_addrs().map_err(|e| unreachable(format!("cannot resolve the address: {e}")))?.collect();
        let mut last = String::from("the address resolves to nothing");
        for sa in candidates {
            match TcpStream::connect_timeout(&sa, timeout) {
                Ok(stream) => {
                    // Latency only; a failure here changes nothing that matters.
                    let _ = stream.set_nodelay(true);
                    stream.set_write_timeout(Some(timeout)).map_err(|e| unreachable(e.to_string()))?;
                    return Ok(Client {
                        stream,
                        addr: addr.to_string(),
                        timeout,
                        buf: BytesMut::with_capacity(64 * 1024),
                        next_opaque: 1,
                        sign: None,
                    });
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(unreachable(last))
    }

    /// Signs every request with `credentials` from now on.
    pub(super) fn signing(mut self, credentials: Option<(String, crate::acl::signature::Key)>) -> Client {
        self.sign = credentials;
        self
    }

    pub(super) fn addr(&self) -> &str {
        &self.addr
    }

    /// A request with a fresh opaque (JSON header, language JAVA, version 513).
    pub(super) fn cmd(&mut self, code: i32) -> RemotingCommand {
        let opaque = self.next_opaque;
        self.next_opaque += 1;
        RemotingCommand::request(code, opaque)
    }

    /// Sends `cmd` and waits for the response with its opaque; other frames are skipped.
    pub(super) fn request(&mut self, mut cmd: RemotingCommand) -> Result<RemotingCommand, CliError> {
        if let Some((ak, key)) = &self.sign {
            use crate::acl::signature::{ACCESS_KEY, SIGNATURE};
            cmd = cmd.with_ext(ACCESS_KEY, ak.as_str());
            let sig = key.sign(cmd.ext_fields.as_ref().expect("has AccessKey"), &cmd.body);
            cmd = cmd.with_ext(SIGNATURE, sig);
        }
        let mut out = BytesMut::new();
        frame::encode(&cmd, &mut out);
        self.stream.write_all(&out).map_err(|e| self.io_error(format!("cannot send the request: {e}")))?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let got = self.read_frame(deadline)?;
            if got.is_response() && got.opaque == cmd.opaque {
                return Ok(got);
            }
        }
    }

    fn io_error(&self, reason: String) -> CliError {
        CliError::Io { addr: self.addr.clone(), reason }
    }

    fn read_frame(&mut self, deadline: Instant) -> Result<RemotingCommand, CliError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match frame::decode(&mut self.buf, DEFAULT_MAX_FRAME) {
                Ok(Some(cmd)) => return Ok(cmd),
                Ok(None) => {}
                Err(e) => return Err(self.io_error(format!("undecodable response: {e}"))),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out());
            }
            self.stream.set_read_timeout(Some(left)).map_err(|e| self.io_error(e.to_string()))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(self.io_error("connection closed by the server".into())),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(self.timed_out())
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(format!("cannot read the response: {e}"))),
            }
        }
    }

    fn timed_out(&self) -> CliError {
        self.io_error(format!("no response within {} ms", self.timeout.as_millis()))
    }
}
