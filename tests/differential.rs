//! Differential test: the same scripted conversation with the real Java name server (5.5.0) and with ours; every
//! reply is normalised (`support::normalize`) and compared by the harness in `support::differ`. Differences fail
//! the test with a readable diff, except the deliberate ones in its `ALLOWED` list (each documented in
//! `docs/compatibility.md`).
//!
//! Needs Java 17 and Maven (the jars are fetched once into `~/.cache/namesrv-peers` by `tests/peers/fetch.sh`).

mod support;

#[path = "differential/kv_file.rs"]
mod kv_file;
#[path = "differential/surface.rs"]
mod surface;

use namesrv::model::{DataVersion, RegisterBrokerBody, TopicConfig};
use namesrv::protocol::body::encode_register_broker_body;
use namesrv::protocol::{RemotingCommand, SerializeType};

use support::differ::{code, exact, run_script, Run};
use support::normalize::{Body, Canon, Normalized};

// ---------------------------------------------------------------------------------------------------------------
// Requests

#[derive(Clone, Copy)]
struct Broker {
    cluster: &'static str,
    name: &'static str,
    id: i64,
    addr: &'static str,
    ha: &'static str,
}

const MASTER_A: Broker =
    Broker { cluster: "DiffCluster", name: "broker-a", id: 0, addr: "127.0.0.1:20911", ha: "127.0.0.1:20912" };
const SLAVE_A: Broker = Broker { id: 1, addr: "127.0.0.1:21911", ha: "127.0.0.1:21912", ..MASTER_A };
const SINGLE_X: Broker = Broker { name: "broker-x", addr: "127.0.0.1:22911", ha: "127.0.0.1:22912", ..MASTER_A };
const OLD_49: Broker = Broker { name: "broker-old", addr: "127.0.0.1:23911", ha: "127.0.0.1:23912", ..MASTER_A };
const ZIP: Broker = Broker { name: "broker-z", addr: "127.0.0.1:24911", ha: "127.0.0.1:24912", ..MASTER_A };
const ZIP_49: Broker =
    Broker { cluster: "OldCluster", name: "broker-z49", addr: "127.0.0.1:25911", ha: "127.0.0.1:25912", ..MASTER_A };
const EMPTY_E: Broker = Broker { name: "broker-e", addr: "127.0.0.1:26911", ha: "127.0.0.1:26912", ..MASTER_A };
const NO_ID: Broker = Broker { name: "broker-noid", addr: "127.0.0.1:27911", ha: "127.0.0.1:27912", ..MASTER_A };

fn topic(name: &str, queues: i32, perm: i32, sys_flag: i32) -> TopicConfig {
    TopicConfig {
        topic_name: name.to_string(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm,
        topic_sys_flag: sys_flag,
    }
}

fn body(counter: i64, topics: Vec<TopicConfig>) -> RegisterBrokerBody {
    RegisterBrokerBody {
        data_version: DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 + counter },
        topic_configs: topics,
        mapping_infos: Vec::new(),
        filter_server_list: Some(Vec::new()),
    }
}

fn data_version_json(dv: &DataVersion) -> Vec<u8> {
    format!("{{\"counter\":{},\"stateVersion\":{},\"timestamp\":{}}}", dv.counter, dv.state_version, dv.timestamp)
        .into_bytes()
}

/// `UtilAll.crc32`: IEEE CRC-32 masked to 31 bits.
fn crc32(bytes: &[u8]) -> i64 {
    i64::from(crc32fast::hash(bytes) & 0x7FFF_FFFF)
}

#[derive(Clone, Copy)]
enum Crc {
    Right,
    Wrong,
    Zero,
}

#[derive(Clone, Copy)]
struct Reg {
    version: i32,
    encoding: SerializeType,
    compressed: bool,
    /// `None`: a 4.x broker, which does not send the `enableActingMaster` ext at all.
    acting_master: Option<bool>,
    crc: Crc,
}

const REG_5X: Reg =
    Reg { version: 513, encoding: SerializeType::Json, compressed: false, acting_master: Some(false), crc: Crc::Right };

