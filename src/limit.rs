//! The configured limits a peer can go over (docs/decisions/0006), named once for the refusal, the log line and the
//! `limit` label of `namesrv_limit_hits_total`.

/// A limit, or a protection that refuses requests the same way (allow-list, ACL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    AdminAllowList,
    Acl,
    TopicsPerRegistration,
    InflatedBody,
    Connections,
    PendingWritePaused,
    PendingWriteClosed,
    /// A frame (or the frame's length prefix) that did not arrive within its deadline: the connection is closed.
    FrameDeadline,
    /// A controller-port connection over `controllerMaxConnections` (or its share of the open-files limit).
    ControllerConnections,
}

impl Limit {
    pub(crate) const ALL: [Limit; 9] = [
        Limit::AdminAllowList,
        Limit::Acl,
        Limit::TopicsPerRegistration,
        Limit::InflatedBody,
        Limit::Connections,
        Limit::PendingWritePaused,
        Limit::PendingWriteClosed,
        Limit::FrameDeadline,
        Limit::ControllerConnections,
    ];

    /// The metric label and log field.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Limit::AdminAllowList => "admin_allow_list",
            Limit::Acl => "acl",
            Limit::TopicsPerRegistration => "topics_per_registration",
            Limit::InflatedBody => "inflated_body",
            Limit::Connections => "connections",
            Limit::PendingWritePaused => "pending_write_paused",
            Limit::PendingWriteClosed => "pending_write_closed",
            Limit::FrameDeadline => "frame_deadline",
            Limit::ControllerConnections => "controller_connections",
        }
    }
}

/// How long a frame of `len` bytes may take to arrive once its first byte is in (decision 0032): `floor_ms`, or
/// longer if `len` at `min_rate` bytes a second needs it, so that a big registration over a slow link still passes
/// while a peer trickling bytes cannot keep a buffer (or the room it took) for ever. `min_rate` 0 = the floor only.
pub(crate) fn frame_deadline_ms(len: u64, floor_ms: i64, min_rate: u64) -> i64 {
    let scaled = match min_rate {
        0 => 0,
        rate => i64::try_from(len.saturating_mul(1000) / rate).unwrap_or(i64::MAX),
    };
    floor_ms.max(scaled)
}

/// The soft limit of open files of this process (`RLIMIT_NOFILE`, from /proc: no FFI), if it can be read.
pub(crate) fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..].split_whitespace().next()?.parse().ok()
}

/// Descriptors kept for everything but connections: listeners, epoll and eventfds, log and state files, the HTTP
/// endpoint's own connections, outbound connections to brokers.
pub(crate) const FD_RESERVE: u64 = 64;

/// The connection caps of the two ports derived from the open-files limit `nofile` (decision 0032): the controller
/// port gets at most a quarter of what is left after `FD_RESERVE`, the name-server port the rest, each no more than
/// configured; so a flood on one port can never take the descriptors the other needs. `controller`: `None` if no
/// controller runs. Unknown limit: the configured caps. 0 configured = unlimited, then the share is the cap.
pub(crate) fn fd_shares(nofile: Option<u64>, remoting: usize, controller: Option<usize>) -> (usize, Option<usize>) {
    let Some(nofile) = nofile else {
        return (remoting, controller);
    };
    let usable = usize::try_from(nofile.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX).max(2);
    let capped = |configured: usize, share: usize| if configured == 0 { share } else { configured.min(share) };
    let controller = controller.map(|c| capped(c, (usable / 4).max(1)));
    let remoting = capped(remoting, usable - controller.unwrap_or(0));
    (remoting, controller)
}

/// Bytes of request bodies a queue may hold (`writerQueueBytes`, `decoderQueueBytes`): a count alone would let
/// 65,536 decoded registrations or 256 bodies of 16 MiB pile up. Taken when a request is queued, given back when it
/// has been handled; over the budget the request is refused (SYSTEM_BUSY, as for a full queue). 0 = unlimited.
#[derive(Debug, Default)]
pub(crate) struct ByteBudget {
    used: std::sync::atomic::AtomicUsize,
    cap: usize,
}

impl ByteBudget {
    pub(crate) fn new(cap: usize) -> ByteBudget {
        ByteBudget { used: Default::default(), cap }
    }

    /// Takes `n` bytes if they fit. A request larger than the whole budget still fits into an empty queue, so a
    /// legitimate large registration is never refused on an idle server.
    pub(crate) fn try_take(&self, n: usize) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        if self.cap == 0 {
            return true;
        }
        let mut used = self.used.load(Acquire);
        loop {
            if used > 0 && used.saturating_add(n) > self.cap {
                return false;
            }
            match self.used.compare_exchange_weak(used, used + n, AcqRel, Acquire) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Gives back what `try_take` took.
    pub(crate) fn release(&self, n: usize) {
        if self.cap > 0 {
            self.used.fetch_sub(n, std::sync::atomic::Ordering::AcqRel);
        }
    }

    /// Bytes held now (for `/metrics`).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::ByteBudget;

    #[test]
    fn budget_refuses_past_the_cap_but_always_takes_one_request_into_an_empty_queue() {
        let b = ByteBudget::new(100);
        assert!(b.try_take(60));
        assert!(!b.try_take(50), "60 + 50 > 100");
        assert!(b.try_take(40));
        b.release(100);
        assert!(b.try_take(1000), "an empty queue takes even a request larger than the budget");
        assert!(!b.try_take(1));
        assert!(ByteBudget::new(0).try_take(usize::MAX / 2), "0 = unlimited");
    }

    #[test]
    fn frame_deadlines_scale_with_the_frame_above_a_floor() {
        use super::frame_deadline_ms;
        assert_eq!(frame_deadline_ms(100, 30_000, 256 * 1024), 30_000);
        assert_eq!(frame_deadline_ms(15 * 1024 * 1024, 30_000, 256 * 1024), 60_000, "15 MiB at 256 KiB/s");
        assert_eq!(frame_deadline_ms(u64::MAX, 1_000, 1), i64::MAX);
        assert_eq!(frame_deadline_ms(u64::MAX, 1_000, 0), 1_000);
    }

    #[test]
    fn the_ports_share_the_open_files_limit() {
        use super::fd_shares;
        assert_eq!(fd_shares(None, 100_000, Some(1024)), (100_000, Some(1024)));
        assert_eq!(fd_shares(Some(256), 100_000, Some(1024)), (144, Some(48)));
        assert_eq!(fd_shares(Some(256), 100_000, None), (192, None));
        assert_eq!(fd_shares(Some(1 << 20), 100_000, Some(1024)), (100_000, Some(1024)));
        assert_eq!(fd_shares(Some(256), 0, Some(0)), (144, Some(48)), "0 = as many as the share");
        assert_eq!(fd_shares(Some(10), 5, Some(5)), (1, Some(1)));
    }
}
