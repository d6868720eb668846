//! A recording TCP proxy for the differential replay: peers are pointed at it instead of at our server; it forwards
//! every byte both ways unchanged and records, per client connection and in one global order, each request frame
//! (byte for byte), each reply frame, and the connection's close. When a client closes, the upstream connection is
//! closed too, so a killed broker is still evicted by close; when the server closes, so is the client's.
//!
//! The recording can be saved to and loaded from a file (`Recording::save`/`load`), so a failing replay can be
//! repeated without the peers.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::{frame, RemotingCommand, DEFAULT_MAX_FRAME};

/// One recorded thing. `conn` numbers client connections in accept order, from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request frame from a client (length prefix included), as it arrived.
    Request { conn: u32, frame: Vec<u8> },
    /// A response frame from the server.
    Reply { conn: u32, frame: Vec<u8> },
    /// The connection ended (either side closed it).
    Closed { conn: u32 },
}

/// Decodes one whole frame (length prefix included).
pub fn decode_frame(bytes: &[u8]) -> Result<RemotingCommand, String> {
    let mut buf = BytesMut::from(bytes);
    match frame::decode(&mut buf, DEFAULT_MAX_FRAME) {
        Ok(Some(cmd)) if buf.is_empty() => Ok(cmd),
        Ok(Some(_)) => Err("trailing bytes after the frame".into()),
        Ok(None) => Err("incomplete frame".into()),
        Err(e) => Err(format!("undecodable frame: {e}")),
    }
}

/// What a proxy recorded, in the order it saw it.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub events: Vec<Event>,
}

impl Recording {
    /// The decoded requests, in order, with their connection.
    pub fn requests(&self) -> Vec<(u32, RemotingCommand)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Request { conn, frame } => Some((*conn, decode_frame(frame).expect("recorded request"))),
                _ => None,
            })
            .collect()
    }

    /// Writes the events as `tag conn len bytes` records (tag `Q` request, `R` reply, `C` close; big-endian u32s).
    pub fn save(&self, path: &Path) {
        let mut out = Vec::new();
        for e in &self.events {
            let (tag, conn, bytes): (u8, u32, &[u8]) = match e {
                Event::Request { conn, frame } => (b'Q', *conn, frame),
                Event::Reply { conn, frame } => (b'R', *conn, frame),
                Event::Closed { conn } => (b'C', *conn, &[]),
            };
            out.push(tag);
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        std::fs::write(path, out).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Reads what `save` wrote.
    pub fn load(path: &Path) -> Recording {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let mut events = Vec::new();
        let mut rest = &data[..];
        while !rest.is_empty() {
            assert!(rest.len() >= 9, "truncated recording {}", path.display());
            let conn = u32::from_be_bytes(rest[1..5].try_into().unwrap());
            let len = u32::from_be_bytes(rest[5..9].try_into().unwrap()) as usize;
            assert!(rest.len() >= 9 + len, "truncated recording {}", path.display());
            let frame = rest[9..9 + len].to_vec();
            events.push(match rest[0] {
                b'Q' => Event::Request { conn, frame },
                b'R' => Event::Reply { conn, frame },
                b'C' => Event::Closed { conn },
                t => panic!("bad tag {t} in recording {}", path.display()),
            });
            rest = &rest[9 + len..];
        }
        Recording { events }
    }
}

type Shared = Arc<Mutex<Vec<Event>>>;

/// A running recording proxy on 127.0.0.1.
pub struct Recorder {
    addr: SocketAddr,
    events: Shared,
    stop: Arc<AtomicBool>,
    /// Both sockets of every connection (to close them on stop) and the pump threads.
    live: Arc<Mutex<Vec<(TcpStream, TcpStream)>>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Recorder {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind recorder");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let addr = listener.local_addr().expect("recorder address");
        let events: Shared = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<(TcpStream, TcpStream)>>> = Arc::default();
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let acceptor = {
            let (events, stop, live, threads) = (events.clone(), stop.clone(), live.clone(), threads.clone());
            std::thread::spawn(move || {
                let next = AtomicU32::new(1);
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let conn = next.fetch_add(1, Ordering::SeqCst);
                            if let Some(pair) = Self::connect(conn, client, upstream, &events, &threads) {
                                live.lock().unwrap().push(pair);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        Err(e) => panic!("recorder accept: {e}"),
                    }
                }
            })
        };
        Recorder { addr, events, stop, live, threads, acceptor: Some(acceptor) }
    }

    /// Opens the upstream connection for client connection `conn` and starts one pump per direction.
    fn connect(
        conn: u32,
        client: TcpStream,
        upstream: SocketAddr,
        events: &Shared,
        threads: &Arc<Mutex<Vec<JoinHandle<()>>>>,
    ) -> Option<(TcpStream, TcpStream)> {
        client.set_nonblocking(false).ok()?;
        let _ = client.set_nodelay(true);
        let server = match TcpStream::connect_timeout(&upstream, Duration::from_secs(5)) {
            Ok(s) => s,
            Err(_) => {
                // Nothing to forward to: the client sees a closed connection, as it would without the proxy.
                let _ = client.shutdown(Shutdown::Both);
                return None;
            }
        };
        let _ = server.set_nodelay(true);
        let pair = (client.try_clone().ok()?, server.try_clone().ok()?);
        let up = {
            let (from, to, events) = (client.try_clone().ok()?, server.try_clone().ok()?, events.clone());
            std::thread::spawn(move || pump(conn, from, to, &events, true))
        };
        let down = {
            let (from, to, events) = (server, client, events.clone());
            std::thread::spawn(move || pump(conn, from, to, &events, false))
        };
        threads.lock().unwrap().extend([up, down]);
        Some(pair)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn addr_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops accepting, closes every connection still open (recorded as closed) and returns the recording.
    pub fn stop(mut self) -> Recording {
        self.shutdown();
        Recording { events: std::mem::take(&mut *self.events.lock().unwrap()) }
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        for (client, server) in self.live.lock().unwrap().drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
        let threads: Vec<_> = self.threads.lock().unwrap().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Copies `from` to `to` until either side ends, recording whole frames: requests on the client-to-server
/// direction (`upward`), responses on the other. Frames going the other way (a server's own requests, a client's
/// answers to them) are forwarded but not recorded. At the end both sockets are shut down so the other pump ends
/// too; the upward pump records the close (before closing upstream, so it is ordered before anything it causes).
fn pump(conn: u32, mut from: TcpStream, mut to: TcpStream, events: &Shared, upward: bool) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        // Record complete frames before forwarding them, so a request is in the log before the server can act on it.
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let bytes: Vec<u8> = buf.drain(..4 + len).collect();
            let response = decode_frame(&bytes).map(|c| c.is_response()).unwrap_or(!upward);
            let event = match (upward, response) {
                (true, false) => Some(Event::Request { conn, frame: bytes }),
                (false, true) => Some(Event::Reply { conn, frame: bytes }),
                _ => None,
            };
            if let Some(e) = event {
                events.lock().unwrap().push(e);
            }
        }
        if to.write_all(&chunk[..n]).is_err() {
            break;
        }
    }
    if upward {
        events.lock().unwrap().push(Event::Closed { conn });
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}
