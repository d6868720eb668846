//! Reads on a `RouteView`: routes (§5.7), zone filtering (§5.8), cluster info and the topic lists.
//!
//! Java iterates hash maps; we answer in name order, which clients do not depend on and tests can rely on. Where
//! Java's iteration order decides *what* is answered (304's `brokerAddr`, the group an eviction takes an address
//! from), `java_order` reproduces it. Topic lists are Java `ConcurrentHashMap` key sets, whose order a Java client
//! does not keep (docs/compatibility.md, "Order of `topicList`").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::{
    perm, sys_flag, BrokerData, BrokerMemberGroup, ClusterInfo, TopicList, TopicRouteData,
    SYNC_BROKER_MEMBER_TOPIC_PREFIX,
};

use super::{FilterServers, MappingEntry, NameId, Queue, RouteView, TopicEntry, TopicKey, UnitTopicKind};

const MASTER_ID: i64 = 0;

/// What a topic's route is built from, held by reference, so a reader can keep an encoded route and later tell
/// in a few pointer compares whether it is still right (`RouteView::stamp_matches`). The writer replaces an entry,
/// a BrokerData or a cluster's filter-server map only when it changes, and the handles held here keep their
/// allocations from being reused, so equal pointers mean equal data.
#[derive(Clone, Debug)]
pub struct RouteStamp {
    entry: Arc<TopicEntry>,
    /// One per broker name of `entry`, in its order: its BrokerData (`None` if it has none) and its cluster's
    /// filter servers. Shared by the stamps of a kin (`stamp_like`).
    brokers: Arc<[BrokerStamp]>,
    mapping: Option<Arc<MappingEntry>>,
}

/// A broker name's BrokerData (`None` if it has none) and its cluster's filter servers.
type BrokerStamp = (Option<Arc<BrokerData>>, Option<FilterServers>);

/// Topics whose routes are built from the same things, and so are the same bytes: a route does not name its
/// topic. The topics a cluster's brokers all carry share one shape (`TopicEntry`) and, with the usual queue
/// settings, one queue; a reader keeps one encoded route for all of them (`RouteView::stamp_like`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RouteKin {
    /// The shape's address: a stamp holding the shape keeps it from being reused.
    shape: usize,
    queue: Queue,
}

/// A route built for this topic alone: its static-topic mapping, or the acting-master rewrite a broker-member topic
/// is spared.
fn own_route(topic: &str, support_acting_master: bool, mapping: Option<&Arc<MappingEntry>>) -> bool {
    mapping.is_some() || (support_acting_master && topic.starts_with(SYNC_BROKER_MEMBER_TOPIC_PREFIX))
}

impl RouteStamp {
    /// The address and size of the broker list this stamp may share with the others of its kin, for a cache that
    /// counts shared allocations once.
    pub(crate) fn shared_brokers(&self) -> (usize, usize) {
        (self.brokers.as_ptr() as usize, std::mem::size_of_val(&*self.brokers))
    }

    /// The kin of the route this stamp was taken of (with `support_acting_master` as then), unless that route was
    /// built for its topic alone or its queues differ between brokers.
    pub(crate) fn kin(&self, topic: &str, support_acting_master: bool) -> Option<RouteKin> {
        if own_route(topic, support_acting_master, self.mapping.as_ref()) {
            return None;
        }
        self.entry.kin().map(|(shape, queue)| RouteKin { shape, queue })
    }
}

fn same<T>(now: Option<&Arc<T>>, then: &Option<Arc<T>>) -> bool {
    match (now, then) {
        (Some(now), Some(then)) => Arc::ptr_eq(now, then),
        (None, None) => true,
        _ => false,
    }
}

impl RouteView {
    /// The BrokerData of the broker name with id `id`, as `brokers` holds it by name.
    pub(super) fn broker_by_id(&self, id: NameId) -> Option<&Arc<BrokerData>> {
        self.brokers_by_id.get(id as usize).and_then(Option::as_ref)
    }

