//! Writes that remove brokers: UNREGISTER_BROKER batches (§5.5), expiry and connection loss (§5.6).
//!
//! Evictions are decided and applied in one call on the writer thread, so a broker that re-registers before the
//! eviction runs cannot be wiped by a stale decision (unlike apache/rocketmq#11043).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::model::perm;

use super::super::liveness::LiveKey;
use super::super::ConnId;
use super::register::min_id_notices;
use super::{Expired, MinBrokerIdNotice, RouteSettings, RouteTables, TopicKey, UnregisterBroker};

impl RouteTables {
    /// §5.5, applied at once, in order.
    pub fn unregister_brokers(&mut self, reqs: &[UnregisterBroker], s: RouteSettings) -> Vec<MinBrokerIdNotice> {
        let mut removed: BTreeSet<Arc<str>> = BTreeSet::new();
        let mut reduced: BTreeSet<Arc<str>> = BTreeSet::new();
        // brokerName → the address whose removal took the group's minimum.
        let mut min_removed: BTreeMap<Arc<str>, String> = BTreeMap::new();

        for r in reqs {
            // 1.
            self.live.remove(&r.cluster_name, &r.broker_addr);
            self.forget_body(&r.broker_addr);
            self.remove_filter_servers(&r.cluster_name, &r.broker_addr);

            // 2. Members are removed by address, whatever id the request names.
            let name: Arc<str> = Arc::from(r.broker_name.as_str());
            let mut emptied = false;
            if let Some(bd) = self.view.brokers.get(r.broker_name.as_str()).cloned() {
                let was_min = bd.min_broker().is_some_and(|(m, _)| m == r.broker_id);
                let mut bd = (*bd).clone();
                bd.broker_addrs.retain(|_, a| *a != r.broker_addr);
                if bd.broker_addrs.is_empty() {
                    self.remove_broker(&r.broker_name);
                    emptied = true;
                } else {
                    self.put_broker(bd);
                    if was_min {
                        min_removed.insert(name.clone(), r.broker_addr.clone());
                    }
                }
            }
            if emptied {
                self.remove_from_cluster(&r.cluster_name, &r.broker_name);
                removed.insert(name);
            } else {
                reduced.insert(name);
            }
        }

        // 3. Only the affected groups' topics are visited.
        for name in &removed {
            for t in self.topics_of_broker(name).iter() {
                self.remove_queue(&TopicKey::new(t.clone()), name);
            }
        }
        for name in &reduced {
            let Some(bd) = self.view.brokers.get(&**name).cloned() else {
                continue;
            };
            let no_master = bd.min_broker().is_none_or(|(m, _)| m > 0);
            if bd.enable_acting_master && no_master {
                self.map_perm_of_broker(name, |p| p & !perm::WRITE);
            }
        }

        // 4.
        let mut notices = Vec::new();
        if s.notify_min_broker_id_changed {
            for (name, offline) in min_removed {
                if let Some(bd) = self.view.brokers.get(&*name) {
                    if bd.enable_acting_master {
                        notices.extend(min_id_notices(&bd.broker_addrs, Some(offline), None));
                    }
                }
            }
        }
        self.merge_broker_topics();
        notices
    }

    /// A connection closed or idled out: evict every broker whose live entry holds exactly this connection.
    pub fn connection_closed(
        &mut self,
        conn: ConnId,
        s: RouteSettings,
    ) -> (Vec<UnregisterBroker>, Vec<MinBrokerIdNotice>) {
        let keys = self.live.keys_of_conn(conn);
        if keys.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let reqs = self.eviction_requests(&keys);
        let notices = self.unregister_brokers(&reqs, s);
        (reqs, notices)
    }

    /// §5.6: evict brokers with `last_update + timeout < now_ms`, atomically with respect to registrations.
    pub fn expire(&mut self, now_ms: i64, s: RouteSettings) -> Expired {
        let keys = self.live.expired(now_ms);
        if keys.is_empty() {
            return Expired::default();
        }
        let close = keys.iter().filter_map(|(c, a)| self.live.get(c, a).and_then(|l| l.conn)).collect();
        let evicted = self.eviction_requests(&keys);
        let notices = self.unregister_brokers(&evicted, s);
        Expired { evicted, close, notices }
    }

    /// Java's `setupUnRegisterRequest`: the (brokerName, brokerId) of the first group in the entry's cluster, in
    /// Java's iteration order of `brokerAddrTable`, that holds its address (two groups may, when brokers are
    /// misconfigured). An entry no group claims any more is dropped from the live table without touching routes
    /// (Java would keep it forever and re-close its channel on every scan; docs/compatibility.md).
    fn eviction_requests(&mut self, keys: &[LiveKey]) -> Vec<UnregisterBroker> {
        let mut reqs = Vec::new();
        let groups = if keys.is_empty() { Vec::new() } else { self.view.brokers_in_java_order() };
        let first = super::java_order::first_groups(&groups);
        let mut unclaimed = Vec::new();
        for (cluster, addr) in keys {
            let found = first.get(&(&**cluster, &**addr)).map(|(bd, id)| (bd.broker_name.to_string(), *id));
            match found {
                Some((broker_name, broker_id)) => reqs.push(UnregisterBroker {
                    cluster_name: cluster.to_string(),
                    broker_addr: addr.to_string(),
                    broker_name,
                    broker_id,
                }),
                None => unclaimed.push((cluster, addr)),
            }
        }
        for (cluster, addr) in unclaimed {
            self.live.remove(cluster, addr);
            self.forget_body(addr);
        }
        reqs
    }
}
