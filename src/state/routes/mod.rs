//! The route tables (Java `RouteInfoManager`): what brokers registered, and every operation on it.
//!
//! `RouteTables` is owned by the writer thread. `RouteView` is its immutable, cheaply cloned read side: persistent
//! maps, so taking a view is O(1) and an operation that changes k topics costs about O(k log n).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use imbl::{OrdMap, OrdSet, Vector};

use crate::model::{
    BrokerData, BrokerId, DataVersion, NameSample, RegisterBrokerBody, TopicConfig, TopicKey, TopicQueueMappingInfo,
};

use super::liveness::{LiveTable, DEFAULT_HEARTBEAT_TIMEOUT_MS};
use super::ConnId;

mod census;
mod chunks;
mod export;
pub mod java_order;
mod names;
mod query;
mod register;
mod same;
mod topic_entry;
mod unregister;

#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
mod tests;

pub(crate) use census::WriteCensus;
pub(crate) use export::ExportCut;
pub(crate) use names::{NameId, Names};
pub(crate) use query::filter_by_zone;
pub use query::{RouteKin, RouteStamp};
pub(crate) use same::MarkInfo;
pub(crate) use topic_entry::{Queue, Shapes, TopicEntry};

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

impl RegisterBroker {
    /// A 5.x broker's registration (`enableActingMaster=false`, default heartbeat timeout, no zone, no filter
    /// servers, no static-topic mappings, `haServerAddr` = the address) of `topic_configs` at `data_version`: the
    /// one builder unit tests, benches, the perf harness and the integration tests start from; change fields after.
    /// [`crate::registration::encode_register_as`] turns it into the request a broker sends.
    pub fn new(
        cluster: &str,
        name: &str,
        id: BrokerId,
        addr: &str,
        topic_configs: Vec<TopicConfig>,
        data_version: DataVersion,
    ) -> RegisterBroker {
        RegisterBroker {
            cluster_name: cluster.into(),
            broker_addr: addr.into(),
            broker_name: name.into(),
            broker_id: id,
            ha_server_addr: addr.into(),
            zone_name: None,
            heartbeat_timeout_ms: None,
            enable_acting_master: Some(false),
            body: RegisterBrokerBody {
                data_version,
                topic_configs,
                mapping_infos: Vec::new(),
                filter_server_list: None,
            },
            conn: None,
        }
    }

    /// The heartbeat timeout the live entry of this registration gets: `heartbeatTimeoutMillis`, else Java's
    /// 120 s default. The warm-restart replay judges a saved broker by the same rule.
    pub(crate) fn timeout_ms(&self) -> i64 {
        self.heartbeat_timeout_ms.unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT_MS)
    }
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

/// Java's remark when a registration is refused (§5.3 step 7).
pub(crate) const REGISTER_FAILED: &str = "register broker failed";

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
pub(crate) enum EvictionCause {
    Unregistered,
    Expired,
    ConnectionClosed,
}

impl EvictionCause {
    /// As the audit trail and the metrics say it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            EvictionCause::Unregistered => "unregistered",
            EvictionCause::Expired => "expired",
            EvictionCause::ConnectionClosed => "connection_closed",
        }
    }
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
pub(crate) enum UnitTopicKind {
    Unit,
    HasUnitSub,
    HasUnitSubUnUnit,
}

/// One topic's static-topic mappings: bname → info.
pub(crate) type MappingEntry = BTreeMap<String, Arc<TopicQueueMappingInfo>>;

/// A broker name's topics, sorted (`RouteView::broker_topics`).
pub(crate) type BrokerTopics = Arc<[Arc<str>]>;

/// brokerAddr → filter servers, for one cluster.
pub(crate) type FilterServers = OrdMap<Arc<str>, Arc<Vec<String>>>;