fn register(run: &mut Run, b: Broker, reg: Reg, bytes: Vec<u8>) -> RemotingCommand {
    let crc = match reg.crc {
        Crc::Right => crc32(&bytes),
        Crc::Wrong => (crc32(&bytes) + 1) & 0x7FFF_FFFF,
        Crc::Zero => 0,
    };
    let mut cmd = run
        .req(103)
        .with_ext("brokerName", b.name)
        .with_ext("brokerAddr", b.addr)
        .with_ext("clusterName", b.cluster)
        .with_ext("haServerAddr", b.ha)
        .with_ext("brokerId", b.id.to_string())
        .with_ext("compressed", reg.compressed.to_string())
        .with_ext("bodyCrc32", crc.to_string());
    if let Some(acting) = reg.acting_master {
        cmd = cmd.with_ext("enableActingMaster", acting.to_string());
    }
    cmd.version = reg.version;
    cmd.serialize_type = reg.encoding;
    cmd.with_body(bytes)
}

fn route(run: &mut Run, topic: &str, version: i32) -> RemotingCommand {
    let mut cmd = run.req(105).with_ext("topic", topic);
    cmd.version = version;
    cmd
}

fn broker_ext(cmd: RemotingCommand, b: Broker) -> RemotingCommand {
    cmd.with_ext("brokerName", b.name)
        .with_ext("brokerAddr", b.addr)
        .with_ext("clusterName", b.cluster)
        .with_ext("brokerId", b.id.to_string())
}

fn body_has(n: &Normalized, needle: &str) -> bool {
    match &n.body {
        Body::Json(c) => c.to_string().contains(needle),
        Body::Text(t) => t.contains(needle),
        Body::Empty => false,
    }
}

fn is_object(n: &Normalized) -> bool {
    matches!(n.body, Body::Json(Canon::Object(_)))
}

// ---------------------------------------------------------------------------------------------------------------

#[test]
fn replies_match_java_5x() {
    run_script("core", &[], &[], script);
}

