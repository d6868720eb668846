//! The naive reference: Java's `RouteInfoManager` algorithm written as plainly as possible over `BTreeMap`s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use namesrv::state::ConnId;
use namesrv::test_support::model::{BrokerData, ClusterInfo, DataVersion, QueueData, TopicRouteData};
use namesrv::test_support::state::routes::{
    Expired, MinBrokerIdNotice, RegisterBroker, RegisterOutcome, RegisterResult, RouteSettings, UnregisterBroker,
};

#[derive(Clone, Debug)]
pub struct Live {
    pub last: i64,
    pub timeout: i64,
    pub dv: DataVersion,
    pub conn: Option<ConnId>,
    pub ha: String,
}

#[derive(Default)]
pub struct Model {
    pub topics: BTreeMap<String, BTreeMap<String, QueueData>>,
    pub brokers: BTreeMap<String, BrokerData>,
    pub clusters: BTreeMap<String, BTreeSet<String>>,
    pub live: BTreeMap<(String, String), Live>,
    pub filters: BTreeMap<(String, String), Vec<String>>,
    /// The most groups `brokers` ever held (Java's `brokerAddrTable` never shrinks).
    pub brokers_peak: usize,
    /// When each group was added (a counter): names sharing a bin come in this order.
    pub brokers_since: BTreeMap<String, u64>,
    pub brokers_added: u64,
}

/// The bin of `name` in Java's `brokerAddrTable`, a `ConcurrentHashMap(128)` that has held `peak` keys
/// (`String.hashCode`, spread, masked by the table length); keys of one bin come in insertion order.
fn java_broker_bin(name: &str, peak: usize) -> usize {
    let mut h: i32 = 0;
    for unit in name.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    let spread = (h ^ ((h as u32) >> 16) as i32) & 0x7fff_ffff;
    // 128 / 0.75 + 1 → 256 bins, doubled each time the size reaches three quarters of the bins.
    let mut bins = 256usize;
    while peak * 4 >= bins * 3 {
        bins *= 2;
    }
    spread as usize % bins
}

fn notices(addrs: &BTreeMap<i64, String>, offline: Option<String>, ha: Option<String>) -> Vec<MinBrokerIdNotice> {
    let mut out = Vec::new();
    let Some((&min, min_addr)) = addrs.iter().next() else {
        return out;
    };
    for (id, a) in addrs {
        if offline.is_some() || addrs.len() == 1 || *id != min {
            out.push(MinBrokerIdNotice {
                target: a.clone(),
                min_broker_id: min,
                min_broker_addr: min_addr.clone(),
                offline_broker_addr: offline.clone(),
                ha_broker_addr: ha.clone(),
            });
        }
    }
    out
}

impl Model {
    pub fn register(&mut self, r: &RegisterBroker, now: i64, s: RouteSettings) -> RegisterOutcome {
        let (c, a, n, id) = (&r.cluster_name, &r.broker_addr, &r.broker_name, r.broker_id);
        self.clusters.entry(c.clone()).or_default().insert(n.clone());
        let mut first = !self.brokers.contains_key(n);
        self.brokers_peak = self.brokers_peak.max(self.brokers.len() + usize::from(first));
        if first {
            self.brokers_since.insert(n.clone(), self.brokers_added);
            self.brokers_added += 1;
        }
        let bd = self.brokers.entry(n.clone()).or_insert_with(|| BrokerData {
            cluster: c.as_str().into(),
            broker_name: n.as_str().into(),
            broker_addrs: BTreeMap::new(),
            zone_name: None,
            enable_acting_master: false,
        });
        let old_broker = r.enable_acting_master.is_none();
        bd.enable_acting_master = r.enable_acting_master == Some(true);
        bd.zone_name = r.zone_name.clone();
        let prev_min = bd.broker_addrs.keys().next().copied().unwrap_or(0);
        let min_changed = id < prev_min;
        bd.broker_addrs.retain(|i, x| !(x == a && *i != id));
        if let Some(old) = bd.broker_addrs.get(&id) {
            if old != a {
                if let Some(l) = self.live.get(&(c.clone(), old.clone())) {
                    if l.dv.state_version > r.body.data_version.state_version {
                        self.live.remove(&(c.clone(), a.clone()));
                        return Some(RegisterResult::default());
                    }
                }
            }
        }
        if !bd.broker_addrs.contains_key(&id) && r.body.topic_configs.len() == 1 {
            return None;
        }
        let old = bd.broker_addrs.insert(id, a.clone());
        first = first || old.is_none_or(|o| o.is_empty());
        let is_master = id == 0;
        let prime = !old_broker && !is_master && *bd.broker_addrs.keys().next().unwrap() == id;
        let acting_master = bd.enable_acting_master;
        let addrs_after = bd.broker_addrs.clone();
        if is_master || prime {
            if s.delete_topic_with_broker_registration && r.body.mapping_infos.is_empty() {
                let keep: BTreeSet<&str> = r.body.topic_configs.iter().map(|t| &*t.topic_name).collect();
                for (t, qds) in self.topics.iter_mut() {
                    if !keep.contains(t.as_str()) {
                        qds.remove(n);
                    }
                }
                self.topics.retain(|_, q| !q.is_empty());
            }
            let stored = self.live.get(&(c.clone(), a.clone())).map(|l| l.dv);
            for tc in &r.body.topic_configs {
                let changed = stored != Some(r.body.data_version)
                    || !self.topics.get(&*tc.topic_name).is_some_and(|q| q.contains_key(n));
                if first || changed {
                    // RouteInfoManager.registerBroker: `if (isPrimeSlave && brokerData.isEnableActingMaster())`.
                    let perm = if prime && acting_master { tc.perm & !2 } else { tc.perm };
                    self.topics.entry(tc.topic_name.to_string()).or_default().insert(
                        n.clone(),
                        QueueData {
                            broker_name: n.as_str().into(),
                            read_queue_nums: tc.read_queue_nums,
                            write_queue_nums: tc.write_queue_nums,
                            perm,
                            topic_sys_flag: tc.topic_sys_flag,
                        },
                    );
                }
            }
        }
        self.live.insert(
            (c.clone(), a.clone()),
            Live {
                last: now,
                timeout: r.heartbeat_timeout_ms.unwrap_or(120_000),
                dv: r.body.data_version,
                conn: r.conn,
                ha: r.ha_server_addr.clone(),
            },
        );
        match &r.body.filter_server_list {
            Some(l) if l.is_empty() => {
                self.filters.remove(&(c.clone(), a.clone()));
            }
            Some(l) => {
                self.filters.insert((c.clone(), a.clone()), l.clone());
            }
            None => {}
        }
        let mut res = RegisterResult::default();
        if id != 0 {
            if let Some(m) = addrs_after.get(&0) {
                if let Some(l) = self.live.get(&(c.clone(), m.clone())) {
                    res.ha_server_addr = Some(l.ha.clone());
                    res.master_addr = Some(m.clone());
                }
            }
        }
        if min_changed && s.notify_min_broker_id_changed {
            res.notices = notices(&addrs_after, None, Some(r.ha_server_addr.clone()));
        }
        Some(res)
    }

