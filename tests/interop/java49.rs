//! Interop with real Apache RocketMQ 4.9.x software: broker 4.9.7 (the newest 4.9 broker on Maven Central;
//! 4.9.8 was never published there), mqadmin and Java client 4.9.8, with our `mqnamesrv` as the name server.
//! Needs Java 17+ and Maven; see `docs/interop.md`. Ignored: run with `cargo test -- --ignored`.

use crate::support;

use support::broker::BROKER_49;
use support::interop::{admin_flow, core_flow, serial, JavaPeers};
use support::java::JAVA_49;

const PEERS: JavaPeers = JavaPeers { broker: BROKER_49, tools: JAVA_49, client: JAVA_49 };

#[test]
#[ignore = "real peer: Java 4.9.x broker, mqadmin and clients"]
fn java49_broker_mqadmin_producer_consumer() {
    let _serial = serial();
    core_flow(PEERS, "J49");
}

#[test]
#[ignore = "real peer: Java 4.9.x broker, mqadmin and clients"]
fn java49_mqadmin_namesrv_admin_commands() {
    let _serial = serial();
    admin_flow(PEERS, "J49");
}
