//! The no-work ceiling: a trivial mio server that answers every frame with a canned SUCCESS carrying a real route
//! body of the same size our server sends (built once with the crate's own route encoder). It reads only the length
//! prefix and the opaque, so the comparison shows what the sockets and the generator cost with no name-server work.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use namesrv::protocol::body::encode_topic_route;
use namesrv::protocol::json::Dialect;
use namesrv::state::RouteTables;

use crate::topology;
use crate::wire::peek_frame;

const LISTENER: Token = Token(usize::MAX);

/// The body of a route with `brokers` master groups, as our server encodes it for a 5.x client.
pub fn canned_route_body(brokers: usize) -> Vec<u8> {
    let mut tables = RouteTables::new();
    let topics = topology::topic_names("ceiling", 2);
    for b in topology::brokers(1, brokers.max(1)) {
        let req = topology::register_broker_op(&b, &topics);
        tables.register_broker(req, 0, Default::default()).expect("registered");
    }
    let route = tables.view().route(&topics[0], false).expect("route");
    let mut out = Vec::new();
    encode_topic_route(&route, Dialect::Standard, &mut out);
    out
}

/// Runs until killed: `threads` event loops sharing one listening socket.
pub fn serve(port: u16, threads: usize, body: Vec<u8>) -> io::Result<()> {
    let std_listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    std_listener.set_nonblocking(true)?;
    let body: Arc<[u8]> = body.into();
    let mut handles = Vec::new();
    for t in 0..threads.max(1) {
        let l = std_listener.try_clone()?;
        let body = body.clone();
        handles.push(std::thread::Builder::new().name(format!("ceiling-{t}")).spawn(move || event_loop(l, &body))?);
    }
    for h in handles {
        h.join().map_err(|_| io::Error::other("ceiling thread panicked"))??;
    }
    Ok(())
}

struct Conn {
    stream: TcpStream,
    inb: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    writable: bool,
}

fn event_loop(listener: std::net::TcpListener, body: &[u8]) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::from_std(listener);
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: HashMap<usize, Conn> = HashMap::new();
    let mut next = 0usize;
    let mut events = Events::with_capacity(1024);
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        poll.poll(&mut events, None)?;
        for ev in events.iter() {
            if ev.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            stream.set_nodelay(true)?;
                            next += 1;
                            poll.registry().register(&mut stream, Token(next), Interest::READABLE)?;
                            let c = Conn { stream, inb: Vec::new(), out: Vec::new(), out_pos: 0, writable: false };
                            conns.insert(next, c);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                }
                continue;
            }
            let id = ev.token().0;
            let Some(c) = conns.get_mut(&id) else { continue };
            if serve_conn(c, &poll, ev.token(), &mut chunk, body).is_err() {
                if let Some(mut c) = conns.remove(&id) {
                    let _ = poll.registry().deregister(&mut c.stream);
                }
            }
        }
    }
}

fn serve_conn(c: &mut Conn, poll: &Poll, token: Token, chunk: &mut [u8], body: &[u8]) -> io::Result<()> {
    loop {
        match c.stream.read(chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => c.inb.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let mut at = 0;
    while let Some(f) = peek_frame(&c.inb[at..]).map_err(io::Error::other)? {
        at += f.len;
        reply(f.opaque, body, &mut c.out);
    }
    c.inb.drain(..at);
    while c.out_pos < c.out.len() {
        match c.stream.write(&c.out[c.out_pos..]) {
            Ok(n) => c.out_pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    if c.out_pos == c.out.len() {
        c.out.clear();
        c.out_pos = 0;
    }
    let want = !c.out.is_empty();
    if want != c.writable {
        let i = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        poll.registry().reregister(&mut c.stream, token, i)?;
        c.writable = want;
    }
    Ok(())
}

/// A JSON-header SUCCESS response echoing `opaque`, with the canned body.
fn reply(opaque: i32, body: &[u8], out: &mut Vec<u8>) {
    let header = format!(
        "{{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":{opaque},\"serializeTypeCurrentRPC\":\"JSON\",\"version\":513}}"
    );
    let length = (4 + header.len() + body.len()) as u32;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
}
