//! Large registrations off the reactor: handing them to the decoder thread (`defer`), holding one the decoder has no
//! room for on its connection until it fits (`park`, `retry_parked`), and reading a big frame only once it has room
//! (`retry_held`). Held, not refused: a broker answered SYSTEM_BUSY is missing from the routes until its next round,
//! while Java's name server queues every request (decision 0016). Read only with room: otherwise every body in
//! flight sits in memory at once, and TCP can hold the sender back instead (decision 0027).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::handlers;
use crate::protocol::frame;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::state::ConnId;

use super::conn::Parked;
use super::Reactor;

/// How often parked registrations are tried again, and how long one may wait (`Reactor::retry_parked`).
pub(super) const PARK_RETRY: Duration = Duration::from_millis(2);
/// Under the 24 s a 5.x broker waits for its reply (`registerBrokerTimeoutMills`). A 4.9.x broker gives up after
/// 6 s, but its registration is still applied when its turn comes, as in Java's executor queue.
pub(super) const PARK_LIMIT: Duration = Duration::from_secs(20);

impl Reactor {
    /// Large, answered registrations: decoding them here would hold up every request behind them on this reactor.
    pub(super) fn should_defer(&self, cmd: &RemotingCommand) -> bool {
        cmd.code == RequestCode::REGISTER_BROKER
            && !cmd.is_oneway()
            && self.shared.settings.defer_bytes > 0
            && cmd.body.len() >= self.shared.settings.defer_bytes
    }

    /// Hands `cmd` to the decoder thread and pauses the connection until its reply; `Err` = the decoder's queue is
    /// full (its job count or `decoderQueueBytes`). `admitted`: the bytes its frame took while it was read (decision
    /// 0027), of which the body's share goes with it; 0 if none were taken.
    pub(super) fn defer(
        &mut self,
        key: usize,
        id: ConnId,
        peer: std::net::SocketAddr,
        cmd: &RemotingCommand,
        received: std::time::Instant,
        admitted: usize,
    ) -> Result<(), ()> {
        // Taken while the frame was read: the decoder gives back the body's share when done.
        if admitted > 0 {
            self.shared.decoder_bytes.release(admitted - cmd.body.len().min(admitted));
        } else if !self.shared.decoder_bytes.try_take(cmd.body.len()) {
            return Err(());
        }
        let job = crate::decoder::Job { conn: id, peer, request: cmd.clone(), received };
        match self.shared.decoder.try_send(job) {
            Ok(()) => {
                if let Some(conn) = self.conns.get_mut(key) {
                    conn.deferred = true;
                }
                self.in_flight += 1;
                Ok(())
            }
            Err(_) => {
                self.shared.decoder_bytes.release(cmd.body.len());
                Err(())
            }
        }
    }

    /// Holds a registration the decoder has no room for on its connection, which is not read meanwhile: when a
    /// cluster's brokers all register at once (after a restart, 300 bodies of 1.5 MB are 450 MB), they wait their
    /// turn behind TCP instead of being refused after their body was read, and missing a 30 s round.
    pub(super) fn park(&mut self, key: usize, cmd: RemotingCommand, received: std::time::Instant) {
        if let Some(conn) = self.conns.get_mut(key) {
            self.parked.push((key, conn.gen));
            conn.parked = Some(Parked { cmd, received });
        }
    }

    /// Tries the parked registrations again; one parked for `PARK_LIMIT` gets SYSTEM_BUSY, the answer it used to get
    /// at once.
    pub(super) fn retry_parked(&mut self) {
        for (key, gen) in std::mem::take(&mut self.parked) {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.gen == gen) else {
                continue; // closed meanwhile: its registration goes with it
            };
            let Some(p) = conn.parked.take() else {
                continue;
            };
            let peer = conn.peer;
            let id = self.conn_id(key, gen);
            if self.defer(key, id, peer, &p.cmd, p.received, 0).is_ok() {
                continue; // the reply resumes reading (`drain_inbox`)
            }
            if p.received.elapsed() < PARK_LIMIT {
                self.park(key, p.cmd, p.received);
                continue;
            }
            self.metrics.busy_rejections.fetch_add(1, Ordering::Relaxed);
            self.metrics.request(p.cmd.code, ResponseCode::SYSTEM_BUSY, p.received.elapsed());
            if let Some(conn) = self.conns.get_mut(key) {
                frame::encode(&handlers::system_busy(&p.cmd), &mut conn.output);
            }
            self.again.push(key);
            self.flush(key);
        }
    }

    /// Reads on the connections held for room on the decoder's queue, first held first, until one still finds none:
    /// the rest would not either, and with hundreds of brokers held after a restart, trying each on every loop turn
    /// costs more than the reading.
    pub(super) fn retry_held(&mut self) {
        let mut held = std::mem::take(&mut self.held).into_iter();
        while let Some((key, gen)) = held.next() {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.gen == gen) else {
                continue;
            };
            conn.held = false;
            self.on_readable(key, false);
            if self.conns.get(key).is_some_and(|c| c.held) {
                self.held.extend(held);
                return;
            }
        }
    }
}