fn script(run: &mut Run) {
    // --- Before anything is registered.
    let c = run.req(9999);
    run.exchange("unknown code", "client", c, code(3));
    let mut c = run.req(9999).with_ext("x", "y");
    c.serialize_type = SerializeType::RocketMq;
    run.exchange("unknown code, ROCKETMQ header", "client", c, code(3));
    let c = route(run, "TopicA", 513);
    run.exchange("route before registration", "client", c, code(17));
    let c = run.req(106);
    run.exchange("cluster info, empty", "client", c, exact(0));

    // --- A 5.x master with a few topics, on its own connection.
    let a1 = body(1, vec![topic("TopicA", 4, 6, 0), topic("TopicB", 8, 6, 0), topic("TopicC", 4, 4, 0)]);
    let bytes = encode_register_broker_body(&a1, false, 513);
    let c = register(run, MASTER_A, REG_5X, bytes.clone());
    run.exchange("register master, JSON header, right CRC", "master", c, code(0));
    let c = register(run, MASTER_A, Reg { crc: Crc::Wrong, ..REG_5X }, bytes.clone());
    run.exchange("register master, wrong CRC", "master", c, code(1));
    let c = register(run, MASTER_A, Reg { crc: Crc::Zero, ..REG_5X }, bytes.clone());
    run.exchange("register master, CRC 0", "master", c, code(0));
    // A changed DataVersion and a changed topic, ROCKETMQ binary header.
    let a2 = body(2, vec![topic("TopicA", 4, 6, 0), topic("TopicB", 6, 6, 0), topic("TopicC", 4, 4, 0)]);
    let c = register(
        run,
        MASTER_A,
        Reg { encoding: SerializeType::RocketMq, ..REG_5X },
        encode_register_broker_body(&a2, false, 513),
    );
    run.exchange("register master, ROCKETMQ header", "master", c, code(0));
    // Same content from a client that reports version 317.
    let c = register(run, MASTER_A, Reg { version: 317, ..REG_5X }, encode_register_broker_body(&a2, false, 317));
    run.exchange("register master, version 317", "master", c, code(0));

    // --- Its slave: the reply carries masterAddr/haServerAddr; its own topics are ignored.
    let s1 = body(1, vec![topic("TopicA", 4, 6, 0), topic("TopicS", 2, 6, 0)]);
    let c = register(run, SLAVE_A, REG_5X, encode_register_broker_body(&s1, false, 513));
    run.exchange("register slave", "slave", c, code(0));

    // --- A never-seen broker whose first registration holds exactly one topic is refused.
    let x1 = body(1, vec![topic("Single", 4, 6, 0)]);
    let c = register(run, SINGLE_X, REG_5X, encode_register_broker_body(&x1, false, 513));
    run.exchange("register single-topic first", "single", c, code(1));

    // --- A 4.9 broker: no enableActingMaster, version 409, 4.9 body shape.
    let o1 = body(1, vec![topic("Topic49", 4, 6, 0), topic("TopicA", 2, 6, 0)]);
    let c = register(
        run,
        OLD_49,
        Reg { version: 409, acting_master: None, ..REG_5X },
        encode_register_broker_body(&o1, false, 409),
    );
    run.exchange("register 4.9 broker", "old49", c, code(0));

    // --- Compressed (zlib) registrations: 5.x layout, and the 4.9 layout (version < 413, no mapping section).
    let z1 = body(1, vec![topic("TopicZ", 3, 6, 0), topic("TopicA", 1, 6, 0)]);
    let c = register(run, ZIP, Reg { compressed: true, ..REG_5X }, encode_register_broker_body(&z1, true, 513));
    run.exchange("register compressed 5.x", "zip", c, code(0));
    let z2 = body(1, vec![topic("TopicZ49", 3, 6, 1), topic("TopicZ49b", 2, 6, 0)]);
    let c = register(
        run,
        ZIP_49,
        Reg { version: 409, compressed: true, acting_master: None, ..REG_5X },
        encode_register_broker_body(&z2, true, 409),
    );
    run.exchange("register compressed 4.9", "zip49", c, code(0));

    // --- Malformed registrations.
    let mut c = register(run, NO_ID, REG_5X, encode_register_broker_body(&a1, false, 513));
    if let Some(ext) = c.ext_fields.as_mut() {
        ext.0.retain(|(k, _)| k != "brokerId");
    }
    run.exchange("register without brokerId", "noid", c, code(1));
    let c = register(run, EMPTY_E, REG_5X, Vec::new());
    run.exchange("register with empty body", "empty", c, code(0));

    // --- Routes: dialects, encodings, missing topics.
    for (name, version, std_only, enc, check) in [
        ("route TopicA v513", 513, false, SerializeType::Json, code(0)),
        ("route TopicA v317", 317, false, SerializeType::Json, code(0)),
        ("route TopicA v317 acceptStandardJsonOnly", 317, true, SerializeType::Json, code(0)),
        ("route TopicA v513 ROCKETMQ header", 513, false, SerializeType::RocketMq, code(0)),
        ("route TopicA v317 ROCKETMQ header", 317, false, SerializeType::RocketMq, code(0)),
    ] {
        let mut c = route(run, "TopicA", version);
        if std_only {
            c = c.with_ext("acceptStandardJsonOnly", "true");
        }
        c.serialize_type = enc;
        run.exchange(name, "client", c, check);
    }
    for (t, version, check) in [
        ("TopicB", 513, exact(0)),
        ("TopicB", 317, exact(0)),
        ("TopicC", 513, exact(0)),
        ("TopicS", 513, code(17)),
        ("TopicZ", 317, exact(0)),
        ("TopicZ49", 317, exact(0)),
        ("TopicZ49b", 513, exact(0)),
        ("Topic49", 513, exact(0)),
        ("Single", 513, code(17)),
        ("NoSuchTopic", 513, code(17)),
        ("NoSuchTopic", 317, code(17)),
    ] {
        let c = route(run, t, version);
        run.exchange(&format!("route {t} v{version}"), "client", c, check);
    }
    let c = run.req(105);
    run.exchange("route without topic ext", "client", c, code(17));

    let c = run.req(106);
    run.exchange("cluster info after registrations", "client", c, code(0));

    // --- QUERY_DATA_VERSION (master's stored DataVersion is a2's).
    let c = broker_ext(run.req(322), MASTER_A).with_body(data_version_json(&a2.data_version));
    run.exchange("query data version, unchanged", "master", c, exact(0));
    let c = broker_ext(run.req(322), MASTER_A).with_body(data_version_json(&body(9, vec![]).data_version));
    run.exchange("query data version, changed", "master", c, exact(0));
    let unknown = Broker { addr: "127.0.0.1:29999", ..MASTER_A };
    let c = broker_ext(run.req(322), unknown).with_body(data_version_json(&a2.data_version));
    run.exchange("query data version, unknown broker", "master", c, exact(0));
    let c = broker_ext(run.req(322), MASTER_A);
    run.exchange("query data version, no body", "master", c, exact(0));
    let mut c = broker_ext(run.req(322), MASTER_A).with_body(data_version_json(&a2.data_version));
    c.serialize_type = SerializeType::RocketMq;
    run.exchange("query data version, ROCKETMQ header", "master", c, exact(0));

    // --- BROKER_HEARTBEAT, GET_BROKER_MEMBER_GROUP.
    let c = run
        .req(904)
        .with_ext("clusterName", MASTER_A.cluster)
        .with_ext("brokerAddr", MASTER_A.addr)
        .with_ext("brokerName", MASTER_A.name)
        .with_ext("brokerId", "0");
    run.exchange("broker heartbeat", "master", c, exact(0));
    let c = run
        .req(904)
        .with_ext("clusterName", "NoCluster")
        .with_ext("brokerAddr", "127.0.0.1:1")
        .with_ext("brokerName", "nobody");
    run.exchange("broker heartbeat, unknown broker", "client", c, exact(0));
    let c = run.req(901).with_ext("clusterName", MASTER_A.cluster).with_ext("brokerName", MASTER_A.name);
    run.exchange("broker member group, known", "client", c, exact(0));
    let c = run.req(901).with_ext("clusterName", "NoCluster").with_ext("brokerName", "nobody");
    run.exchange("broker member group, unknown", "client", c, exact(0));

    // --- One-way requests get nothing back (checked through `strays` at the end).
    let c = run.req(9999);
    run.oneway("client", c);
    let c = route(run, "TopicA", 513);
    run.oneway("client", c);
    let c = broker_ext(run.req(322), MASTER_A).with_body(data_version_json(&a2.data_version));
    run.oneway("master", c);
    let c = run.req(106);
    run.exchange("cluster info after one-way requests", "client", c, code(0));

    // --- UNREGISTER_BROKER: answered at once, applied asynchronously by Java.
    let c = broker_ext(run.req(104), SLAVE_A);
    run.exchange("unregister slave", "client", c, exact(0));
    let c = route(run, "TopicA", 513);
    run.poll("route TopicA after slave unregistered", "client", c, |n| !body_has(n, SLAVE_A.addr), code(0));
    let c = broker_ext(run.req(104), OLD_49);
    run.exchange("unregister 4.9 broker", "client", c, exact(0));
    let c = route(run, "Topic49", 513);
    run.poll("route Topic49 after its only broker unregistered", "client", c, |n| n.code == 17, code(17));
    let c = route(run, "TopicA", 317);
    run.exchange("route TopicA after unregistrations", "client", c, code(0));
    let c = broker_ext(run.req(104), ZIP_49);
    run.exchange("unregister last broker of a cluster", "client", c, exact(0));
    let c = run.req(106);
    run.poll(
        "cluster info after a cluster emptied",
        "client",
        c,
        |n| is_object(n) && !body_has(n, ZIP_49.cluster),
        code(0),
    );
    let c = broker_ext(run.req(104), Broker { name: "nobody", ..MASTER_A });
    run.exchange("unregister unknown broker", "client", c, exact(0));
}
