//! Builders shared by the route unit tests.

use crate::model::{DataVersion, TopicConfig};
use crate::state::ConnId;

use super::{RegisterBroker, RouteSettings, UnregisterBroker};

pub(crate) const S: RouteSettings =
    RouteSettings { delete_topic_with_broker_registration: false, notify_min_broker_id_changed: false };

pub(crate) const NOTIFY: RouteSettings =
    RouteSettings { delete_topic_with_broker_registration: false, notify_min_broker_id_changed: true };

pub(crate) fn conn(token: u32) -> ConnId {
    ConnId { reactor: 0, token, gen: 1 }
}

pub(crate) fn dv(counter: i64) -> DataVersion {
    DataVersion { counter, state_version: 0, timestamp: 1 }
}

pub(crate) fn tc(topic: &str, perm: i32) -> TopicConfig {
    TopicConfig { perm, ..TopicConfig::with_defaults(topic) }
}

/// A 5.x registration (enableActingMaster=false) with perm-6 topics.
pub(crate) fn reg(cluster: &str, name: &str, id: i64, addr: &str, topics: &[&str], counter: i64) -> RegisterBroker {
    let topics = topics.iter().map(|t| tc(t, 6)).collect();
    RegisterBroker {
        ha_server_addr: format!("{addr}-ha"),
        ..RegisterBroker::new(cluster, name, id, addr, topics, dv(counter))
    }
}

pub(crate) fn unreg(cluster: &str, name: &str, id: i64, addr: &str) -> UnregisterBroker {
    UnregisterBroker { cluster_name: cluster.into(), broker_addr: addr.into(), broker_name: name.into(), broker_id: id }
}
