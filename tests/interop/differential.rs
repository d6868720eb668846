//! Differential test: the same scripted conversation with the real Java name server (5.5.0) and with ours; every
//! reply is normalised (`support::normalize`) and compared by the harness in `support::differ`. Differences fail
//! the test with a readable diff, except the deliberate ones in its `ALLOWED` list (each documented in
//! `docs/compatibility.md`).
//!
//! `random.rs` adds seeded random sequences (`NAMESRV_DIFF_SEEDS`, `NAMESRV_DIFF_STEPS` run more by hand).
//!
//! Needs Java 17 and Maven (the jars are fetched once into `~/.cache/namesrv-peers` by `tests/peers/fetch.sh`);
//! ignored: run with `cargo test -- --ignored`.

use crate::support;

mod kv_file;
mod random;
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
/// Slaves of master-less groups (prime slaves), with acting master off and on, and a second slave of each.
const PRIME_OFF: Broker =
    Broker { name: "broker-p0", id: 1, addr: "127.0.0.1:28911", ha: "127.0.0.1:28912", ..MASTER_A };
const PRIME_OFF_2: Broker = Broker { id: 2, addr: "127.0.0.1:28921", ha: "127.0.0.1:28922", ..PRIME_OFF };
const PRIME_ON: Broker =
    Broker { name: "broker-p1", id: 1, addr: "127.0.0.1:29911", ha: "127.0.0.1:29912", ..MASTER_A };
const PRIME_ON_2: Broker = Broker { id: 2, addr: "127.0.0.1:29921", ha: "127.0.0.1:29922", ..PRIME_ON };
/// Master and slave groups whose master leaves, with acting master off and on.
const LEAVE_OFF: Broker = Broker { name: "broker-l0", addr: "127.0.0.1:33911", ha: "127.0.0.1:33912", ..MASTER_A };
const LEAVE_OFF_S: Broker = Broker { id: 1, addr: "127.0.0.1:33921", ha: "127.0.0.1:33922", ..LEAVE_OFF };
const LEAVE_ON: Broker = Broker { name: "broker-l1", addr: "127.0.0.1:34911", ha: "127.0.0.1:34912", ..MASTER_A };
const LEAVE_ON_S: Broker = Broker { id: 1, addr: "127.0.0.1:34921", ha: "127.0.0.1:34922", ..LEAVE_ON };

