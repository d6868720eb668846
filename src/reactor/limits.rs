//! The reactor's side of the resource limits, which are there for hostile or broken peers: each default is Java's
//! behaviour or far beyond what a real peer reaches, so a real broker or client is never refused (decision 0006). Here:
//! `maxConnections` at accept, requests refused by a handler for a limit, `maxPendingWriteBytes` (pause, then close
//! after `slowReaderCloseSeconds`) and the idle timeout. Each refusal is counted in `namesrv_limit_hits_total`; a
//! refused request is logged (and audited, for a write) in full the first time a peer is refused for that limit in an
//! interval, and summed up after (`refusals.rs`); a pause once per connection; connections refused at accept at most
//! once per `REFUSAL_LOG_INTERVAL_MS`.

use tracing::warn;

use super::admission::Admission;
use super::conn::Conn;
use super::refusals::{Summary, Verdict};
use super::{Reactor, REFUSAL_LOG_INTERVAL_MS};
use crate::audit::RefusedWrite;
use crate::clip::{clip, REMARK_CHARS};
use crate::limit::Limit;
use crate::protocol::RemotingCommand;

impl Reactor {
    /// Counts a connection closed for `maxConnections`; logs at most one line per `REFUSAL_LOG_INTERVAL_MS`.
    pub(super) fn refuse_connection(&mut self, peer: std::net::SocketAddr) {
        self.refused_since_log += 1;
        let now = self.now_ms;
        let due = match self.last_refusal_log_ms {
            None => true,
            Some(t) => now - t >= REFUSAL_LOG_INTERVAL_MS || now < t,
        };
        if due {
            warn!(
                reactor = self.id,
                %peer,
                refused = self.refused_since_log,
                max_connections = self.shared.settings.max_connections,
                "maxConnections reached: new connections are closed at once (logged at most every 10 s)"
            );
            self.refused_since_log = 0;
            self.last_refusal_log_ms = Some(now);
        }
        self.metrics.limit_hit(Limit::Connections);
    }

    /// A request of `peer` refused for `limit` with `response` (`audit`: its audit line, for a write): counted
    /// every time; logged and audited in full the first time in an interval, summed up after. Here and below the
    /// line is written before the count, so that whoever sees the count (a test, an alert) finds the line too.
    pub(super) fn over_limit(
        &mut self,
        peer: std::net::IpAddr,
        limit: Limit,
        response: &RemotingCommand,
        audit: Option<Box<RefusedWrite>>,
    ) {
        let (verdict, ended) = self.refusals.note(peer, limit, audit.is_some(), self.now_ms);
        if let Some(summary) = ended {
            self.summarise(&summary);
        }
        if verdict == Verdict::Full {
            if let Some(audit) = audit {
                audit.write(response);
            }
            warn!(
                reactor = self.id,
                %peer,
                limit = limit.name(),
                remark = &*clip(response.remark.as_deref().unwrap_or_default(), REMARK_CHARS),
                "request refused (more like it from this peer within 10 s are summed up in one line; all are \
                 counted in namesrv_limit_hits_total)"
            );
        }
        self.metrics.limit_hit(limit);
    }

    /// The line (and, if writes were among them, the audit line) of the refusals counted in an interval.
    fn summarise(&self, s: &Summary) {
        let (limit, more, seconds) = (s.limit.name(), s.more, s.seconds);
        let from = s.peer.map_or_else(|| "other peers".to_string(), |p| p.to_string());
        warn!(reactor = self.id, peer = %from, limit, more, seconds,
            "… and {more} more refusals of {limit} from {from} in the last {seconds}s");
        if s.writes > 0 {
            crate::audit::refusals_summary(s.peer, limit, s.writes, seconds);
        }
    }

    /// `maxPendingWriteBytes`: notes when a peer's unread replies go over the limit (it is not read from while
    /// over: see `on_readable`) and resumes reading once they are back under it.
    pub(super) fn track_pause(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let over = conn.output.len() > self.shared.settings.max_pending_write;
        match (over, conn.paused_since_ms) {
            (true, None) => {
                conn.paused_since_ms = Some(self.now_ms);
                if conn.first_time_over(Limit::PendingWritePaused) {
                    warn!(
                        reactor = self.id,
                        peer = %conn.peer,
                        pending = conn.output.len(),
                        max_pending_write_bytes = self.shared.settings.max_pending_write,
                        "peer does not read its replies: not reading its requests until it does (logged once)"
                    );
                }
                self.metrics.limit_hit(Limit::PendingWritePaused);
            }
            (false, paused) if paused.is_some() || conn.stalled => {
                conn.paused_since_ms = None;
                conn.stalled = false;
                self.again.push(key);
            }
            _ => {}
        }
    }

