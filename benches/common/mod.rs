//! Shared fixtures for the criterion benches: registrations and pre-filled route tables.
#![allow(dead_code)]

use std::time::Duration;

use criterion::Criterion;
use namesrv::model::{DataVersion, TopicConfig};
use namesrv::state::routes::{RegisterBroker, RouteSettings};
use namesrv::state::RouteTables;

/// Short runs: `cargo bench` over every target should finish in a few minutes on a busy two-core machine.
pub fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args()
}

pub fn topic_name(i: usize) -> String {
    format!("perf-topic-{i:06}")
}

/// Topic configs in the order given (with `topic_name`'s names in index order, name order); `as_sent` gives the
/// order a Java broker sends them in.
pub fn topic_configs(names: impl IntoIterator<Item = String>, perm: i32) -> Vec<TopicConfig> {
    names.into_iter().map(|n| TopicConfig { perm, ..TopicConfig::with_defaults(n) }).collect()
}

/// `topic_configs` in the order a Java broker writes them into its body (hash order).
pub fn as_sent(names: impl IntoIterator<Item = String>, perm: i32) -> Vec<TopicConfig> {
    let mut names: Vec<String> = names.into_iter().collect();
    namesrv::state::routes::java_order::java_broker_topic_order(&mut names);
    topic_configs(names, perm)
}

/// A 5.x master's REGISTER_BROKER for `topics` at DataVersion `counter`.
pub fn registration(cluster: &str, broker: &str, topics: Vec<TopicConfig>, counter: i64) -> RegisterBroker {
    let addr = format!("10.0.0.1:{}", 10000 + broker.len() * 7 + broker.bytes().map(usize::from).sum::<usize>());
    let dv = DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 + counter };
    RegisterBroker::new(cluster, broker, 0, &addr, topics, dv)
}

pub fn settings() -> RouteSettings {
    RouteSettings::default()
}

/// Tables holding `n` topics, registered by one "bulk" master.
pub fn tables_with(n: usize) -> RouteTables {
    let mut t = RouteTables::new();
    let req = registration("bulk-cluster", "bulk-broker", topic_configs((0..n).map(topic_name), 6), 1);
    t.register_broker(req, 0, settings()).expect("registered");
    assert_eq!(t.view().topic_count(), n);
    t
}

/// Tables where each of `brokers` masters (one cluster) hosts the same `n` (≥ 2: a new broker's one-topic
/// registration is refused) topics: routes with `brokers` groups.
pub fn tables_shared(n: usize, brokers: usize) -> RouteTables {
    let mut t = RouteTables::new();
    for b in 0..brokers {
        let req = registration("c0", &format!("broker-{b}"), topic_configs((0..n).map(topic_name), 6), 1);
        t.register_broker(req, 0, settings()).expect("registered");
    }
    t
}
