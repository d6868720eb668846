//! Outbound one-way requests to brokers: NOTIFY_MIN_BROKER_ID_CHANGE (905). The writer hands a notice to a reactor;
//! the reactor connects without blocking (or reuses its connection to that broker), writes the frame once the
//! connection is up, and drops it if that has not happened within 300 ms, like Java's one-way timeout.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mio::{Interest, Token};
use tracing::debug;

use super::conn::{Conn, Outbound};
use super::Reactor;
use crate::protocol::command::FLAG_ONEWAY;
use crate::protocol::{frame, RemotingCommand, RequestCode};
use crate::state::routes::MinBrokerIdNotice;

/// Java's `timeoutMillis` for the notification.
pub(crate) const NOTIFY_TIMEOUT: Duration = Duration::from_millis(300);

/// The one-way request Java's `RouteInfoManager.notifyMinBrokerIdChanged` sends.
pub(crate) fn notify_command(n: &MinBrokerIdNotice, opaque: i32) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE, opaque)
        .with_ext("minBrokerId", n.min_broker_id.to_string())
        .with_ext("minBrokerAddr", n.min_broker_addr.clone());
    if let Some(offline) = &n.offline_broker_addr {
        cmd = cmd.with_ext("offlineBrokerAddr", offline.clone());
    }
    if let Some(ha) = &n.ha_broker_addr {
        cmd = cmd.with_ext("haBrokerAddr", ha.clone());
    }
    cmd.flag |= FLAG_ONEWAY;
    cmd
}

impl Reactor {
    /// Queues a 905 for its target, connecting first if needed. Never blocks.
    pub(super) fn notify(&mut self, notice: &MinBrokerIdNotice) {
        let Ok(addr) = notice.target.parse::<SocketAddr>() else {
            // Resolving a host name would block the reactor; brokers register IP addresses.
            debug!(target_addr = %notice.target, "905 dropped: broker address is not ip:port");
            return;
        };
        self.next_opaque = self.next_opaque.wrapping_add(1);
        let mut bytes = BytesMut::new();
        frame::encode(&notify_command(notice, self.next_opaque), &mut bytes);
        let deadline = Some(Instant::now() + NOTIFY_TIMEOUT);
        if let Some(&key) = self.outbound.get(&addr) {
            if let Some(conn) = self.conns.get_mut(key) {
                conn.output.extend_from_slice(&bytes);
                let connected = conn.outbound.is_some_and(|o| o.connected);
                if let Some(o) = conn.outbound.as_mut() {
                    o.deadline = deadline;
                }
                self.metrics.notifications_sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if connected {
                    self.flush(key);
                }
                return;
            }
        }
        let mut stream = match mio::net::TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => {
                debug!(%addr, error = %e, "905 dropped: cannot connect");
                return;
            }
        };
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        if self.poll.registry().register(&mut stream, Token(key), Interest::READABLE | Interest::WRITABLE).is_err() {
            return;
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let mut conn = Conn::new(stream, addr, self.next_gen, self.shared.clock.now_ms());
        conn.output = bytes;
        conn.want_write = true;
        conn.outbound = Some(Outbound { connected: false, deadline });
        entry.insert(conn);
        self.outbound.insert(addr, key);
        self.metrics.notifications_sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A WRITABLE event on an outbound connection still connecting: did the handshake succeed?
    /// Returns false when the connection failed (and was closed).
    pub(super) fn finish_connect(&mut self, key: usize) -> bool {
        let Some(conn) = self.conns.get_mut(key) else { return false };
        let Some(out) = conn.outbound.as_mut() else { return true };
        if out.connected {
            return true;
        }
        match (conn.stream.take_error(), conn.stream.peer_addr()) {
            (Ok(None), Ok(_)) => {
                out.connected = true;
                true
            }
            _ => {
                self.close(key, "outbound connect failed");
                false
            }
        }
    }

    /// Drops notifications past their deadline; closes connections that never came up.
    pub(super) fn expire_outbound(&mut self) {
        if self.outbound.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut failed = Vec::new();
        for (&addr, &key) in &self.outbound {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            let Some(out) = conn.outbound.as_mut() else { continue };
            if out.deadline.is_some_and(|d| d <= now) && !conn.output.is_empty() {
                debug!(%addr, "905 dropped: not sent within 300 ms");
                conn.output.clear();
                out.deadline = None;
                if !out.connected {
                    failed.push(key);
                }
            }
        }
        for key in failed {
            self.close(key, "outbound connect timed out");
        }
    }
}
