//! Accepting connections on the listening socket all reactors share and dealing them round-robin, and adopting one
//! dealt to this reactor. One shared socket rather than one per reactor (SO_REUSEPORT): a second server started on
//! the same port then fails with "address in use", as Java's does, instead of silently taking part of the
//! connections (decision 0001).

use std::io;
use std::sync::atomic::Ordering;

use mio::{Interest, Token};
use tracing::{debug, warn};

use super::conn::Conn;
use super::{transport, Reactor};
use crate::write_command::Completion;

impl Reactor {
    /// Accepts until WouldBlock; a connection over `maxConnections` is closed at once.
    pub(super) fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    let open = self.shared.open_connections.fetch_add(1, Ordering::AcqRel);
                    if self.shared.settings.max_connections > 0 && open >= self.shared.settings.max_connections {
                        // Accept and close at once (dropping the stream): better than leaving it in the backlog.
                        self.shared.open_connections.fetch_sub(1, Ordering::AcqRel);
                        self.refuse_connection(peer);
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    let n = self.shared.peers.len().max(1);
                    let target = self.shared.next_reactor.fetch_add(1, Ordering::Relaxed) % n;
                    if target != self.id as usize {
                        let link = &self.shared.peers[target];
                        if link.inbox.send(Completion::Adopt { stream, peer }).is_ok() {
                            let _ = link.waker.wake();
                        } else {
                            self.shared.open_connections.fetch_sub(1, Ordering::AcqRel);
                        }
                        continue;
                    }
                    self.adopt(stream, peer);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: log and retry on the next readiness event rather than spin.
                    warn!(reactor = self.id, error = %e, "accept failed");
                    return;
                }
            }
        }
    }

    /// Takes ownership of an accepted connection (already counted in `open_connections`); returns its key.
    pub(super) fn adopt(&mut self, mut stream: mio::net::TcpStream, peer: std::net::SocketAddr) -> Option<usize> {
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        if let Err(e) = self.poll.registry().register(&mut stream, Token(key), Interest::READABLE) {
            warn!(reactor = self.id, %peer, error = %e, "cannot register connection");
            self.shared.open_connections.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let mut conn = Conn::new(stream, peer, self.next_gen, self.now_ms);
        conn.transport = transport::Transport::Sniff(self.shared.tls.clone());
        entry.insert(conn);
        self.metrics.connections_open.fetch_add(1, Ordering::Relaxed);
        self.metrics.connections_accepted.fetch_add(1, Ordering::Relaxed);
        debug!(reactor = self.id, %peer, key, "connection accepted");
        Some(key)
    }
}
