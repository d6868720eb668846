//! The route tables (Java `RouteInfoManager`): what brokers registered, and every operation on it.
//!
//! `RouteTables` is owned by the writer thread. `RouteView` is its immutable, cheaply cloned read side: persistent
//! maps, so taking a view is O(1) and an operation that changes k topics costs about O(k log n).

use crate::model::{
    BrokerId, BrokerMemberGroup, ClusterInfo, DataVersion, QueueData, RegisterBrokerBody,
    TopicList, TopicRouteData,
};

use super::ConnId;

/// Settings that change how operations behave (all from `NamesrvConfig`, may change at run time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteSettings {
    pub delete_topic_with_broker_registration: bool,
    pub notify_min_broker_id_changed: bool,
}

/// A REGISTER_BROKER request, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterBroker {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: BrokerId,
    pub ha_server_addr: String,
    /// `__ZONE_NAME`.
    pub zone_name: Option<String>,
    /// `heartbeatTimeoutMillis`; `None` → 120 s.
    pub heartbeat_timeout_ms: Option<i64>,
    /// `None` marks a 4.x ("old version") broker.
    pub enable_acting_master: Option<bool>,
    pub body: RegisterBrokerBody,
    /// The connection the registration came on; closing it evicts the broker.
    pub conn: Option<ConnId>,
}

/// What a successful registration answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegisterResult {
    /// Set for a slave whose group has a live master: the master's haServerAddr and address.
    pub ha_server_addr: Option<String>,
    pub master_addr: Option<String>,
    /// 905 notifications to send (only with `notify_min_broker_id_changed`).
    pub notices: Vec<MinBrokerIdNotice>,
}

/// `None` from `register_broker` = refused ("register broker failed", §5.3 step 7).
pub type RegisterOutcome = Option<RegisterResult>;

/// An UNREGISTER_BROKER request or an eviction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnregisterBroker {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: BrokerId,
}

/// One outbound NOTIFY_MIN_BROKER_ID_CHANGE (905) to `target` (a broker address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinBrokerIdNotice {
    pub target: String,
    pub min_broker_id: BrokerId,
    pub min_broker_addr: String,
    pub offline_broker_addr: Option<String>,
    pub ha_broker_addr: Option<String>,
}

/// Why brokers left the tables, for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EvictionCause {
    Unregistered,
    Expired,
    ConnectionClosed,
}

/// What an expiry scan did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    pub evicted: Vec<UnregisterBroker>,
    /// Connections of the expired brokers, to be closed (Java closes the channel too).
    pub close: Vec<ConnId>,
    pub notices: Vec<MinBrokerIdNotice>,
}

/// Which unit-topic list (311 / 312 / 313).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitTopicKind {
    Unit,
    HasUnitSub,
    HasUnitSubUnUnit,
}

/// The writer-owned tables.
#[derive(Clone, Debug, Default)]
pub struct RouteTables {}

/// The immutable read side.
#[derive(Clone, Debug, Default)]
pub struct RouteView {}

impl RouteTables {
    pub fn new() -> Self {
        RouteTables {}
    }

    /// Bumped whenever the readable view changed; not by heartbeats or unchanged re-registrations.
    pub fn generation(&self) -> u64 {
        unimplemented!()
    }

    /// O(1): the current state as an immutable view.
    pub fn view(&self) -> RouteView {
        unimplemented!()
    }

    /// §5.3. `now_ms` stamps the live entry.
    pub fn register_broker(
        &mut self,
        _req: RegisterBroker,
        _now_ms: i64,
        _s: RouteSettings,
    ) -> RegisterOutcome {
        unimplemented!()
    }

    /// §5.5, applied at once, in order.
    pub fn unregister_brokers(
        &mut self,
        _reqs: &[UnregisterBroker],
        _s: RouteSettings,
    ) -> Vec<MinBrokerIdNotice> {
        unimplemented!()
    }

    /// BROKER_HEARTBEAT: refresh the live entry if it exists; `false` when unknown.
    pub fn heartbeat(&mut self, _cluster: &str, _addr: &str, _now_ms: i64) -> bool {
        unimplemented!()
    }

    /// QUERY_DATA_VERSION: (`changed`, the stored DataVersion if a live entry exists); refreshes the entry.
    pub fn query_data_version(
        &mut self,
        _cluster: &str,
        _addr: &str,
        _dv: &DataVersion,
        _now_ms: i64,
    ) -> (bool, Option<DataVersion>) {
        unimplemented!()
    }

    /// A connection closed or idled out: evict every broker whose live entry holds exactly this connection.
    pub fn connection_closed(
        &mut self,
        _conn: ConnId,
        _s: RouteSettings,
    ) -> (Vec<UnregisterBroker>, Vec<MinBrokerIdNotice>) {
        unimplemented!()
    }

    /// §5.6: evict brokers with `last_update + timeout < now_ms`, atomically with respect to registrations.
    pub fn expire(&mut self, _now_ms: i64, _s: RouteSettings) -> Expired {
        unimplemented!()
    }

    /// 205: clear the write bit; returns the number of topics touched.
    pub fn wipe_write_perm(&mut self, _broker_name: &str) -> i32 {
        unimplemented!()
    }

    /// 327: perm = 6; returns the number of topics touched.
    pub fn add_write_perm(&mut self, _broker_name: &str) -> i32 {
        unimplemented!()
    }

    /// 216, with or without a cluster name.
    pub fn delete_topic(&mut self, _topic: &str, _cluster_name: Option<&str>) {
        unimplemented!()
    }

    /// 217.
    pub fn register_topic(&mut self, _topic: &str, _queue_datas: Vec<QueueData>) {
        unimplemented!()
    }

    /// Number of live brokers (metrics, logs).
    pub fn live_broker_count(&self) -> usize {
        unimplemented!()
    }
}

impl RouteView {
    /// §5.7 including the acting-master rewrite when `support_acting_master`; no order conf, no zone filter.
    pub fn route(&self, _topic: &str, _support_acting_master: bool) -> Option<TopicRouteData> {
        unimplemented!()
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        unimplemented!()
    }

    /// 901: looked up by broker name only; `cluster`/`broker_name` echo the request.
    pub fn broker_member_group(
        &self,
        _cluster: Option<&str>,
        _broker_name: Option<&str>,
    ) -> BrokerMemberGroup {
        unimplemented!()
    }

    pub fn all_topics(&self) -> TopicList {
        unimplemented!()
    }

    pub fn topics_by_cluster(&self, _cluster: &str) -> TopicList {
        unimplemented!()
    }

    /// 304: cluster names + broker names, and the first broker address.
    pub fn system_topics(&self) -> TopicList {
        unimplemented!()
    }

    pub fn unit_topics(&self, _kind: UnitTopicKind) -> TopicList {
        unimplemented!()
    }

    pub fn topic_count(&self) -> usize {
        unimplemented!()
    }
}

/// §5.8: keep broker groups with no master or in `zone` (case-insensitive), drop the rest with their queue data and
/// filter servers.
pub fn filter_by_zone(_route: &mut TopicRouteData, _zone: &str) {
    unimplemented!()
}
