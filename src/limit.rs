//! The configured limits a peer can go over (docs/decisions/0006), named once for the refusal, the log line and the
//! `limit` label of `namesrv_limit_hits_total`.

/// A limit, or a protection that refuses requests the same way (allow-list, ACL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    pub const ALL: [Limit; 7] = [
        Limit::AdminAllowList,
        Limit::Acl,
        Limit::TopicsPerRegistration,
        Limit::InflatedBody,
        Limit::Connections,
        Limit::PendingWritePaused,
        Limit::PendingWriteClosed,
    ];

    /// The metric label and log field.
    pub fn name(self) -> &'static str {
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
