//! Tests of the controller core. `java_scenarios` and `heartbeat` translate Java's own tests (named in each) with
//! their expected values, so our rules are checked against Java's, not against our reading of it; `props` checks
//! what replication relies on over random request sequences; `elect_order` checks the election order.

mod elect_order;
mod heartbeat;
mod java_scenarios;
mod props;
mod rules;

use std::collections::{BTreeMap, BTreeSet};

use super::event::BrokerId;
use super::liveness::{LiveFacts, Liveness};
use super::replicas::ReplicasInfo;
use super::request::ControllerResult;

/// Java `ControllerTestBase`.
const CLUSTER: &str = "cluster-a";
const GROUP: &str = "broker-set-a";
const IP: [&str; 3] = ["127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002"];

/// What the log does with a leader's result: every node applies its events in order.
fn apply<T>(state: &mut ReplicasInfo, result: &ControllerResult<T>) {
    for event in &result.events {
        state.apply(event);
    }
}

fn all_alive(_: &str, _: &str, _: BrokerId) -> bool {
    true
}

/// A liveness fixed by the test: who is alive, and what they reported.
#[derive(Clone, Debug, Default)]
struct Fixed {
    alive: BTreeSet<BrokerId>,
    facts: BTreeMap<BrokerId, LiveFacts>,
}

impl Liveness for Fixed {
    fn is_alive(&self, _: &str, _: &str, id: BrokerId) -> bool {
        self.alive.contains(&id)
    }

    fn live_facts(&self, _: &str, _: &str, id: BrokerId) -> Option<LiveFacts> {
        self.facts.get(&id).copied()
    }
}
