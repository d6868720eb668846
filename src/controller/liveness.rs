//! What the leader may ask about brokers' liveness while it validates a request (Java `BrokerValidPredicate` and
//! `BrokerLiveInfoGetter`). Liveness is local to each node and never replicated, so only validation reads it,
//! never `ReplicasInfo::apply`.

use super::event::BrokerId;

/// What a broker last reported that elections rank by (Java `BrokerLiveInfo`'s epoch, maxOffset,
/// electionPriority).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LiveFacts {
    pub epoch: i32,
    pub max_offset: i64,
    /// Lower is preferred; absent in the heartbeat means `i32::MAX` (Java `Integer.MAX_VALUE`).
    pub election_priority: i32,
}

pub(crate) trait Liveness {
    /// Whether (cluster, group, id) heartbeated within its timeout (Java `isBrokerActive`).
    fn is_alive(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> bool;

    /// Its last reported election facts, if this node knows them.
    fn live_facts(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> Option<LiveFacts>;

    /// Whether the inactive-master scan may take (cluster, group, id) for dead: by default whenever it is not
    /// alive, as in Java. Elections and validation never ask this, only `is_alive`: a broker this node has not
    /// heard from must not be elected or put into a SyncStateSet, however new the leader.
    fn is_gone(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> bool {
        !self.is_alive(cluster_name, broker_name, broker_id)
    }
}

/// A bare predicate knows who is alive but nothing to rank by (Java `new DefaultElectPolicy(predicate, null)`), as
/// Java's tests and admin tools use it.
impl<F: Fn(&str, &str, BrokerId) -> bool> Liveness for F {
    fn is_alive(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> bool {
        self(cluster_name, broker_name, broker_id)
    }

    fn live_facts(&self, _: &str, _: &str, _: BrokerId) -> Option<LiveFacts> {
        None
    }
}