/// The writer-owned tables: the readable `RouteView` being edited in place (persistent maps, so edits copy only
/// the touched paths) and the writer-private live table.
#[derive(Clone, Debug, Default)]
pub struct RouteTables {
    view: RouteView,
    live: LiveTable,
    generation: u64,
    /// name → id for `view.names`.
    interner: names::Interner,
    /// The topic shapes built by the current operation, so topics of one shape share the next (`topic_entry`).
    shapes: Shapes,
    /// brokerAddr → how its last recognisable body was applied (`same`).
    records: std::collections::HashMap<Arc<str>, same::Record, ahash::RandomState>,
    /// brokerName → bumped whenever a queue filed under the name is put or removed (`same`).
    epochs: std::collections::HashMap<Arc<str>, u64, ahash::RandomState>,
    /// What the operations since the last `take_changes` did to topics, for the change feed.
    changes: TopicChanges,
    /// Changes to `view.broker_topics` not merged yet: brokerName → (topic, whether the name now has a queue of it).
    /// Merged once at the end of each operation (`merge_broker_topics`): a registration filing k topics rebuilds its
    /// broker's list once, instead of k B-tree inserts.
    /// Each name's moves in the order they were made; a topic may appear more than once, the last one counts.
    topic_moves: HashMap<Arc<str>, Vec<TopicMove>, ahash::RandomState>,
}

/// A topic a broker name gained (`true`) or lost a queue of.
type TopicMove = (Arc<str>, bool);

/// What `put_queue_as` did.
enum Put {
    Unchanged,
    /// The name's queue of the topic changed.
    Updated,
    /// The name is new to the topic (its key).
    Added(Arc<str>),
}

/// Topic-level changes, sampled (`NameSample` keeps a few names and the exact count): topics that gained or lost a
/// queue of a broker name, kept one with changed settings, or appeared in or left the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TopicChanges {
    pub added: NameSample,
    pub removed: NameSample,
    pub updated: usize,
    pub created: NameSample,
    pub deleted: NameSample,
}

/// The immutable read side. Every field is a persistent map: cloning is O(1) and shares everything.
#[derive(Clone, Debug, Default)]
pub struct RouteView {
    /// topic → brokerName → QueueData (`topicQueueTable`).
    topics: OrdMap<TopicKey, Arc<TopicEntry>>,
    /// The broker names `topics` refers to by id.
    names: Names,
    /// brokerName → topics with a QueueData of it: the reverse of `topics`, so broker-wide operations and
    /// GET_TOPICS_BY_CLUSTER visit only the broker's topics. A sorted slice per name, 16 bytes per entry (a B-tree
    /// set took ~48–63: half-full nodes of 64 keys and 65 child pointers), rebuilt once per operation that changes
    /// it (`RouteTables::merge_broker_topics`).
    broker_topics: OrdMap<Arc<str>, BrokerTopics>,
    /// brokerName → BrokerData (`brokerAddrTable`), shared by every route that names it.
    brokers: OrdMap<Arc<str>, Arc<BrokerData>>,
    /// `brokers` again, indexed by the names' ids (the same `Arc`s): a route finds its topic's brokers from the
    /// ids in its entry by index, without comparing names (the string compares of those lookups were the largest
    /// part of a big route's build).
    brokers_by_id: Vector<Option<Arc<BrokerData>>>,
    /// clusterName → broker names (`clusterAddrTable`).
    clusters: OrdMap<Arc<str>, OrdSet<Arc<str>>>,
    /// clusterName → brokerAddr → filter servers (`filterServerTable`).
    filter_servers: OrdMap<Arc<str>, FilterServers>,
    /// topic → mappings (`topicQueueMappingInfoTable`); never cleaned, as in Java.
    mappings: OrdMap<Arc<str>, Arc<MappingEntry>>,
    /// The most broker groups `brokers` ever held: Java's `brokerAddrTable` grows with them and never shrinks, and
    /// its size decides its iteration order (`java_order`).
    brokers_peak: usize,
    /// brokerName → when it entered `brokers` (a counter): Java's `brokerAddrTable` lists names sharing a bin in
    /// insertion order; a name removed and added again goes last.
    brokers_since: OrdMap<Arc<str>, u64>,
    /// The next `brokers_since` value.
    brokers_added: u64,
    /// brokerAddr → the mark of its last recognisable registration body, for the decoder (`same`).
    marks: OrdMap<Arc<str>, Arc<MarkInfo>>,
}

impl RouteTables {
    pub fn new() -> Self {
        Self::default()
    }

    /// O(1): the current state as an immutable view.
    pub fn view(&self) -> RouteView {
        debug_assert!(self.topic_moves.is_empty(), "an operation left broker_topics unmerged");
        self.view.clone()
    }