    /// `topic`'s entry, found by a key built for the lookup: the descent then compares inline heads on the nodes'
    /// own cache lines (decision 0020). By `&str`, each compare follows a key's pointer to its name and calls
    /// `memcmp`: a cache miss per compare in a big table, a quarter of a big route's miss.
    fn entry(&self, topic: &str) -> Option<&Arc<TopicEntry>> {
        self.topics.get(&TopicKey::from(topic))
    }

    /// True when `route(topic, ..)` would build exactly what it built when `stamp` was taken.
    pub fn stamp_matches(&self, topic: &str, stamp: &RouteStamp) -> bool {
        let Some(entry) = self.entry(topic) else {
            return false;
        };
        // The same entry has the same broker names in the same order as when the stamp was taken.
        Arc::ptr_eq(entry, &stamp.entry)
            && self.brokers_match(entry, &stamp.brokers)
            && same(self.mappings.get(topic), &stamp.mapping)
    }

    /// True when the BrokerData and filter servers of `entry`'s broker names are the ones in `brokers`.
    fn brokers_match(&self, entry: &TopicEntry, brokers: &[BrokerStamp]) -> bool {
        entry.len() == brokers.len()
            && entry.ids().zip(brokers).all(|(id, (bd_then, fs_then))| {
                let bd = self.broker_by_id(id);
                same(bd, bd_then)
                    && match (bd.and_then(|bd| self.filter_servers.get(&*bd.cluster)), fs_then) {
                        (Some(now), Some(then)) => now.ptr_eq(then),
                        (None, None) => true,
                        _ => false,
                    }
            })
    }