    pub fn unregister(&mut self, reqs: &[UnregisterBroker], s: RouteSettings) -> Vec<MinBrokerIdNotice> {
        let mut removed = BTreeSet::new();
        let mut reduced = BTreeSet::new();
        let mut notify: BTreeMap<String, String> = BTreeMap::new();
        for r in reqs {
            let key = (r.cluster_name.clone(), r.broker_addr.clone());
            self.live.remove(&key);
            self.filters.remove(&key);
            let mut gone = false;
            if let Some(bd) = self.brokers.get_mut(&r.broker_name) {
                let was_min = bd.broker_addrs.keys().next() == Some(&r.broker_id);
                bd.broker_addrs.retain(|_, a| *a != r.broker_addr);
                if bd.broker_addrs.is_empty() {
                    self.brokers.remove(&r.broker_name);
                    self.brokers_since.remove(&r.broker_name);
                    gone = true;
                } else if was_min {
                    notify.insert(r.broker_name.clone(), r.broker_addr.clone());
                }
            }
            if gone {
                if let Some(set) = self.clusters.get_mut(&r.cluster_name) {
                    set.remove(&r.broker_name);
                    if set.is_empty() {
                        self.clusters.remove(&r.cluster_name);
                    }
                }
                removed.insert(r.broker_name.clone());
            } else {
                reduced.insert(r.broker_name.clone());
            }
        }
        for qds in self.topics.values_mut() {
            for n in &removed {
                qds.remove(n);
            }
            for n in &reduced {
                if let (Some(qd), Some(bd)) = (qds.get_mut(n), self.brokers.get(n)) {
                    let no_master = bd.broker_addrs.keys().next().is_none_or(|m| *m > 0);
                    if bd.enable_acting_master && no_master {
                        qd.perm &= !2;
                    }
                }
            }
        }
        self.topics.retain(|_, q| !q.is_empty());
        let mut out = Vec::new();
        if s.notify_min_broker_id_changed {
            for (n, offline) in notify {
                if let Some(bd) = self.brokers.get(&n) {
                    if bd.enable_acting_master {
                        out.extend(notices(&bd.broker_addrs, Some(offline), None));
                    }
                }
            }
        }
        out
    }

    fn evictions(&mut self, keys: &[(String, String)]) -> Vec<UnregisterBroker> {
        let mut out = Vec::new();
        let mut groups: Vec<&BrokerData> = self.brokers.values().collect();
        groups
            .sort_by_key(|b| (java_broker_bin(&b.broker_name, self.brokers_peak), self.brokers_since[&*b.broker_name]));
        let mut unclaimed = Vec::new();
        for (c, a) in keys {
            let found = groups.iter().filter(|b| &*b.cluster == c).find_map(|b| {
                b.broker_addrs.iter().find(|(_, x)| *x == a).map(|(id, _)| (b.broker_name.to_string(), *id))
            });
            match found {
                Some((broker_name, broker_id)) => out.push(UnregisterBroker {
                    cluster_name: c.clone(),
                    broker_addr: a.clone(),
                    broker_name,
                    broker_id,
                }),
                None => unclaimed.push((c.clone(), a.clone())),
            }
        }
        for k in unclaimed {
            self.live.remove(&k);
        }
        out
    }

