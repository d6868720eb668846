//! Controller mode (RIP-44) with real Java 5.5.0 brokers: our `mqnamesrv` with `enableControllerInNamesrv=true` is
//! both the name server and the controller of two brokers of one group (`enableControllerMode=true`). A master is
//! elected, the slave joins the SyncStateSet, a Java producer sends; `kill -9` of the master makes the other one
//! master in our route; sending goes on; the old master comes back as a slave; mqadmin's controller commands work
//! against ours, and `electMaster` hands the master role back. Built and run with `--features peers` only.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use namesrv::protocol::code::ControllerRequestCode as C;
use namesrv::protocol::json::{self, Value};
use support::broker::{cluster_info, wait_for, Broker};
use support::client::Client;
use support::interop::{serial, step};
use support::java::JAVA_5X;
use support::mqadmin::{JavaClient, MqAdmin};
use support::ours::OurNamesrv;

const CLUSTER: &str = "CtlCluster";
const GROUP: &str = "ctl-broker";
const TOPIC: &str = "CtlTopic";

/// brokerId → address of `GROUP` in the name server's cluster info (106).
fn members(ns: SocketAddr) -> BTreeMap<i64, String> {
    let Some(body) = cluster_info(ns) else { return BTreeMap::new() };
    let Ok(v) = json::parse(body.as_bytes()) else { return BTreeMap::new() };
    let Some(Value::Object(addrs)) =
        v.get("brokerAddrTable").and_then(|t| t.get(GROUP)).and_then(|g| g.get("brokerAddrs"))
    else {
        return BTreeMap::new();
    };
    addrs.iter().filter_map(|(id, a)| Some((id.parse().ok()?, a.as_str()?.into_owned()))).collect()
}

/// The SyncStateSet the controller holds for `GROUP` (1004's body), as broker ids.
fn sync_state_set(ctl: SocketAddr) -> Vec<i64> {
    let mut c = Client::connect(ctl);
    let cmd = c.cmd(C::CONTROLLER_GET_REPLICA_INFO).with_ext("brokerName", GROUP);
    let Ok(r) = c.try_request(cmd, Duration::from_secs(5)) else { return Vec::new() };
    let Ok(v) = json::parse(&r.body) else { return Vec::new() };
    match v.get("syncStateSet") {
        Some(Value::Array(ids)) => ids.iter().filter_map(Value::as_i64).collect(),
        _ => Vec::new(),
    }
}

fn controller_broker(ns: &str, ctl: &str) -> Broker {
    Broker::start_with(
        JAVA_5X,
        CLUSTER,
        GROUP,
        ns,
        &[
            ("enableControllerMode", "true"),
            ("controllerAddr", ctl),
            ("allAckInSyncStateSet", "true"),
            ("brokerId", ""),
            ("brokerRole", ""),
        ],
    )
}