    /// A stamp for `topic` taken from `like`'s, without building its route: `like` (asked for by `topic`'s kin)
    /// is the stamp of another topic's route, and that route is `topic`'s route now — the same shape (so the same
    /// broker names), the same queue, neither route built for its topic alone, and every BrokerData and
    /// filter-server map still the one `like` holds. `None` when any of that does not hold.
    pub fn stamp_like<'a>(
        &self,
        topic: &str,
        support_acting_master: bool,
        like: impl FnOnce(RouteKin) -> Option<&'a RouteStamp>,
    ) -> Option<RouteStamp> {
        let entry = self.entry(topic)?;
        if own_route(topic, support_acting_master, self.mappings.get(topic)) {
            return None;
        }
        let (shape, queue) = entry.kin()?;
        let like = like(RouteKin { shape, queue })?;
        let kin = like.mapping.is_none() && like.entry.same_route_as(entry) && self.brokers_match(entry, &like.brokers);
        kin.then(|| RouteStamp { entry: entry.clone(), brokers: like.brokers.clone(), mapping: None })
    }

    /// §5.7 including the acting-master rewrite when `support_acting_master`; no order conf, no zone filter.
    pub fn route(&self, topic: &str, support_acting_master: bool) -> Option<TopicRouteData> {
        self.route_built(topic, support_acting_master, None)
    }

    /// `route` and the stamp of what it was built from, in one pass over the topic's brokers: a route-cache miss
    /// needs both, and the name lookups, done once instead of twice, were the largest part of a 30-broker route.
    pub fn route_stamped(&self, topic: &str, support_acting_master: bool) -> Option<(TopicRouteData, RouteStamp)> {
        let mut stamp = None;
        let route = self.route_built(topic, support_acting_master, Some(&mut stamp))?;
        Some((route, stamp?))
    }

    /// `route`, filling `stamp` (when asked for) with what the route was built from, from the same lookups.
    fn route_built(
        &self,
        topic: &str,
        support_acting_master: bool,
        stamp: Option<&mut Option<RouteStamp>>,
    ) -> Option<TopicRouteData> {
        let entry = self.entry(topic)?;
        let mut route = TopicRouteData {
            queue_datas: entry.queues(&self.names).map(|(name, q)| q.data(name.clone())).collect(),
            ..TopicRouteData::default()
        };
        let mut brokers = Vec::new();
        let stamping = stamp.is_some();
        for id in entry.ids() {
            let bd = self.broker_by_id(id);
            let fs = bd.and_then(|bd| self.filter_servers.get(&*bd.cluster));
            if stamping {
                brokers.push((bd.cloned(), fs.cloned()));
            }
            let Some(bd) = bd else {
                continue;
            };
            route.broker_datas.push(bd.clone());
            // Java puts null lists for addresses without filter servers; fastjson omits them.
            if let Some(fs) = fs {
                for addr in bd.broker_addrs.values() {
                    if let Some(list) = fs.get(addr.as_str()) {
                        route.filter_server_table.insert(addr.clone(), (**list).clone());
                    }
                }
            }
        }
        let mapping = self.mappings.get(topic);
        if let Some(stamp) = stamp {
            *stamp = Some(RouteStamp { entry: entry.clone(), brokers: brokers.into(), mapping: mapping.cloned() });
        }
        if route.broker_datas.is_empty() {
            return None;
        }
        route.topic_queue_mapping_by_broker = mapping.map(|m| (**m).clone());
        if support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_TOPIC_PREFIX) {
            rewrite_acting_masters(&mut route);
        }
        Some(route)
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.brokers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            cluster_addr_table: self
                .clusters
                .iter()
                .map(|(c, names)| (c.clone(), names.iter().cloned().collect()))
                .collect(),
        }
    }

    /// 901: looked up by broker name only; `cluster`/`broker_name` echo the request.
    pub(crate) fn broker_member_group(&self, cluster: Option<&str>, broker_name: Option<&str>) -> BrokerMemberGroup {
        BrokerMemberGroup {
            cluster: cluster.map(str::to_owned),
            broker_name: broker_name.map(str::to_owned),
            broker_addrs: broker_name
                .and_then(|n| self.brokers.get(n))
                .map(|bd| bd.broker_addrs.clone())
                .unwrap_or_default(),
        }
    }

    pub fn all_topics(&self) -> TopicList {
        TopicList { topic_list: self.topics.keys().map(|k| k.name().clone()).collect(), broker_addr: None }
    }

    /// Topics with a QueueData of any broker name of the cluster, each once (Java may repeat a topic hosted by
    /// several of the cluster's groups).
    pub(crate) fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let mut topics: BTreeSet<Arc<str>> = BTreeSet::new();
        if let Some(names) = self.clusters.get(cluster) {
            for name in names {
                if let Some(ts) = self.broker_topics.get(name) {
                    topics.extend(ts.iter().cloned());
                }
            }
        }
        TopicList { topic_list: topics.into_iter().collect(), broker_addr: None }
    }

    /// 304: each cluster name followed by its broker names, and the smallest-id address of the first group, in
    /// Java's iteration order of `brokerAddrTable`, that has one (observed: with `surf-a`, `surf-b`, `surf-c`
    /// registered, Java 5.5.0 answers with `surf-b`'s address).
    pub(crate) fn system_topics(&self) -> TopicList {
        let mut topic_list = Vec::new();
        for (c, names) in &self.clusters {
            topic_list.push(c.clone());
            topic_list.extend(names.iter().cloned());
        }
        let broker_addr =
            self.brokers_in_java_order().into_iter().find_map(|bd| bd.min_broker().map(|(_, a)| a.to_owned()));
        TopicList { topic_list, broker_addr }
    }

    /// 311–313, each topic judged by its first QueueData in Java's order (`TopicEntry::java_first`).
    pub(crate) fn unit_topics(&self, kind: UnitTopicKind) -> TopicList {
        let keep = |flag: i32| {
            let unit = flag & sys_flag::UNIT != 0;
            let unit_sub = flag & sys_flag::UNIT_SUB != 0;
            match kind {
                UnitTopicKind::Unit => unit,
                UnitTopicKind::HasUnitSub => unit_sub,
                UnitTopicKind::HasUnitSubUnUnit => unit_sub && !unit,
            }
        };
        TopicList {
            topic_list: self
                .topics
                .iter()
                .filter(|(_, e)| e.java_first(&self.names).is_some_and(|(_, q)| keep(q.topic_sys_flag)))
                .map(|(t, _)| t.name().clone())
                .collect(),
            broker_addr: None,
        }
    }

    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    /// Every topic name, sorted (the web console's search).
    pub(crate) fn topic_names(&self) -> impl Iterator<Item = &Arc<str>> {
        self.topics.keys().map(TopicKey::name)
    }

    /// How many topics have a queue of `broker_name`.
    pub(crate) fn broker_topic_count(&self, broker_name: &str) -> usize {
        self.broker_topics.get(broker_name).map_or(0, |s| s.len())
    }

    /// The topics with a queue of `broker_name`, sorted.
    pub(crate) fn broker_topics(&self, broker_name: &str) -> &[Arc<str>] {
        self.broker_topics.get(broker_name).map_or(&[], |s| &s[..])
    }

    /// Topic-queue entries: one per (topic, broker group) QueueData. O(topics); for metrics scrapes only.
    pub fn queue_entry_count(&self) -> usize {
        self.topics.values().map(|e| e.len()).sum()
    }
}

