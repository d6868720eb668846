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
}

impl Limit {
    pub(crate) const ALL: [Limit; 7] = [
        Limit::AdminAllowList,
        Limit::Acl,
        Limit::TopicsPerRegistration,
        Limit::InflatedBody,
        Limit::Connections,
        Limit::PendingWritePaused,
        Limit::PendingWriteClosed,
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
        }
    }
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
}
