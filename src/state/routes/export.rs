//! Warm restart: the tables as the registrations that would rebuild them, one per live broker. Replaying them
//! (masters first) into empty tables gives the same routes, perms included, with each broker's last DataVersion,
//! so the real broker's next registration is recognised as unchanged. Each comes with its broker's last-update
//! time, so a replay can expire it when it would have expired without the restart.

use std::sync::Arc;

use crate::model::{RegisterBrokerBody, TopicConfig};
use crate::state::liveness::BrokerLive;

use super::{RegisterBroker, RouteTables, RouteView, TopicKey};

/// What an export needs, cut from the tables in O(live brokers): the (persistent, O(1)) view and a copy of the
/// live entries. The writer takes it; building the registrations, O(topic entries), happens elsewhere.
#[derive(Debug)]
pub(crate) struct ExportCut {
    view: RouteView,
    live: Vec<(Arc<str>, Arc<str>, BrokerLive)>,
}

impl RouteTables {
    /// The cut to export from (cheap: see `ExportCut`).
    pub(crate) fn export_cut(&self) -> ExportCut {
        let live = self.live.iter().map(|(c, a, l)| (c.clone(), a.clone(), l.clone())).collect();
        ExportCut { view: self.view.clone(), live }
    }

    /// One `RegisterBroker` per live broker whose group is still known; masters (id 0) first.
    #[cfg(test)]
    pub(crate) fn export(&self) -> Vec<RegisterBroker> {
        self.export_cut().export().into_iter().map(|(reg, _)| reg).collect()
    }
}

impl ExportCut {
    /// One `RegisterBroker` per live broker whose group is still known, with the broker's last-update time (the
    /// live entry's, wall-clock ms); masters (id 0) first.
    pub(crate) fn export(&self) -> Vec<(RegisterBroker, i64)> {
        let view = &self.view;
        let mut out = Vec::with_capacity(self.live.len());
        // The group an eviction would take the broker from (Java's `setupUnRegisterRequest` order).
        let groups = view.brokers_in_java_order();
        let first = super::java_order::first_groups(&groups);
        for (cluster, addr, live) in &self.live {
            let Some(&(bd, id)) = first.get(&(&**cluster, &**addr)) else {
                continue;
            };
            let name = &bd.broker_name;
            let mut topic_configs = Vec::new();
            let mut mapping_infos = Vec::new();
            for topic in view.broker_topics.get(name).into_iter().flat_map(|l| l.iter()) {
                if let Some(q) = view.topics.get(&TopicKey::new(topic.clone())).and_then(|e| e.queue(name, &view.names))
                {
                    topic_configs.push(TopicConfig {
                        topic_name: topic.clone().into(),
                        read_queue_nums: q.read_queue_nums,
                        write_queue_nums: q.write_queue_nums,
                        perm: q.perm,
                        topic_sys_flag: q.topic_sys_flag,
                    });
                }
                if let Some(info) = view.mappings.get(topic).and_then(|m| m.get(&**name)) {
                    mapping_infos.push((topic.to_string(), (**info).clone()));
                }
            }
            let filter_server_list = view.filter_servers.get(cluster).and_then(|m| m.get(addr)).map(|l| (**l).clone());
            let reg = RegisterBroker {
                cluster_name: cluster.to_string(),
                broker_addr: addr.to_string(),
                broker_name: name.to_string(),
                broker_id: id,
                ha_server_addr: live.ha_server_addr.clone(),
                zone_name: bd.zone_name.clone(),
                heartbeat_timeout_ms: Some(live.timeout_ms),
                enable_acting_master: Some(bd.enable_acting_master),
                body: RegisterBrokerBody {
                    data_version: live.data_version,
                    topic_configs,
                    mapping_infos,
                    filter_server_list: Some(filter_server_list.unwrap_or_default()),
                },
                conn: None,
            };
            out.push((reg, live.last_update_ms));
        }
        out.sort_by(|(a, _), (b, _)| {
            (a.broker_id, &a.cluster_name, &a.broker_addr).cmp(&(b.broker_id, &b.cluster_name, &b.broker_addr))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{DataVersion, RegisterBrokerBody, TopicConfig};
    use crate::state::routes::{RegisterBroker, RouteSettings, RouteTables};

    fn reg(name: &str, addr: &str, id: i64, topics: &[&str], counter: i64) -> RegisterBroker {
        RegisterBroker {
            cluster_name: "C".into(),
            broker_addr: addr.into(),
            broker_name: name.into(),
            broker_id: id,
            ha_server_addr: format!("{addr}-ha"),
            zone_name: Some("z".into()),
            heartbeat_timeout_ms: None,
            enable_acting_master: Some(false),
            body: RegisterBrokerBody {
                data_version: DataVersion { counter, state_version: 0, timestamp: 1 },
                topic_configs: topics.iter().map(|t| TopicConfig::with_defaults(*t)).collect(),
                mapping_infos: vec![],
                filter_server_list: Some(vec![]),
            },
            conn: None,
        }
    }

    #[test]
    fn replaying_the_export_rebuilds_the_same_routes() {
        let s = RouteSettings::default();
        let mut a = RouteTables::new();
        a.register_broker(reg("b1", "h1:1", 1, &["T", "U"], 3), 0, s);
        a.register_broker(reg("b1", "h0:1", 0, &["T", "U"], 4), 0, s);
        a.register_broker(reg("b2", "h2:1", 0, &["T", "V"], 5), 0, s);
        assert_eq!(a.wipe_write_perm("b2"), 2);
        let exported = a.export();
        assert_eq!(exported.len(), 3);
        assert_eq!(exported[0].broker_id, 0, "masters first");
        let mut b = RouteTables::new();
        for r in exported {
            assert!(b.register_broker(r, 10, s).is_some());
        }
        for t in ["T", "U", "V"] {
            assert_eq!(a.view().route(t, false), b.view().route(t, false), "{t}");
        }
        assert_eq!(a.view().cluster_info(), b.view().cluster_info());
        // The same DataVersion comes back: the real broker's next registration changes nothing.
        let (changed, _) =
            b.query_data_version("C", "h2:1", &DataVersion { counter: 5, state_version: 0, timestamp: 1 }, 11);
        assert!(!changed);
    }

    /// Each registration comes with its broker's last-update time: a heartbeat's, a registration's.
    #[test]
    fn the_export_carries_each_brokers_last_update_time() {
        let s = RouteSettings::default();
        let mut t = RouteTables::new();
        t.register_broker(reg("b1", "h1:1", 0, &["T", "U"], 1), 1_000, s);
        t.register_broker(reg("b2", "h2:1", 0, &["U", "V"], 1), 2_000, s);
        assert!(t.heartbeat("C", "h2:1", 7_000));
        let times: Vec<(String, i64)> =
            t.export_cut().export().into_iter().map(|(r, at)| (r.broker_addr, at)).collect();
        assert_eq!(times, [("h1:1".to_string(), 1_000), ("h2:1".to_string(), 7_000)]);
    }
}