/// §5.7: when some group of the route has no master, groups that enable acting master and whose queue data is not
/// writable show their smallest-id member as id 0.
fn rewrite_acting_masters(route: &mut TopicRouteData) {
    let headless = |bd: &BrokerData| !bd.broker_addrs.is_empty() && !bd.broker_addrs.contains_key(&MASTER_ID);
    if !route.broker_datas.iter().any(|bd| headless(bd)) {
        return;
    }
    // Java looks at the first QueueData of each group; none means no rewrite. Looked up once per group, not searched
    // per group: a route of many groups would otherwise cost their square on the reactor that answers it.
    let mut first_perm: HashMap<&str, i32> = HashMap::new();
    for qd in &route.queue_datas {
        first_perm.entry(&qd.broker_name).or_insert(qd.perm);
    }
    for bd in &mut route.broker_datas {
        if !headless(bd) || !bd.enable_acting_master {
            continue;
        }
        let read_only = first_perm.get(&*bd.broker_name).is_some_and(|p| p & perm::WRITE == 0);
        if read_only {
            let bd = Arc::make_mut(bd);
            if let Some((_, addr)) = bd.broker_addrs.pop_first() {
                bd.broker_addrs.insert(MASTER_ID, addr);
            }
        }
    }
}

/// §5.8: keep broker groups with no master or in `zone` (case-insensitive), drop the rest with their queue data and
/// filter servers.
pub(crate) fn filter_by_zone(route: &mut TopicRouteData, zone: &str) {
    let mut dropped: BTreeMap<Arc<str>, Arc<BrokerData>> = BTreeMap::new();
    route.broker_datas.retain(|bd| {
        let keep = !bd.broker_addrs.contains_key(&MASTER_ID)
            || bd.zone_name.as_deref().is_some_and(|z| java_equals_ignore_case(z, zone));
        if !keep {
            dropped.insert(bd.broker_name.clone(), bd.clone());
        }
        keep
    });
    route.queue_datas.retain(|qd| !dropped.contains_key(&qd.broker_name));
    for bd in dropped.values() {
        for addr in bd.broker_addrs.values() {
            route.filter_server_table.remove(addr);
        }
    }
}

/// Java `String.equalsIgnoreCase`: per UTF-16 unit, equal after upper- or lower-casing.
fn java_equals_ignore_case(a: &str, b: &str) -> bool {
    let (a, b): (Vec<u16>, Vec<u16>) = (a.encode_utf16().collect(), b.encode_utf16().collect());
    a.len() == b.len()
        && a.iter().zip(&b).all(|(&x, &y)| {
            if x == y {
                return true;
            }
            let (Some(cx), Some(cy)) = (char::from_u32(x.into()), char::from_u32(y.into())) else {
                return false;
            };
            let up = |c: char| c.to_uppercase().next().unwrap_or(c);
            let low = |c: char| c.to_lowercase().next().unwrap_or(c);
            up(cx) == up(cy) || low(up(cx)) == low(up(cy))
        })
}
