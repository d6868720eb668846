//! The one blocking RocketMQ remoting client: a `TcpStream` to one server, requests framed with JSON headers,
//! answers matched by opaque (other frames skipped), requests signed as an account when asked (`AccessKey`,
//! `Signature`, as Java's `AclClientRPCHook` does), and every wait bounded: the connect, each send, each answer.
//!
//! Used where a thread may wait for its answer: `cli` (`mqnamesrv admin`), `auth_sync` (a broker's users) and
//! `fleet` (a peer's facts). The error says what failed, not to whom: each caller names the server its own way.
//!
//! Must never: wait without a bound, or buffer an answer past its `max_frame`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;

use crate::acl::signature;
use crate::protocol::{frame, FrameError, RemotingCommand, DEFAULT_MAX_FRAME};

/// Why an exchange with a server failed. Public, as the errors of `auth_sync` and `fleet` that carry it are.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot resolve the address: {0}")]
    Resolve(std::io::Error),
    #[error("the address resolves to nothing")]
    NoAddress,
    /// No address accepted the connection in time (the last one's error).
    #[error("{0}")]
    Connect(std::io::Error),
    #[error("cannot send: {0}")]
    Send(std::io::Error),
    #[error("undecodable answer: {0}")]
    Frame(#[from] FrameError),
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("connection closed")]
    Closed,
    #[error("cannot read: {0}")]
    Read(std::io::Error),
}

impl RemoteError {
    /// The server was never reached: nothing was sent.
    pub(crate) fn is_unreachable(&self) -> bool {
        matches!(self, RemoteError::Resolve(_) | RemoteError::NoAddress | RemoteError::Connect(_))
    }
}

/// One connection to one server.
pub(crate) struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
    answer_timeout: Duration,
    max_frame: usize,
    sign: Option<(String, signature::Key)>,
    /// Requests sent, bytes sent and bytes read on this connection.
    pub(crate) requests: u32,
    pub(crate) sent: usize,
    pub(crate) read: usize,
}

impl Conn {
    /// Resolves `addr` (`host:port`) and connects to the first of its addresses that accepts within
    /// `connect_timeout`; a send or an answer then waits at most `answer_timeout`.
    pub(crate) fn connect(
        addr: &str,
        connect_timeout: Duration,
        answer_timeout: Duration,
    ) -> Result<Conn, RemoteError> {
        let candidates: Vec<SocketAddr> = addr.to_socket_addrs().map_err(RemoteError::Resolve)?.collect();
        let mut last = RemoteError::NoAddress;
        for sa in candidates {
            match TcpStream::connect_timeout(&sa, connect_timeout) {
                Ok(stream) => {
                    // Latency only; a failure here changes nothing that matters.
                    let _ = stream.set_nodelay(true);
                    stream.set_write_timeout(Some(answer_timeout)).map_err(RemoteError::Connect)?;
                    return Ok(Conn {
                        stream,
                        buf: BytesMut::new(),
                        next_opaque: 1,
                        answer_timeout,
                        max_frame: DEFAULT_MAX_FRAME,
                        sign: None,
                        requests: 0,
                        sent: 0,
                        read: 0,
                    });
                }
                Err(e) => last = RemoteError::Connect(e),
            }
        }
        Err(last)
    }

    /// Refuses, unread, an answer longer than `max` bytes (`DEFAULT_MAX_FRAME` otherwise).
    pub(crate) fn max_frame(mut self, max: usize) -> Conn {
        self.max_frame = max;
        self
    }

    /// Signs every request as `account` (access key, secret) from now on.
    pub(crate) fn signing(mut self, account: Option<(String, signature::Key)>) -> Conn {
        self.sign = account;
        self
    }

    /// A request with a fresh opaque (JSON header, language JAVA, version 513).
    pub(crate) fn request(&mut self, code: i32) -> RemotingCommand {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        RemotingCommand::request(code, opaque)
    }

    /// Sends `cmd` (signed when signing) and waits for the response with its opaque, whatever its code.
    pub(crate) fn ask(&mut self, mut cmd: RemotingCommand) -> Result<RemotingCommand, RemoteError> {
        if let Some((ak, key)) = &self.sign {
            cmd = cmd.with_ext(signature::ACCESS_KEY, ak.as_str());
            let sig = cmd.ext_fields.as_ref().map(|ext| key.sign(ext, &cmd.body)).unwrap_or_default();
            cmd = cmd.with_ext(signature::SIGNATURE, sig);
        }
        let mut out = BytesMut::new();
        frame::encode(&cmd, &mut out);
        self.stream.write_all(&out).map_err(RemoteError::Send)?;
        self.requests += 1;
        self.sent += out.len();
        let deadline = Instant::now() + self.answer_timeout;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            while let Some(got) = frame::decode(&mut self.buf, self.max_frame)? {
                if got.is_response() && got.opaque == cmd.opaque {
                    return Ok(got);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RemoteError::Timeout(self.answer_timeout));
            }
            self.stream.set_read_timeout(Some(left)).map_err(RemoteError::Read)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(RemoteError::Closed),
                Ok(n) => {
                    self.read += n;
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
                Err(e) => return Err(RemoteError::Read(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that reads one request, writes `reply`, and then closes or (with `hold`) keeps the connection open
    /// until the client closes it.
    fn server(reply: Vec<u8>, hold: bool) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut request = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut request).unwrap();
            s.write_all(&reply).unwrap();
            if hold {
                let _ = s.read_to_end(&mut Vec::new());
            }
        });
        addr
    }

    fn ask(addr: &str, wait: Duration) -> Result<RemotingCommand, RemoteError> {
        let mut conn = Conn::connect(addr, Duration::from_secs(5), wait)?;
        let cmd = conn.request(105);
        conn.ask(cmd)
    }

    #[test]
    fn errors_say_what_failed() {
        let wait = Duration::from_millis(300);
        assert!(matches!(ask(&server(Vec::new(), false), wait), Err(RemoteError::Closed)));
        // A length word too short for the header word.
        let e = ask(&server(vec![0, 0, 0, 2, 0, 0], false), wait).unwrap_err();
        assert!(matches!(e, RemoteError::Frame(FrameError::TooShort(2))), "{e}");
        let e = ask(&server(Vec::new(), true), wait).unwrap_err();
        assert!(matches!(e, RemoteError::Timeout(w) if w == wait), "{e}");
        assert_eq!(e.to_string(), "no answer within 300 ms");
        let refused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let e = ask(&refused, wait).unwrap_err();
        assert!(e.is_unreachable(), "{e:?}");
        assert!(matches!(ask("no-port", wait), Err(e) if e.is_unreachable()));
    }

    /// Frames that are not the answer (another opaque, a request) are skipped; a signed request carries the account.
    #[test]
    fn the_answer_is_the_response_with_the_requests_opaque() {
        let mut reply = BytesMut::new();
        frame::encode(&RemotingCommand::request(10, 1), &mut reply);
        frame::encode(&RemotingCommand::response_to(&RemotingCommand::request(105, 2), 0, None), &mut reply);
        let mine = RemotingCommand::response_to(&RemotingCommand::request(105, 1), 17, Some("mine".into()));
        frame::encode(&mine, &mut reply);
        let addr = server(reply.to_vec(), true);
        let mut conn = Conn::connect(&addr, Duration::from_secs(5), Duration::from_secs(5)).unwrap();
        let cmd = conn.request(105);
        let got = conn.ask(cmd).unwrap();
        assert_eq!((got.code, got.opaque, got.remark.as_deref()), (17, 1, Some("mine")));
        assert_eq!((conn.requests, conn.read), (1, reply.len()));
    }
}
