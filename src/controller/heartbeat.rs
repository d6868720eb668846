//! The broker live table of one controller node (Java `DefaultBrokerHeartbeatManager`). Brokers heartbeat every
//! controller they can reach (Java `ReplicasManager.sendHeartbeatToController`), so each node keeps its own table
//! and nothing here is replicated. Time is passed in; the node calls `scan` every `scanNotActiveBrokerInterval` and
//! `on_connection_closed` when a broker's connection drops, and asks the leader's `ReplicasInfo::lost_master`
//! whether each broker it reports was a master.

use std::collections::BTreeMap;

use crate::conn_id::ConnId;

use super::event::BrokerId;
use super::liveness::{LiveFacts, Liveness};

/// Java `BrokerHeartbeatManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME` (the controller's: 10 s, not the name
/// server's 120 s).
pub(crate) const DEFAULT_HEARTBEAT_TIMEOUT_MS: i64 = 10_000;

/// What a heartbeat says (904 `BrokerHeartbeatRequestHeader`); `None` where the broker left a field out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BrokerHeartbeat {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: Option<BrokerId>,
    pub epoch: Option<i32>,
    pub max_offset: Option<i64>,
    pub confirm_offset: Option<i64>,
    pub heartbeat_timeout_mills: Option<i64>,
    pub election_priority: Option<i32>,
}

/// Java `BrokerIdentityInfo`: the live table's key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BrokerIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: BrokerId,
}

/// Java `BrokerLiveInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BrokerLiveInfo {
    pub broker_addr: String,
    pub last_update_ms: i64,
    pub heartbeat_timeout_ms: i64,
    /// The connection of the first heartbeat; Java keeps it until the entry goes (a later heartbeat on another
    /// connection does not move it).
    pub conn: Option<ConnId>,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    pub election_priority: i32,
}

impl BrokerLiveInfo {
    /// Java `isBrokerActive`: alive up to and including `last + timeout`.
    pub(crate) fn is_alive(&self, now_ms: i64) -> bool {
        self.last_update_ms.saturating_add(self.heartbeat_timeout_ms) >= now_ms
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct HeartbeatTable {
    live: BTreeMap<BrokerIdentity, BrokerLiveInfo>,
}

impl HeartbeatTable {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// brokerName → how many of its brokers are alive at `now_ms` (for `/metrics`).
    pub(crate) fn alive_by_group(&self, now_ms: i64) -> std::collections::BTreeMap<String, u64> {
        let mut out = std::collections::BTreeMap::new();
        for (id, info) in &self.live {
            if info.is_alive(now_ms) {
                *out.entry(id.broker_name.clone()).or_insert(0) += 1;
            }
        }
        out
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn get(&self, id: &BrokerIdentity) -> Option<&BrokerLiveInfo> {
        self.live.get(id)
    }

    /// 904 BROKER_HEARTBEAT. A returning broker refreshes its timestamp, timeout and priority; its epoch and
    /// offsets only move forward (epoch up, or same epoch and a higher maxOffset), so a late heartbeat cannot
    /// make a broker look more behind than it is — elections rank by them.
    pub(crate) fn on_heartbeat(&mut self, hb: &BrokerHeartbeat, conn: Option<ConnId>, now_ms: i64) {
        let key = BrokerIdentity {
            cluster_name: hb.cluster_name.clone(),
            broker_name: hb.broker_name.clone(),
            broker_id: hb.broker_id.unwrap_or(-1),
        };
        let epoch = hb.epoch.unwrap_or(-1);
        let max_offset = hb.max_offset.unwrap_or(-1);
        let confirm_offset = hb.confirm_offset.unwrap_or(-1);
        let timeout = hb.heartbeat_timeout_mills.unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT_MS);
        let priority = hb.election_priority.unwrap_or(i32::MAX);
        match self.live.get_mut(&key) {
            None => {
                let info = BrokerLiveInfo {
                    broker_addr: hb.broker_addr.clone(),
                    last_update_ms: now_ms,
                    heartbeat_timeout_ms: timeout,
                    conn,
                    epoch,
                    max_offset,
                    // Java's constructor for a new entry leaves confirmOffset at 0.
                    confirm_offset: 0,
                    election_priority: priority,
                };
                self.live.insert(key, info);
            }
            Some(prev) => {
                prev.last_update_ms = now_ms;
                prev.heartbeat_timeout_ms = timeout;
                prev.election_priority = priority;
                if epoch > prev.epoch || (epoch == prev.epoch && max_offset > prev.max_offset) {
                    prev.epoch = epoch;
                    prev.max_offset = max_offset;
                    prev.confirm_offset = confirm_offset;
                }
            }
        }
    }

    /// Remove and return the brokers silent for more than their timeout (Java `scanNotActiveBroker`). The node
    /// closes their connections and, if it leads, re-elects where one of them was master.
    pub(crate) fn scan(&mut self, now_ms: i64) -> Vec<BrokerIdentity> {
        let expired: Vec<BrokerIdentity> =
            self.live.iter().filter(|(_, info)| !info.is_alive(now_ms)).map(|(id, _)| id.clone()).collect();
        for id in &expired {
            self.live.remove(id);
        }
        expired
    }

    /// Remove and return the brokers whose connection closed (Java `onBrokerChannelClose`): a killed master is
    /// replaced within about a second instead of after its heartbeat timeout. Java removes only the first match;
    /// we remove every entry on the connection (one broker, one identity, in practice the same).
    pub(crate) fn on_connection_closed(&mut self, conn: ConnId) -> Vec<BrokerIdentity> {
        let gone: Vec<BrokerIdentity> =
            self.live.iter().filter(|(_, info)| info.conn == Some(conn)).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            self.live.remove(id);
        }
        gone
    }

    /// The table as `Liveness` at `now_ms`, for the leader's validation and elections.
    pub(crate) fn at(&self, now_ms: i64) -> LiveAt<'_> {
        LiveAt { table: self, now_ms, leading_since_ms: None }
    }