#[test]
fn java5_brokers_elect_and_fail_over_through_our_controller() {
    let _serial = serial();
    let t0 = Instant::now();
    let ctl_port = support::free_port();
    let ctl_addr = SocketAddr::from(([127, 0, 0, 1], ctl_port));
    let peers = format!("n0-127.0.0.1:{ctl_port}");
    let ns = OurNamesrv::start_with(&[
        ("enableControllerInNamesrv", "true"),
        ("controllerDLegerGroup", "group1"),
        ("controllerDLegerPeers", &peers),
        ("controllerDLegerSelfId", "n0"),
    ]);
    let (nsaddr, ctl) = (ns.addr().to_string(), ctl_addr.to_string());
    let admin = MqAdmin::new(JAVA_5X);
    let client = JavaClient::new(JAVA_5X);
    let context = |a: &Broker, b: Option<&Broker>| {
        format!("{}\n{}\n{}", ns.log(), a.log(), b.map(Broker::log).unwrap_or_default())
    };

    step(t0, "starting broker A in controller mode");
    let mut a = controller_broker(&nsaddr, &ctl);
    let booted = Instant::now();
    let (_, took) = wait_for(
        "broker A to be elected master and registered as brokerId 0",
        Duration::from_secs(60),
        || members(ns.addr()).get(&0).filter(|addr| **addr == a.addr_string()).cloned(),
        || context(&a, None),
    );
    step(t0, &format!("A is master in our route {took:?} after its boot ({:?})", booted.elapsed()));

    step(t0, "starting broker B in controller mode");
    let mut b = controller_broker(&nsaddr, &ctl);
    let (_, took) = wait_for(
        "broker B to register as a slave with its controller id",
        Duration::from_secs(60),
        || members(ns.addr()).iter().find(|(id, addr)| **id > 0 && **addr == b.addr_string()).map(|(id, _)| *id),
        || context(&a, Some(&b)),
    );
    step(t0, &format!("B is a slave in our route after {took:?}"));
    let (_, took) = wait_for(
        "B to join the SyncStateSet",
        Duration::from_secs(90),
        || (sync_state_set(ctl_addr).len() == 2).then_some(()),
        || format!("SyncStateSet {:?}\n{}", sync_state_set(ctl_addr), context(&a, Some(&b))),
    );
    step(t0, &format!("SyncStateSet has both after {took:?}"));

    let meta = admin.ok(&nsaddr, &["getControllerMetaData", "-a", &ctl]);
    assert!(meta.contains("#ControllerGroup\tgroup1"), "{meta}");
    assert!(meta.contains(&format!("#ControllerLeaderAddress\t127.0.0.1:{ctl_port}")), "{meta}");
    let sss = admin.ok(&nsaddr, &["getSyncStateSet", "-a", &ctl, "-b", GROUP]);
    assert!(
        sss.contains(&format!("#MasterAddr\t{}", a.addr_string())) && sss.contains("#SyncStateSetNums\t2"),
        "{sss}"
    );

    step(t0, "producing through master A");
    admin.ok(&nsaddr, &["updateTopic", "-c", CLUSTER, "-t", TOPIC]);
    let sent = client.produce(&nsaddr, TOPIC, 10, "before");
    assert!(sent.iter().all(|name| name == GROUP), "{sent:?}");

    // A slave copies the master's topics on a timer; a failover before that leaves the new master without the
    // topic, with Java's name server as with ours. Wait until B has it (GET_ALL_TOPIC_CONFIG from B itself).
    let b_addr: SocketAddr = b.addr_string().parse().unwrap();
    wait_for(
        "B to have copied the topic from A",
        Duration::from_secs(60),
        || {
            let mut c = Client::connect(b_addr);
            let cmd = c.cmd(21);
            let r = c.try_request(cmd, Duration::from_secs(5)).ok()?;
            String::from_utf8_lossy(&r.body).contains(&format!("\"{TOPIC}\"")).then_some(())
        },
        || context(&a, Some(&b)),
    );

    step(t0, "kill -9 of master A");
    a.kill();
    let killed = Instant::now();
    let (_, took) = wait_for(
        "B to be master (brokerId 0) in our route",
        Duration::from_secs(60),
        || members(ns.addr()).get(&0).filter(|addr| **addr == b.addr_string()).cloned(),
        || context(&a, Some(&b)),
    );
    step(
        t0,
        &format!("FAILOVER: B is master in our route {:?} after the kill ({took:?} of polling)", killed.elapsed()),
    );
    assert!(killed.elapsed() < Duration::from_secs(15), "failover took {:?}", killed.elapsed());

    let sent = client.produce(&nsaddr, TOPIC, 10, "after");
    assert!(sent.iter().all(|name| name == GROUP), "{sent:?}");
    step(t0, "producing through B works");

    step(t0, "A comes back");
    a.start_again();
    let (a_id, took) = wait_for(
        "A to rejoin as a slave",
        Duration::from_secs(90),
        || members(ns.addr()).iter().find(|(id, addr)| **id > 0 && **addr == a.addr_string()).map(|(id, _)| *id),
        || context(&a, Some(&b)),
    );
    step(t0, &format!("A is a slave (id {a_id}) again after {took:?}"));
    assert_eq!(members(ns.addr()).get(&0), Some(&b.addr_string()), "B stays master");

    step(t0, "electMaster hands the role back to A once it is in sync");
    wait_for(
        "A back in the SyncStateSet",
        Duration::from_secs(90),
        || (sync_state_set(ctl_addr).contains(&a_id)).then_some(()),
        || format!("SyncStateSet {:?}\n{}", sync_state_set(ctl_addr), context(&a, Some(&b))),
    );
    // mqadmin 5.5.0 decodes 1002's body as a BrokerMemberGroup although every controller (Java 5.5.0's too, same
    // bytes) sends an ElectMasterResponseBody, so it prints this error after the election has happened. Checked
    // with Java 5.5.0's own classes: docs/compatibility.md.
    let id = a_id.to_string();
    let out = admin.run(&nsaddr, &["electMaster", "-a", &ctl, "-b", &id, "-bn", GROUP, "-c", CLUSTER]);
    assert!(
        out.stderr.contains("not support unquoted name") || out.stdout.contains("not support unquoted name"),
        "mqadmin electMaster: {}{}",
        out.stdout,
        out.stderr
    );
    wait_for(
        "A master again in our route",
        Duration::from_secs(60),
        || members(ns.addr()).get(&0).filter(|addr| **addr == a.addr_string()).cloned(),
        || context(&a, Some(&b)),
    );
    let sent = client.produce(&nsaddr, TOPIC, 5, "back");
    assert!(sent.iter().all(|name| name == GROUP), "{sent:?}");
    step(t0, "done");
    b.kill();
}