    /// Bumped whenever the readable view changed; heartbeats, QUERY_DATA_VERSION and re-registrations that changed
    /// nothing visible leave it alone, so the writer publishes only when it moved.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Takes the topic changes made since the last call.
    pub(crate) fn take_changes(&mut self) -> TopicChanges {
        std::mem::take(&mut self.changes)
    }

    /// Every live entry: (cluster, address, liveness), in no particular order.
    pub(crate) fn live_entries(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, &super::liveness::BrokerLive)> {
        self.live.iter()
    }

    /// Whether `addr` of `cluster` has a live entry.
    pub(crate) fn is_live(&self, cluster: &str, addr: &str) -> bool {
        self.live.get(cluster, addr).is_some()
    }

    /// Number of live brokers (metrics, logs).
    pub fn live_broker_count(&self) -> usize {
        self.live.len()
    }

    fn bump(&mut self) {
        self.generation += 1;
    }

    /// Puts `name`'s queue of `topic` unless an equal one is there; only then is the topic's entry replaced.
    fn put_queue(&mut self, topic: &Arc<str>, name: &Arc<str>, queue: Queue) {
        let id = self.interner.intern(&mut self.view.names, name);
        match self.put_queue_as(&TopicKey::new(topic.clone()), id, queue, false) {
            Put::Unchanged => return,
            Put::Updated => {}
            Put::Added(key) => self.move_topic(name, key, true),
        }
        self.bump_epoch(name);
    }

    /// `put_queue` for an interned name, leaving its epoch and `topic_moves` to the caller: a registration filing
    /// k topics interns its name and bumps its epoch once, and hands over its k moves at once (`move_topics`).
    /// The topic comes as a full key, so that the descent compares inline heads; a new topic keeps a copy of it.
    fn put_queue_as(&mut self, probe: &TopicKey, id: NameId, queue: Queue, likely_change: bool) -> Put {
        if likely_change {
            return self.put_queue_in_place(probe, id, queue);
        }
        let names = &self.view.names;
        let (key, (entry, new_name)) = match self.view.topics.get_key_value(probe) {
            Some((k, e)) => match e.put(id, queue, names, &mut self.shapes) {
                Some(changed) => (k.clone(), changed),
                None => return Put::Unchanged,
            },
            None => return self.put_new_topic(probe.clone(), id, queue),
        };
        self.view.topics.insert(key.clone(), Arc::new(entry));
        self.count_put(key.name().clone(), new_name)
    }

    /// `put_queue_as` in one descent of the topic map instead of two (a lookup, then an insert): the path to the
    /// topic is made the writer's own on the way down (`get_prev_mut` finds the key itself when present), which is
    /// wasted on a topic whose queue turns out unchanged — so only for puts that almost always change something
    /// (a broker's first registration, the bulk of a cold load).
    fn put_queue_in_place(&mut self, probe: &TopicKey, id: NameId, queue: Queue) -> Put {
        let names = &self.view.names;
        let (key, new_name) = match self.view.topics.get_prev_mut(probe) {
            Some((k, e)) if k == probe => match e.put(id, queue, names, &mut self.shapes) {
                Some((entry, new_name)) => {
                    *e = Arc::new(entry);
                    (k.name().clone(), new_name)
                }
                None => return Put::Unchanged,
            },
            _ => return self.put_new_topic(probe.clone(), id, queue),
        };
        self.count_put(key, new_name)
    }

    fn put_new_topic(&mut self, key: TopicKey, id: NameId, queue: Queue) -> Put {
        self.changes.created.push(key.name());
        let entry = self.shapes.first(id, queue);
        let name = key.name().clone();
        self.view.topics.insert(key, Arc::new(entry));
        self.count_put(name, true)
    }

    /// Counts a put that changed `key`'s entry.
    fn count_put(&mut self, key: Arc<str>, new_name: bool) -> Put {
        self.bump();
        if new_name {
            self.changes.added.push(&key);
            Put::Added(key)
        } else {
            self.changes.updated += 1;
            Put::Updated
        }
    }