    /// Once a second: writes the summaries of the refusals of intervals that ended, and in one pass over the
    /// connections closes idle connections (`serverChannelMaxIdleTimeSeconds`: no whole frame read nor reply
    /// written for that long), connections whose frame did not arrive within its deadline (`frameReadTimeoutSeconds`,
    /// `frameMinBytesPerSecond`: the frame's buffer and the room it took go with them), and peers that stayed over
    /// `maxPendingWriteBytes` for `slowReaderCloseSeconds` (decisions 0027, 0032).
    pub(super) fn close_idle(&mut self) {
        let now = self.now_ms;
        if now - self.last_idle_check_ms < 1000 && now >= self.last_idle_check_ms {
            return;
        }
        self.last_idle_check_ms = now;
        let mut ended = Vec::new();
        self.refusals.due(now, &mut ended);
        for summary in &ended {
            self.summarise(summary);
        }
        let (idle_ms, slow_ms) = (self.shared.settings.idle_ms, self.shared.settings.slow_reader_close_ms);
        let (mut idle, mut slow, mut late) = (Vec::new(), Vec::new(), Vec::new());
        for (key, c) in self.conns.iter_mut() {
            if let Some((len, took)) = self.shared.settings.frame_late(c, now) {
                late.push((key, len, took));
            } else if idle_ms > 0 && now - c.last_active_ms > idle_ms {
                idle.push(key);
            } else if slow_ms > 0 && c.paused_since_ms.is_some_and(|t| now - t >= slow_ms) {
                slow.push(key);
            }
        }
        for key in idle {
            self.close(key, "idle");
        }
        for (key, len, took) in late {
            let Some(peer) = self.conns.get(key).map(|c| c.peer.ip()) else {
                continue;
            };
            let (verdict, ended) = self.refusals.note(peer, Limit::FrameDeadline, false, now);
            if let Some(summary) = ended {
                self.summarise(&summary);
            }
            if verdict == Verdict::Full {
                warn!(
                    reactor = self.id,
                    %peer,
                    limit = Limit::FrameDeadline.name(),
                    frame = len,
                    seconds = took / 1000,
                    "frame not whole within frameReadTimeoutSeconds / frameMinBytesPerSecond: closing the connection \
                     (more like it from this peer within 10 s are summed up in one line; all are counted in \
                     namesrv_limit_hits_total)"
                );
            }
            self.metrics.limit_hit(Limit::FrameDeadline);
            self.close(key, "frame deadline");
        }
        for key in slow {
            if let Some(c) = self.conns.get(key) {
                warn!(
                    reactor = self.id,
                    peer = %c.peer,
                    pending = c.output.len(),
                    "closing a peer that left its replies unread for slowReaderCloseSeconds"
                );
            }
            self.metrics.limit_hit(Limit::PendingWriteClosed);
            self.close(key, "replies unread for slowReaderCloseSeconds");
        }
    }
}

impl super::Settings {
    /// At the tick: notes when the frame at the front of `c.input` was first seen unfinished, and returns its
    /// announced length (0 if its prefix is not in yet) and how long it has been arriving once that is past its
    /// deadline. A frame waiting on us (for room, for the decoder, for the peer to read its replies) is not late:
    /// its clock starts when it may be read again. Whole frames left in `input` are ours to decode, not late.
    fn frame_late(&self, c: &mut Conn, now: i64) -> Option<(u64, i64)> {
        let waiting_on_us = c.deferred
            || c.parked.is_some()
            || c.stalled
            || c.paused_since_ms.is_some()
            || c.admission == Admission::Waiting;
        if self.frame_timeout_ms == 0 || c.input.is_empty() || waiting_on_us || c.whole_frame_buffered() {
            c.partial_since = None;
            return None;
        }
        let since = match c.partial_since {
            Some((done, since)) if done == c.frames_done => since,
            _ => {
                c.partial_since = Some((c.frames_done, now));
                return None;
            }
        };
        let len = crate::protocol::frame::frame_len(&c.input).unwrap_or(0);
        let took = now - since;
        (took >= crate::limit::frame_deadline_ms(len, self.frame_timeout_ms, self.frame_min_rate))
            .then_some((len, took))
    }
}
