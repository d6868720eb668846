//! RocketMQ vocabulary: the route-table types with the Java names (`TopicRouteData`, `BrokerData`, `QueueData`,
//! `DataVersion`, `TopicConfig`, …). Plain data, no behaviour beyond small helpers; `protocol` turns them into bytes,
//! `state` keeps them in tables.

use std::collections::BTreeMap;
use std::sync::Arc;

mod topic_key;

pub(crate) use topic_key::TopicKey;

/// Broker id inside a group: 0 is the master, others are slaves.
pub(crate) type BrokerId = i64;

/// `PermName` bits.
pub(crate) mod perm {
    pub(crate) const READ: i32 = 4;
    pub(crate) const WRITE: i32 = 2;
    pub(crate) const INHERIT: i32 = 1;
    /// READ | WRITE, what ADD_WRITE_PERM_OF_BROKER sets.
    pub(crate) const READ_WRITE: i32 = READ | WRITE;
}

/// `TopicSysFlag` bits.
pub(crate) mod sys_flag {
    pub(crate) const UNIT: i32 = 1;
    pub(crate) const UNIT_SUB: i32 = 2;
}

/// KV namespace that holds order-topic configuration (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub(crate) const NAMESPACE_ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// Topics with this prefix are never rewritten by the acting-master logic.
pub(crate) const SYNC_BROKER_MEMBER_TOPIC_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// `DataVersion`: equality is all three fields (a missing `stateVersion` is 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataVersion {
    pub counter: i64,
    pub state_version: i64,
    pub timestamp: i64,
}

/// The part of a broker's `TopicConfig` the name server uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicConfig {
    /// The route tables' key, built where the body is decoded: the writer looks the topic up by it without touching
    /// the name's bytes or count on its own core, and a new topic keeps it.
    pub topic_name: TopicKey,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

impl TopicConfig {
    /// Java's defaults for the fields a body leaves out (the `TopicConfig` constructor).
    pub(crate) const DEFAULT_READ_QUEUE_NUMS: i32 = 16;
    pub(crate) const DEFAULT_WRITE_QUEUE_NUMS: i32 = 16;
    pub(crate) const DEFAULT_PERM: i32 = perm::READ_WRITE;
    pub(crate) const DEFAULT_TOPIC_SYS_FLAG: i32 = 0;

    pub fn with_defaults(topic_name: impl Into<TopicKey>) -> Self {
        TopicConfig {
            topic_name: topic_name.into(),
            read_queue_nums: Self::DEFAULT_READ_QUEUE_NUMS,
            write_queue_nums: Self::DEFAULT_WRITE_QUEUE_NUMS,
            perm: Self::DEFAULT_PERM,
            topic_sys_flag: Self::DEFAULT_TOPIC_SYS_FLAG,
        }
    }
}

/// `QueueData`: one broker group's queues of one topic.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueueData {
    pub broker_name: Arc<str>,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

/// `BrokerData`: one broker group (a master and its slaves) and the addresses of its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerData {
    pub cluster: Arc<str>,
    pub broker_name: Arc<str>,
    /// brokerId → `ip:port`; Java's `HashMap<Long,String>` iterates small ids in order, so a sorted map matches.
    pub broker_addrs: BTreeMap<BrokerId, String>,
    pub zone_name: Option<String>,
    pub enable_acting_master: bool,
}

impl BrokerData {
    /// The address of the smallest broker id, if any (Java `selectBrokerAddr` prefers the master = smallest).
    pub(crate) fn min_broker(&self) -> Option<(BrokerId, &str)> {
        self.broker_addrs.iter().next().map(|(id, a)| (*id, a.as_str()))
    }
}

/// `TopicQueueMappingInfo` (static topics, 5.x).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicQueueMappingInfo {
    pub topic: Option<String>,
    pub scope: Option<String>,
    pub total_queues: i32,
    pub bname: Option<String>,
    pub epoch: i64,
    pub dirty: bool,
    /// Java `ConcurrentMap<Integer,Integer>`; `None` when the body had no such key.
    pub curr_id_map: Option<BTreeMap<i32, i32>>,
}

/// A decoded `RegisterBrokerBody` (JSON or zlib form), reduced to what the name server uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegisterBrokerBody {
    pub data_version: DataVersion,
    /// In body order; the route is keyed by `topic_name`, not by the JSON map key.
    pub topic_configs: Vec<TopicConfig>,
    /// (topic, info): JSON map key, or the info's own `topic` field in the zlib form.
    pub mapping_infos: Vec<(String, TopicQueueMappingInfo)>,
    /// `None` when the body had no `filterServerList` key.
    pub filter_server_list: Option<Vec<String>>,
}

/// Where a broker's last JSON registration body kept its DataVersion, and a digest (XXH3-128) of every other byte:
/// enough to recognise the next body as the same topic table at a new DataVersion without decoding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyMark {
    /// Offset of the wrapper's `dataVersion` value.
    pub dv_start: u32,
    /// Digest of the offset, the bytes before the value and the bytes after it.
    pub digest: u128,
}

/// The seed of the digests that recognise a broker's bodies (`BodyMark`) and its runs of topics
/// (`crate::state::routes::chunks`): random per process, so that bodies cannot be crafted to collide from outside it.
pub(crate) fn digest_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new().build_hasher().finish()
    })
}

/// A registration body found equal, outside its DataVersion, to the one marked `mark`: `RegisterBroker::body`
/// then holds only the DataVersion, and `raw` is kept in case the writer has to decode it after all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SameBody {
    pub mark: BodyMark,
    pub raw: bytes::Bytes,
    pub compressed: bool,
    pub version: i32,
    /// Topics in the body (as recorded when it was last decoded).
    pub topics: usize,
}

/// `TopicRouteData`, the answer to GET_ROUTEINFO_BY_TOPIC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicRouteData {
    pub queue_datas: Vec<QueueData>,
    pub broker_datas: Vec<Arc<BrokerData>>,
    /// broker address → filter-server addresses; always written (`{}` when empty).
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    pub order_topic_conf: Option<String>,
    /// brokerName → mapping info; `None` omits the key.
    pub topic_queue_mapping_by_broker: Option<BTreeMap<String, Arc<TopicQueueMappingInfo>>>,
}

/// `ClusterInfo`, the answer to GET_BROKER_CLUSTER_INFO.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// brokerName → BrokerData.
    pub broker_addr_table: BTreeMap<Arc<str>, Arc<BrokerData>>,
    /// clusterName → broker names.
    pub cluster_addr_table: BTreeMap<Arc<str>, Vec<Arc<str>>>,
}

/// `BrokerMemberGroup` inside `GetBrokerMemberGroupResponseBody` (901).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BrokerMemberGroup {
    pub cluster: Option<String>,
    pub broker_name: Option<String>,
    pub broker_addrs: BTreeMap<BrokerId, String>,
}

/// `TopicList` (206, 224, 304, 311–313).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicList {
    pub topic_list: Vec<Arc<str>>,
    pub broker_addr: Option<String>,
}

/// Most names a `NameSample` keeps; its count stays exact.
pub(crate) const NAMES_KEPT: usize = 16;

/// A sample of names (topics) with their exact count: what the change feed lists for a change that may touch
/// thousands of topics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NameSample {
    pub names: Vec<Arc<str>>,
    pub count: usize,
}

impl NameSample {
    pub(crate) fn push(&mut self, name: &Arc<str>) {
        if self.names.len() < NAMES_KEPT {
            self.names.push(name.clone());
        }
        self.count += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }
}