    /// Removes one queue, dropping the topic when it empties. The topic comes as a full key, so that the descent
    /// compares inline heads (a broker's eviction removes one per topic it had).
    fn remove_queue(&mut self, topic: &TopicKey, broker_name: &str) {
        let Some((key, entry)) = self.view.topics.get_key_value(topic) else {
            return;
        };
        let Some(entry) = entry.without(broker_name, &self.view.names, &mut self.shapes) else {
            return;
        };
        let key = key.clone();
        self.bump_epoch(broker_name);
        self.changes.removed.push(key.name());
        if entry.is_empty() {
            self.changes.deleted.push(key.name());
            self.view.topics.remove(topic);
        } else {
            self.view.topics.insert(key.clone(), Arc::new(entry));
        }
        let key = key.name().clone();
        let name = match self.view.broker_topics.get_key_value(broker_name) {
            Some((name, _)) => name.clone(),
            None => Arc::from(broker_name),
        };
        self.move_topic(&name, key, false);
        self.bump();
    }

    /// Records that `name` gained (`true`) or lost a queue of `topic`, for `merge_broker_topics`.
    fn move_topic(&mut self, name: &Arc<str>, topic: Arc<str>, present: bool) {
        self.move_topics(name, std::iter::once((topic, present)));
    }

    /// `move_topic` for many topics of one name.
    fn move_topics(&mut self, name: &Arc<str>, moves: impl IntoIterator<Item = TopicMove>) {
        match self.topic_moves.get_mut(&**name) {
            Some(pending) => pending.extend(moves),
            None => {
                self.topic_moves.insert(name.clone(), moves.into_iter().collect());
            }
        }
    }

    /// Merges the recorded moves into `view.broker_topics`: per broker name one pass over its sorted topics and its
    /// sorted moves, the last move of a topic deciding. Every operation that puts or removes queues ends with it,
    /// so it also lets go of the shapes the operation built.
    fn merge_broker_topics(&mut self) {
        self.shapes.clear();
        for (name, mut moves) in std::mem::take(&mut self.topic_moves) {
            // Stable: a topic's moves stay in the order they were made, so the last of each run is the latest.
            moves.sort_by(|a, b| a.0.cmp(&b.0));
            let old: &[Arc<str>] = self.view.broker_topics.get(&*name).map_or(&[], |l| &**l);
            let mut merged: Vec<Arc<str>> = Vec::with_capacity(old.len() + moves.len());
            let mut old_iter = old.iter().peekable();
            let mut moves = moves.into_iter().peekable();
            while let Some((topic, mut present)) = moves.next() {
                while let Some((_, later)) = moves.next_if(|(t, _)| *t == topic) {
                    present = later;
                }
                while let Some(o) = old_iter.next_if(|o| ***o < *topic) {
                    merged.push(o.clone());
                }
                old_iter.next_if(|o| ***o == *topic);
                if present {
                    merged.push(topic);
                }
            }
            merged.extend(old_iter.cloned());
            if merged.is_empty() {
                self.view.broker_topics.remove(&*name);
            } else {
                self.view.broker_topics.insert(name, merged.into());
            }
        }
    }

    /// Rewrites the perm of every queue of a broker name; returns the number of topics that have one.
    fn map_perm_of_broker(&mut self, broker_name: &str, f: impl Fn(i32) -> i32) -> i32 {
        let topics = self.topics_of_broker(broker_name);
        let Some(name) = self.view.broker_topics.get_key_value(broker_name).map(|(k, _)| k.clone()) else {
            return 0;
        };
        for t in topics.iter() {
            let key = TopicKey::new(t.clone());
            if let Some(q) = self.view.topics.get(&key).and_then(|e| e.queue(broker_name, &self.view.names)) {
                let perm = f(q.perm);
                if perm != q.perm {
                    self.put_queue(t, &name, Queue { perm, ..q });
                }
            }
        }
        topics.len() as i32
    }

    /// The broker name's topics (merging pending moves first): a shared, unchanging list, O(1).
    fn topics_of_broker(&mut self, broker_name: &str) -> BrokerTopics {
        self.merge_broker_topics();
        self.view.broker_topics.get(broker_name).cloned().unwrap_or_else(|| Arc::new([]))
    }

    /// Stores a BrokerData unless an equal one is there.
    fn put_broker(&mut self, bd: BrokerData) {
        if self.view.brokers.get(&*bd.broker_name).map(|b| &**b) == Some(&bd) {
            return;
        }
        let name = bd.broker_name.clone();
        let bd = Arc::new(bd);
        let id = self.interner.intern(&mut self.view.names, &name) as usize;
        if self.view.brokers_by_id.len() <= id {
            self.view.brokers_by_id.extend(std::iter::repeat_n(None, id + 1 - self.view.brokers_by_id.len()));
        }
        self.view.brokers_by_id.set(id, Some(bd.clone()));
        if self.view.brokers.insert(name.clone(), bd).is_none() {
            self.view.brokers_peak = self.view.brokers_peak.max(self.view.brokers.len());
            self.view.brokers_since.insert(name, self.view.brokers_added);
            self.view.brokers_added += 1;
        }
        self.bump();
    }