fn topic(name: &str, queues: i32, perm: i32, sys_flag: i32) -> TopicConfig {
    TopicConfig {
        topic_name: name.into(),
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
#[ignore = "real peer: Java 5.5.0 name server"]
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

    prime_slaves(run);
    evictions(run);
    filter_servers(run);
}

/// A registration's `filterServerList`: a list replaces the broker's filter servers, an empty one removes them, and
/// so does a body without the key (Java's `RegisterBrokerBody.filterServerList` starts as an empty list) or an empty
/// body; `"filterServerList":null` leaves them as they are.
fn filter_servers(run: &mut Run) {
    let f = Broker { name: "broker-f", addr: "127.0.0.1:38911", ha: "127.0.0.1:38912", ..MASTER_A };
    let with = |counter, list: Option<Vec<String>>| RegisterBrokerBody {
        filter_server_list: list,
        ..body(counter, vec![topic("TopicF", 4, 6, 0), topic("TopicF2", 4, 6, 0)])
    };
    let listed = || Some(vec!["127.0.0.1:38999".to_string()]);
    let steps: Vec<(&str, Vec<u8>)> = vec![
        ("a list", encode_register_broker_body(&with(1, listed()), false, 513)),
        ("no filterServerList key", encode_register_broker_body(&with(2, None), false, 513)),
        ("a list again", encode_register_broker_body(&with(3, listed()), false, 513)),
        ("filterServerList null", {
            let json = String::from_utf8(encode_register_broker_body(&with(4, None), false, 513)).unwrap();
            json.replacen('{', "{\"filterServerList\":null,", 1).into_bytes()
        }),
        ("an empty body", Vec::new()),
        ("a list, zlib", encode_register_broker_body(&with(5, listed()), true, 513)),
        ("an empty list, zlib", encode_register_broker_body(&with(6, Some(Vec::new())), true, 513)),
    ];
    for (what, bytes) in steps {
        let c = register(run, f, Reg { compressed: what.ends_with("zlib"), ..REG_5X }, bytes);
        run.exchange(&format!("register with filter servers: {what}"), "filter", c, exact(0));
        let c = route(run, "TopicF", 513);
        run.exchange(&format!("route after filter servers: {what}"), "client", c, exact(0));
    }
}

/// A slave registering while its group has no master is the group's prime slave: its topics are filed, read-only
/// only when the group enables acting master (`RouteInfoManager.registerBroker`). A master leaving a group with
/// slaves wipes the write bit only when acting master is on (`cleanTopicByUnRegisterRequests`).
fn prime_slaves(run: &mut Run) {
    let perms = |counter| body(counter, vec![topic("TopicP6", 4, 6, 0), topic("TopicP7", 2, 7, 0)]);
    for (b, b2, acting, what) in [(PRIME_OFF, PRIME_OFF_2, false, "off"), (PRIME_ON, PRIME_ON_2, true, "on")] {
        let conn = b.name;
        let reg = Reg { acting_master: Some(acting), ..REG_5X };
        let c = register(run, b, reg, encode_register_broker_body(&perms(1), false, 513));
        run.exchange(&format!("register prime slave, acting master {what}"), conn, c, exact(0));
        for t in ["TopicP6", "TopicP7"] {
            let c = route(run, t, 513);
            run.exchange(&format!("route {t} of prime slave, acting master {what}"), "client", c, code(0));
        }
        // A second slave is not prime: its table is ignored.
        let other = body(1, vec![topic("TopicP6", 8, 6, 0), topic("TopicP2", 2, 6, 0)]);
        let c = register(run, b2, reg, encode_register_broker_body(&other, false, 513));
        run.exchange(&format!("register second slave, acting master {what}"), &format!("{conn}-2"), c, exact(0));
        let c = route(run, "TopicP2", 513);
        run.exchange(&format!("route TopicP2 of a second slave, acting master {what}"), "client", c, code(17));
    }
    let c = route(run, "TopicP6", 317);
    run.exchange("route TopicP6 of both prime slaves", "client", c, code(0));
    // The group without acting master turns it on with its next registration (new DataVersion): read-only now.
    let c = register(
        run,
        PRIME_OFF,
        Reg { acting_master: Some(true), ..REG_5X },
        encode_register_broker_body(&perms(2), false, 513),
    );
    run.exchange("register prime slave, acting master turned on", PRIME_OFF.name, c, exact(0));
    let c = route(run, "TopicP7", 513);
    run.exchange("route TopicP7 after acting master turned on", "client", c, code(0));
    // ... and off again, with the same DataVersion: nothing is re-filed, so the queues stay read-only.
    let c = register(run, PRIME_OFF, REG_5X, encode_register_broker_body(&perms(2), false, 513));
    run.exchange("register prime slave, acting master off, same DataVersion", PRIME_OFF.name, c, exact(0));
    let c = route(run, "TopicP7", 513);
    run.exchange("route TopicP7 after acting master turned off", "client", c, code(0));

    // Groups with a master and a slave; the master leaves.
    for (m, sl, acting, what) in [(LEAVE_OFF, LEAVE_OFF_S, false, "off"), (LEAVE_ON, LEAVE_ON_S, true, "on")] {
        let reg = Reg { acting_master: Some(acting), ..REG_5X };
        let t = format!("TopicL{}", u8::from(acting));
        let b = body(1, vec![topic(&t, 4, 6, 0), topic("TopicLx", 4, 7, 0)]);
        let c = register(run, m, reg, encode_register_broker_body(&b, false, 513));
        run.exchange(&format!("register master, acting master {what}"), m.name, c, exact(0));
        let c = register(run, sl, reg, encode_register_broker_body(&b, false, 513));
        run.exchange(&format!("register its slave, acting master {what}"), &format!("{}-s", m.name), c, exact(0));
        let c = broker_ext(run.req(104), m);
        run.exchange(&format!("unregister the master, acting master {what}"), "client", c, exact(0));
        let c = route(run, &t, 513);
        run.poll(&format!("route {t} after its master left"), "client", c, |n| !body_has(n, m.addr), exact(0));
        // The slave registers again, now the prime slave: same DataVersion, so its queues are not re-filed.
        let c = register(run, sl, reg, encode_register_broker_body(&b, false, 513));
        run.exchange(&format!("slave re-registers, acting master {what}"), &format!("{}-s", m.name), c, exact(0));
        let c = route(run, &t, 317);
        run.exchange(&format!("route {t} after the slave re-registered"), "client", c, exact(0));
    }
    let c = route(run, "TopicLx", 513);
    run.exchange("route TopicLx of both groups", "client", c, code(0));
    let c = run.req(106);
    run.exchange("cluster info with prime slaves", "client", c, code(0));
}

/// A 5.x JSON body (DataVersion 1) with two topics of 4/4 queues, perm 6.
fn two_topics(a: &str, b: &str) -> Vec<u8> {
    encode_register_broker_body(&body(1, vec![topic(a, 4, 6, 0), topic(b, 4, 6, 0)]), false, 513)
}

/// A connection closing evicts the broker registered on it. Java looks its group up with `setupUnRegisterRequest`:
/// the first group of its cluster, in `brokerAddrTable` (ConcurrentHashMap) order, that holds its address.
/// `surf-b`'s bin comes before `surf-a`'s, so of two groups holding one address, `surf-b` loses it.
/// Then the two deliberate differences of docs/compatibility.md: brokers sharing a connection, and the live entry
/// of an address no group holds any more.
fn evictions(run: &mut Run) {
    let twin_a = Broker { name: "surf-a", addr: "127.0.0.1:35911", ha: "127.0.0.1:35912", ..MASTER_A };
    let twin_b = Broker { name: "surf-b", ..twin_a };
    for (b, t) in [(twin_a, "TopicTwinA"), (twin_b, "TopicTwinB")] {
        let c = register(run, b, REG_5X, two_topics(t, "TopicTwin"));
        run.exchange(&format!("register {} at a shared address", b.name), "twin", c, exact(0));
    }
    run.close("twin");
    let c = route(run, "TopicTwin", 513);
    run.poll(
        "route TopicTwin after the shared address's connection closed",
        "client",
        c,
        |n| !body_has(n, "surf-b"),
        exact(0),
    );
    for t in ["TopicTwinA", "TopicTwinB"] {
        let c = route(run, t, 513);
        run.exchange(&format!("route {t} after the close"), "client", c, code(if t == "TopicTwinA" { 0 } else { 17 }));
    }
    let c = run.req(304);
    run.exchange("system topics after the close", "client", c, code(0));
    // grp-9 and grp-59 share a bin (177): Java visits them in the order they were added, grp-9 first.
    let bin_a = Broker { name: "grp-9", addr: "127.0.0.1:35921", ha: "127.0.0.1:35922", ..MASTER_A };
    let bin_b = Broker { name: "grp-59", ..bin_a };
    for (b, t) in [(bin_a, "TopicBinA"), (bin_b, "TopicBinB")] {
        let c = register(run, b, REG_5X, two_topics(t, "TopicBin"));
        run.exchange(&format!("register {} at an address shared in one bin", b.name), "bin", c, exact(0));
    }
    run.close("bin");
    let c = route(run, "TopicBin", 513);
    run.poll("route TopicBin after the close", "client", c, |n| !body_has(n, "grp-9"), exact(0));
    let c = route(run, "TopicBinB", 513);
    run.exchange("route TopicBinB after the close", "client", c, exact(0));

    // Deliberate: two brokers registered on one connection. Java evicts only the first live entry holding the
    // connection (brokerLiveTable order); ours evicts both.
    let s1 = Broker { name: "shared-a", addr: "127.0.0.1:36911", ha: "127.0.0.1:36912", ..MASTER_A };
    let s2 = Broker { name: "shared-b", addr: "127.0.0.1:36921", ha: "127.0.0.1:36922", ..MASTER_A };
    let s3 = Broker { name: "shared-c", addr: "127.0.0.1:36931", ha: "127.0.0.1:36932", ..MASTER_A };
    let c = register(run, s3, REG_5X, two_topics("TopicShared", "TopicSharedC"));
    run.exchange("register shared-c on its own connection", "shared-c", c, exact(0));
    for (b, t) in [(s1, "TopicSharedA"), (s2, "TopicSharedB")] {
        let c = register(run, b, REG_5X, two_topics(t, "TopicShared"));
        run.exchange(&format!("register {} on a shared connection", b.name), "shared", c, exact(0));
    }
    run.close("shared");
    let c = route(run, "TopicShared", 513);
    run.settle("client", &c, |n| !body_has(n, s1.addr) || !body_has(n, s2.addr));
    run.exchange("shared connection: route after its close", "client", c, code(0));

    // Deliberate: an address displaced from its group (another address took its id) keeps a live entry in Java
    // when its connection closes, and Java answers QUERY_DATA_VERSION from it; ours drops it.
    let z1 = Broker { name: "broker-zombie", addr: "127.0.0.1:37911", ha: "127.0.0.1:37912", ..MASTER_A };
    let z2 = Broker { addr: "127.0.0.1:37921", ha: "127.0.0.1:37922", ..z1 };
    let zb = body(1, vec![topic("TopicZombie", 4, 6, 0), topic("TopicZombie2", 4, 6, 0)]);
    let c = register(run, z1, REG_5X, encode_register_broker_body(&zb, false, 513));
    run.exchange("register the first holder of an id", "zombie-1", c, exact(0));
    let c = register(run, z2, REG_5X, encode_register_broker_body(&zb, false, 513));
    run.exchange("register another address for the same id", "zombie-2", c, exact(0));
    let c = broker_ext(run.req(322), z1).with_body(data_version_json(&zb.data_version));
    run.exchange("query data version of the displaced address", "client", c, exact(0));
    run.close("zombie-1");
    let c = route(run, "TopicZombie", 513);
    run.exchange("route after the displaced address's connection closed", "client", c, exact(0));
    let c = broker_ext(run.req(322), z1).with_body(data_version_json(&zb.data_version));
    run.settle_ours("client", &c, |n| n.ext.get("changed").map(String::as_str) == Some("true"));
    run.exchange("displaced address: query data version after its close", "client", c, exact(0));
}
