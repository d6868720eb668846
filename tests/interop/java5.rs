//! Interop with real Apache RocketMQ 5.5.0 software (broker, mqadmin, Java client), with our `mqnamesrv` as the
//! name server. Needs Java 17+ and Maven (the peers are fetched by `tests/peers/fetch.sh`); see `docs/interop.md`.
//! Ignored: run with `cargo test -- --ignored`.

use crate::support;

use support::interop::{admin_flow, core_flow, serial, two_namesrv_flow, JavaPeers};
use support::java::JAVA_5X;

#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients"]
fn java5_broker_mqadmin_producer_consumer() {
    let _serial = serial();
    core_flow(JavaPeers { broker: JAVA_5X, tools: JAVA_5X, client: JAVA_5X }, "J5");
}

#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients"]
fn java5_mqadmin_namesrv_admin_commands() {
    let _serial = serial();
    admin_flow(JavaPeers { broker: JAVA_5X, tools: JAVA_5X, client: JAVA_5X }, "J5");
}

#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients"]
fn java5_two_name_servers_one_restarted() {
    let _serial = serial();
    two_namesrv_flow(JavaPeers { broker: JAVA_5X, tools: JAVA_5X, client: JAVA_5X }, "J5", false);
}

#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients"]
fn java5_ours_beside_java_namesrv_ours_restarted() {
    let _serial = serial();
    two_namesrv_flow(JavaPeers { broker: JAVA_5X, tools: JAVA_5X, client: JAVA_5X }, "J5mix", true);
}
