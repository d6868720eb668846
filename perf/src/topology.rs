//! Topologies: clusters of masters that each host all of their cluster's topics, installed on a server through one
//! kept-open connection (closing it would evict the brokers), and the churn bodies simulated brokers re-register.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use namesrv::model::{DataVersion, TopicConfig};
use namesrv::state::routes::java_order::java_broker_topic_order;
use namesrv::state::routes::RegisterBroker;

use crate::load::BrokerLoad;
use crate::wire::{register_body, BlockingConn, BrokerIdent};

#[derive(Clone, Copy, Debug)]
pub struct Topology {
    pub clusters: usize,
    pub brokers_per_cluster: usize,
    pub topics_per_cluster: usize,
}

impl Topology {
    pub fn entries(&self) -> usize {
        self.clusters * self.brokers_per_cluster * self.topics_per_cluster
    }
}

pub fn topic_names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:06}")).collect()
}

/// A cluster's topics in the order its brokers write them (`java_broker_topic_order`).
pub fn cluster_topics(c: usize, n: usize) -> Vec<String> {
    // A one-topic registration of a new broker is refused (§5.3 step 7): bodies always carry two or more.
    let mut names = topic_names(&format!("perf-c{c}"), n.max(2));
    java_broker_topic_order(&mut names);
    names
}

pub fn brokers(clusters: usize, per_cluster: usize) -> Vec<BrokerIdent> {
    let mut out = Vec::with_capacity(clusters * per_cluster);
    for c in 0..clusters {
        for b in 0..per_cluster {
            out.push(BrokerIdent {
                cluster: format!("perf-c{c}"),
                name: format!("perf-c{c}-b{b}"),
                addr: format!("10.{}.{}.{}:10911", c % 250, b / 250, b % 250 + 1),
            });
        }
    }
    out
}

/// The same registration as an in-process operation (for the ceiling's canned body).
pub fn register_broker_op(b: &BrokerIdent, topics: &[String]) -> RegisterBroker {
    let configs = topics.iter().map(|t| TopicConfig::with_defaults(t.as_str())).collect();
    let mut reg = RegisterBroker::new(
        &b.cluster,
        &b.name,
        0,
        &b.addr,
        configs,
        DataVersion { counter: 1, state_version: 0, timestamp: 1 },
    );
    reg.body.filter_server_list = Some(Vec::new());
    reg
}

/// A topology on a server; the registering connection stays open as long as this lives.
pub struct Installed {
    _conn: Option<BlockingConn>,
    pub brokers: Vec<BrokerIdent>,
    /// Per cluster: its topics.
    pub topics: Vec<Arc<Vec<String>>>,
}

impl Installed {
    /// The first `n` topics of every cluster, interleaved: what the query load asks for.
    pub fn query_topics(&self, n: usize) -> Arc<Vec<String>> {
        let mut out = Vec::new();
        for i in 0..n {
            for t in &self.topics {
                if let Some(x) = t.get(i) {
                    out.push(x.clone());
                }
            }
        }
        Arc::new(out)
    }

    /// Simulated brokers that re-register the installed brokers alternately with two bodies of different
    /// DataVersion, the second with `changed` topics read-only: each registration changes `changed` topics.
    pub fn churn(&self, changed: usize, interval: Duration) -> BrokerLoad {
        let bodies: Vec<Arc<Vec<Bytes>>> =
            self.topics.iter().map(|t| Arc::new(vec![register_body(t, 2, changed), register_body(t, 3, 0)])).collect();
        let per = self.brokers.len() / self.topics.len().max(1);
        BrokerLoad {
            brokers: self
                .brokers
                .iter()
                .enumerate()
                .map(|(i, b)| (b.clone(), bodies[i / per.max(1)].clone()))
                .collect(),
            interval,
        }
    }
}

/// The brokers and topics of `topo` without registering anything (simulated brokers register themselves).
pub fn planned(topo: Topology) -> Installed {
    let topics = (0..topo.clusters).map(|c| Arc::new(cluster_topics(c, topo.topics_per_cluster))).collect();
    Installed { _conn: None, brokers: brokers(topo.clusters, topo.brokers_per_cluster), topics }
}

/// Registers every broker of `topo` once (DataVersion 1, all topics read-write).
pub fn install(addr: SocketAddr, topo: Topology) -> Result<Installed, String> {
    install_clusters(addr, topo, 0..topo.clusters)
}

/// Registers the brokers of the given clusters of `topo` only.
pub fn install_clusters(
    addr: SocketAddr,
    topo: Topology,
    clusters: std::ops::Range<usize>,
) -> Result<Installed, String> {
    let mut conn = BlockingConn::connect(addr, Duration::from_secs(5)).map_err(|e| format!("connect {addr}: {e}"))?;
    let brokers = brokers(topo.clusters, topo.brokers_per_cluster);
    let mut topics = Vec::new();
    for c in clusters {
        let t = Arc::new(cluster_topics(c, topo.topics_per_cluster));
        let body = register_body(&t, 1, 0);
        for b in &brokers[c * topo.brokers_per_cluster..(c + 1) * topo.brokers_per_cluster] {
            let f = conn.register(b, body.clone()).map_err(|e| format!("register {}: {e}", b.name))?;
            if f.code != 0 {
                return Err(format!("register {} answered code {}", b.name, f.code));
            }
        }
        topics.push(t);
    }
    Ok(Installed { _conn: Some(conn), brokers, topics })
}

#[cfg(test)]
mod tests {
    #[test]
    fn topics_come_in_a_java_broker_s_bin_order() {
        // The first of a 10k-topic cluster's names as Java 17 iterates them after putting them in name order into
        // `new ConcurrentHashMap<>(1024)` (16,384 bins by then). Over all 10,000, 9,529 positions match: a resize
        // can reorder a bin.
        let names = super::cluster_topics(0, 10_000);
        let java = ["perf-c0-003625", "perf-c0-004956", "perf-c0-003626", "perf-c0-004957", "perf-c0-003623"];
        assert_eq!(names[..5], java);
    }
}