    /// The table as the inactive-master scan of a node that has led since `leading_since_ms` reads it: a broker
    /// with no entry is gone only once it has had a whole heartbeat timeout since then to reach this node.
    ///
    /// Why: the table is this node's own and starts empty (a restart), or holds only the brokers that reached this
    /// node, so a leader of a few seconds has not necessarily heard from a master that is alive and heartbeating —
    /// brokers look for a controller they can reach every 3 s and heartbeat every second — and Java's rule (no
    /// entry, not alive) deposes it at the first scan. Unchanged: an entry that expired is gone at once (the broker
    /// had its full timeout), a closed connection elects at once (`on_connection_closed`), and `is_alive` — what
    /// elections and validation read — still says no for a broker without an entry. The cost: an entry `scan`
    /// removed is absent like one never made, so a master that died while no node led waits out the grace too.
    /// The leader start is the later of "this node started" and "it became leader", so it covers both.
    pub(crate) fn at_leading_since(&self, now_ms: i64, leading_since_ms: i64) -> LiveAt<'_> {
        LiveAt { table: self, now_ms, leading_since_ms: Some(leading_since_ms) }
    }

    fn find(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> Option<&BrokerLiveInfo> {
        let key =
            BrokerIdentity { cluster_name: cluster_name.to_owned(), broker_name: broker_name.to_owned(), broker_id };
        self.live.get(&key)
    }

    /// The timeout a broker of the group without an entry is given: the longest its group's entries declare
    /// (its own `controllerHeartBeatTimeoutMills` is unknown until it heartbeats, and a group's brokers are
    /// normally configured alike), else Java's default.
    fn group_timeout_ms(&self, cluster_name: &str, broker_name: &str) -> i64 {
        let key = |broker_id| BrokerIdentity {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_id,
        };
        self.live
            .range(key(BrokerId::MIN)..=key(BrokerId::MAX))
            .map(|(_, info)| info.heartbeat_timeout_ms)
            .max()
            .unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT_MS)
    }
}

/// A `HeartbeatTable` read at one instant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LiveAt<'a> {
    table: &'a HeartbeatTable,
    now_ms: i64,
    /// Set for the inactive-master scan (`HeartbeatTable::at_leading_since`).
    leading_since_ms: Option<i64>,
}

impl Liveness for LiveAt<'_> {
    fn is_alive(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> bool {
        self.table.find(cluster_name, broker_name, broker_id).is_some_and(|i| i.is_alive(self.now_ms))
    }

    fn live_facts(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> Option<LiveFacts> {
        let info = self.table.find(cluster_name, broker_name, broker_id)?;
        Some(LiveFacts { epoch: info.epoch, max_offset: info.max_offset, election_priority: info.election_priority })
    }

    fn is_gone(&self, cluster_name: &str, broker_name: &str, broker_id: BrokerId) -> bool {
        match (self.table.find(cluster_name, broker_name, broker_id), self.leading_since_ms) {
            (Some(info), _) => !info.is_alive(self.now_ms),
            (None, None) => true,
            // As `is_alive`'s bound: still spared at exactly `since + timeout`.
            (None, Some(since)) => {
                self.now_ms > since.saturating_add(self.table.group_timeout_ms(cluster_name, broker_name))
            }
        }
    }
}