    fn remove_broker(&mut self, broker_name: &str) {
        if self.view.brokers.remove(broker_name).is_some() {
            let id = self.interner.id(broker_name).expect("a stored BrokerData's name is interned");
            self.view.brokers_by_id.set(id as usize, None);
            self.view.brokers_since.remove(broker_name);
            self.bump();
        }
    }

    fn add_to_cluster(&mut self, cluster: &Arc<str>, broker_name: &Arc<str>) {
        if self.view.clusters.get(&**cluster).is_some_and(|s| s.contains(&**broker_name)) {
            return;
        }
        self.view.clusters.entry(cluster.clone()).or_default().insert(broker_name.clone());
        self.bump();
    }

    /// Removes a broker name from a cluster, and the cluster when it empties.
    fn remove_from_cluster(&mut self, cluster: &str, broker_name: &str) {
        let Some(set) = self.view.clusters.get_mut(cluster) else {
            return;
        };
        if set.remove(broker_name).is_none() {
            return;
        }
        if set.is_empty() {
            self.view.clusters.remove(cluster);
        }
        self.bump();
    }

    fn set_filter_servers(&mut self, cluster: &Arc<str>, addr: &Arc<str>, list: Vec<String>) {
        let cur = self.view.filter_servers.get(&**cluster).and_then(|m| m.get(&**addr));
        if cur.is_some_and(|l| **l == list) {
            return;
        }
        self.view.filter_servers.entry(cluster.clone()).or_default().insert(addr.clone(), Arc::new(list));
        self.bump();
    }

    fn remove_filter_servers(&mut self, cluster: &str, addr: &str) {
        let Some(m) = self.view.filter_servers.get_mut(cluster) else {
            return;
        };
        if m.remove(addr).is_none() {
            return;
        }
        if m.is_empty() {
            self.view.filter_servers.remove(cluster);
        }
        self.bump();
    }

    fn put_mapping(&mut self, topic: &str, bname: String, info: TopicQueueMappingInfo) {
        let cur = self.view.mappings.get(topic);
        if cur.and_then(|m| m.get(&bname)).is_some_and(|i| **i == info) {
            return;
        }
        let mut entry = cur.map(|m| MappingEntry::clone(m)).unwrap_or_default();
        entry.insert(bname, Arc::new(info));
        self.view.mappings.insert(Arc::from(topic), Arc::new(entry));
        self.bump();
    }
}

impl RouteView {
    /// The mark of the last registration body of the broker at `addr` in `cluster`, if it can be recognised.
    pub(crate) fn body_mark(&self, cluster: &str, addr: &str) -> Option<&MarkInfo> {
        self.marks.get(addr).map(|m| &**m).filter(|m| &*m.cluster == cluster)
    }

    /// The broker groups in Java's iteration order of `brokerAddrTable` (see `java_order`).
    fn brokers_in_java_order(&self) -> Vec<&Arc<BrokerData>> {
        let mut groups: Vec<&Arc<BrokerData>> = self.brokers.values().collect();
        groups.sort_by_cached_key(|bd| {
            let since = self.brokers_since.get(&*bd.broker_name).copied().unwrap_or(u64::MAX);
            (java_order::broker_table_bin(&bd.broker_name, self.brokers_peak), since)
        });
        groups
    }

    /// The identity of a topic's entry, to check that unrelated topics were not rebuilt.
    #[doc(hidden)]
    #[cfg(test)]
    pub(crate) fn topic_entry_ptr(&self, topic: &str) -> Option<*const ()> {
        self.topics.get(topic).map(|e| Arc::as_ptr(e) as *const ())
    }

    /// The identity of a broker group's record.
    #[doc(hidden)]
    #[cfg(test)]
    pub(crate) fn broker_data_ptr(&self, broker_name: &str) -> Option<*const ()> {
        self.brokers.get(broker_name).map(|b| Arc::as_ptr(b) as *const ())
    }
}