    pub fn expire(&mut self, now: i64, s: RouteSettings) -> Expired {
        let keys: Vec<_> = self.live.iter().filter(|(_, l)| l.last + l.timeout < now).map(|(k, _)| k.clone()).collect();
        if keys.is_empty() {
            return Expired::default();
        }
        let close = keys.iter().filter_map(|k| self.live[k].conn).collect();
        let evicted = self.evictions(&keys);
        let notices = self.unregister(&evicted, s);
        Expired { evicted, close, notices }
    }

    pub fn closed(&mut self, conn: ConnId, s: RouteSettings) -> (Vec<UnregisterBroker>, Vec<MinBrokerIdNotice>) {
        let keys: Vec<_> = self.live.iter().filter(|(_, l)| l.conn == Some(conn)).map(|(k, _)| k.clone()).collect();
        let reqs = self.evictions(&keys);
        let n = if reqs.is_empty() { Vec::new() } else { self.unregister(&reqs, s) };
        (reqs, n)
    }

    pub fn perm_of_broker(&mut self, n: &str, f: impl Fn(i32) -> i32) -> i32 {
        let mut count = 0;
        for qds in self.topics.values_mut() {
            if let Some(qd) = qds.get_mut(n) {
                qd.perm = f(qd.perm);
                count += 1;
            }
        }
        count
    }

    pub fn delete_topic(&mut self, t: &str, cluster: Option<&str>) {
        match cluster {
            Some(c) => {
                let names = self.clusters.get(c).cloned().unwrap_or_default();
                if let Some(q) = self.topics.get_mut(t) {
                    q.retain(|n, _| !names.contains(n));
                    if q.is_empty() {
                        self.topics.remove(t);
                    }
                }
            }
            None => {
                self.topics.remove(t);
            }
        }
    }

    /// `RouteInfoManager.registerTopic`: a missing broker name (`None`) is looked up like an unknown one (Java's
    /// `containsKey(null)` throws, and registerTopic catches it: the loop ends there too).
    pub fn register_topic(&mut self, t: &str, qds: &[Option<QueueData>]) {
        let known =
            |m: &Model, q: &Option<QueueData>| q.as_ref().is_some_and(|q| m.brokers.contains_key(&*q.broker_name));
        if !self.topics.contains_key(t) {
            if qds.iter().all(|q| known(self, q)) && !qds.is_empty() {
                let map = qds.iter().flatten().map(|q| (q.broker_name.to_string(), q.clone())).collect();
                self.topics.insert(t.into(), map);
            }
            return;
        }
        for q in qds {
            if !known(self, q) {
                return;
            }
            let q = q.clone().unwrap();
            self.topics.get_mut(t).unwrap().insert(q.broker_name.to_string(), q);
        }
    }

    pub fn route(&self, t: &str, acting: bool) -> Option<TopicRouteData> {
        let qds = self.topics.get(t)?;
        let mut r = TopicRouteData { queue_datas: qds.values().cloned().collect(), ..Default::default() };
        for n in qds.keys() {
            if let Some(bd) = self.brokers.get(n) {
                r.broker_datas.push(Arc::new(bd.clone()));
                for a in bd.broker_addrs.values() {
                    if let Some(f) = self.filters.get(&(bd.cluster.to_string(), a.clone())) {
                        r.filter_server_table.insert(a.clone(), f.clone());
                    }
                }
            }
        }
        if r.broker_datas.is_empty() {
            return None;
        }
        let headless = |b: &BrokerData| !b.broker_addrs.is_empty() && !b.broker_addrs.contains_key(&0);
        if acting && r.broker_datas.iter().any(|b| headless(b)) {
            let qds = r.queue_datas.clone();
            for b in r.broker_datas.iter_mut() {
                if headless(b) && b.enable_acting_master {
                    let q = qds.iter().find(|q| q.broker_name == b.broker_name);
                    if q.is_some_and(|q| q.perm & 2 == 0) {
                        let mut nb = (**b).clone();
                        let (_, a) = nb.broker_addrs.pop_first().unwrap();
                        nb.broker_addrs.insert(0, a);
                        *b = Arc::new(nb);
                    }
                }
            }
        }
        Some(r)
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.brokers.iter().map(|(k, v)| (Arc::from(k.as_str()), Arc::new(v.clone()))).collect(),
            cluster_addr_table: self
                .clusters
                .iter()
                .map(|(k, v)| (Arc::from(k.as_str()), v.iter().map(|n| Arc::from(n.as_str())).collect()))
                .collect(),
        }
    }
}
