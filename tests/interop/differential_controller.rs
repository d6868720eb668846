//! Differential: the same script of controller requests — two brokers getting ids, registering, heartbeating,
//! electing, altering their SyncStateSet, and the refusals along the way — sent to the real Java 5.5.0 controller
//! (inside its name server, `enableControllerInNamesrv=true`, DLedger, one node) and to ours. Every reply must
//! match: code, remark, header fields and body (the controller's own address normalized). Ignored: run with
//! `cargo test -- --ignored`.

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use namesrv::protocol::RemotingCommand;
use namesrv::test_support::protocol::code::ControllerRequestCode as C;
use support::client::Client;
use support::controller;
use support::eventually;
use support::interop::serial;
use support::java::{JavaNamesrv, JAVA_5X};
use support::ours::OurNamesrv;

/// One reply as compared: code, remark, header fields (sorted) and body, with the controller's port replaced.
#[derive(Debug, PartialEq, Eq)]
struct Reply {
    code: i32,
    remark: Option<String>,
    ext: BTreeMap<String, String>,
    body: String,
}

fn normalize(r: &RemotingCommand, port: u16) -> Reply {
    let n = |s: &str| s.replace(&port.to_string(), "<ctl>");
    let raw = reply_of(r);
    Reply {
        code: raw.code,
        remark: raw.remark.as_deref().map(n),
        ext: raw.ext.into_iter().map(|(k, v)| (k, n(&v))).collect(),
        body: n(&raw.body),
    }
}

/// A reply as compared, nothing normalized.
fn reply_of(r: &RemotingCommand) -> Reply {
    Reply {
        code: r.code,
        remark: r.remark.clone(),
        ext: r.ext_fields.iter().flat_map(|e| e.0.iter()).map(|(k, v)| (k.clone(), v.clone())).collect(),
        body: String::from_utf8_lossy(&r.body).into_owned(),
    }
}

fn controller_keys(port: u16, store: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("enableControllerInNamesrv", "true".into()),
        ("controllerDLegerGroup", "group1".into()),
        ("controllerDLegerPeers", format!("n0-127.0.0.1:{port}")),
        ("controllerDLegerSelfId", "n0".into()),
        ("controllerStorePath", store.display().to_string()),
        ("mappedFileSize", "10485760".into()),
    ]
}

/// Runs the script against the controller at `port` and returns the replies, step by step.
fn script(port: u16) -> Vec<(String, Reply)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listening = eventually(Duration::from_secs(60), || std::net::TcpStream::connect(addr).is_ok());
    assert!(listening, "the controller listens on {addr}");
    let mut c = Client::connect(addr);
    // Java's 1005 reports DLedger's own `isLeader` (MemberState), while its request path checks the role handler,
    // which becomes leader a moment later (`DLedgerController.isLeaderState`): until then leader-only requests get
    // 2007. Wait until one is served: 1004 of a group nobody registers, which changes nothing.
    let ready = eventually(Duration::from_secs(60), || {
        let cmd = c.cmd(C::CONTROLLER_GET_REPLICA_INFO).with_ext("brokerName", "diff-readiness-probe");
        c.try_request(cmd, Duration::from_secs(3)).is_ok_and(|r| {
            r.code != namesrv::test_support::protocol::code::ControllerResponseCode::CONTROLLER_NOT_LEADER
        })
    });
    assert!(ready, "the controller at {addr} serves as leader");
    let mut out = Vec::new();
    let mut ask = |what: &str, code: i32, ext: &[(&str, &str)], body: Option<&str>| {
        let mut cmd = ext.iter().fold(c.cmd(code), |cmd, (k, v)| cmd.with_ext(k, *v));
        if let Some(body) = body {
            cmd = cmd.with_body(body.as_bytes().to_vec());
        }
        let r = c.request(cmd);
        out.push((what.to_string(), normalize(&r, port)));
    };
    let group = [("clusterName", "DiffCluster"), ("brokerName", "diff-a")];
    let with = |more: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        group.iter().chain(more).copied().collect()
    };
    let hb = |id: &'static str, addr: &'static str| {
        with(&[
            ("brokerId", id),
            ("brokerAddr", addr),
            ("epoch", "0"),
            ("maxOffset", "0"),
            ("heartbeatTimeoutMills", "60000"),
        ])
    };

    ask("metadata", C::CONTROLLER_GET_METADATA_INFO, &[], None);
    ask("replica info of an unknown group", C::CONTROLLER_GET_REPLICA_INFO, &[("brokerName", "diff-a")], None);
    ask("elect in an unknown group", C::CONTROLLER_ELECT_MASTER, &with(&[("brokerId", "1")]), None);
    ask("next id of a new group", C::CONTROLLER_GET_NEXT_BROKER_ID, &group, None);
    ask(
        "register before applying an id",
        C::CONTROLLER_REGISTER_BROKER,
        &with(&[("brokerId", "1"), ("brokerAddress", "10.0.0.1:10911")]),
        None,
    );
    ask(
        "apply id 1",
        C::CONTROLLER_APPLY_BROKER_ID,
        &with(&[("appliedBrokerId", "1"), ("registerCheckCode", "10.0.0.1:10911;1")]),
        None,
    );
    ask(
        "apply id 1 again, other broker",
        C::CONTROLLER_APPLY_BROKER_ID,
        &with(&[("appliedBrokerId", "1"), ("registerCheckCode", "10.0.0.2:10911;2")]),
        None,
    );
    ask(
        "apply id 5, not the next",
        C::CONTROLLER_APPLY_BROKER_ID,
        &with(&[("appliedBrokerId", "5"), ("registerCheckCode", "10.0.0.2:10911;2")]),
        None,
    );
    ask(
        "register id 1",
        C::CONTROLLER_REGISTER_BROKER,
        &with(&[("brokerId", "1"), ("brokerAddress", "10.0.0.1:10911")]),
        None,
    );
    ask("heartbeat 1", C::BROKER_HEARTBEAT, &hb("1", "10.0.0.1:10911"), None);
    ask("heartbeat without id", C::BROKER_HEARTBEAT, &with(&[("brokerAddr", "10.0.0.1:10911")]), None);
    ask("first election", C::CONTROLLER_ELECT_MASTER, &with(&[("brokerId", "1")]), None);
    ask("next id", C::CONTROLLER_GET_NEXT_BROKER_ID, &group, None);
    ask(
        "apply id 2",
        C::CONTROLLER_APPLY_BROKER_ID,
        &with(&[("appliedBrokerId", "2"), ("registerCheckCode", "10.0.0.2:10911;2")]),
        None,
    );
    ask(
        "register id 2",
        C::CONTROLLER_REGISTER_BROKER,
        &with(&[("brokerId", "2"), ("brokerAddress", "10.0.0.2:10911")]),
        None,
    );
    ask("heartbeat 2", C::BROKER_HEARTBEAT, &hb("2", "10.0.0.2:10911"), None);
    ask("elect while the master lives", C::CONTROLLER_ELECT_MASTER, &with(&[("brokerId", "2")]), None);
    let alter = |master: &'static str, epoch: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("brokerName", "diff-a"), ("masterBrokerId", master), ("masterEpoch", epoch)]
    };
    ask(
        "alter, stale set epoch",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "1"),
        Some(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":0}"#),
    );
    ask(
        "alter, not the master",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("2", "1"),
        Some(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#),
    );
    ask(
        "alter, stale master epoch",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "0"),
        Some(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#),
    );
    ask(
        "alter, unknown replica",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "1"),
        Some(r#"{"syncStateSet":[1,3],"syncStateSetEpoch":1}"#),
    );
    ask(
        "alter, master left out",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "1"),
        Some(r#"{"syncStateSet":[2],"syncStateSetEpoch":1}"#),
    );
    ask(
        "alter",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "1"),
        Some(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#),
    );
    ask(
        "alter, unchanged",
        C::CONTROLLER_ALTER_SYNC_STATE_SET,
        &alter("1", "1"),
        Some(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":2}"#),
    );
    ask("replica info", C::CONTROLLER_GET_REPLICA_INFO, &[("brokerName", "diff-a")], None);
    ask("sync state data", C::CONTROLLER_GET_SYNC_STATE_DATA, &[], Some(r#"["diff-a","nobody"]"#));
    ask("sync state data, no names", C::CONTROLLER_GET_SYNC_STATE_DATA, &[], None);
    ask(
        "register id 1 from a new address",
        C::CONTROLLER_REGISTER_BROKER,
        &with(&[("brokerId", "1"), ("brokerAddress", "10.0.0.9:10911")]),
        None,
    );
    ask("clean a live broker", C::CLEAN_BROKER_DATA, &with(&[("brokerControllerIdsToClean", "2")]), None);
    ask("clean an unknown id", C::CLEAN_BROKER_DATA, &with(&[("brokerControllerIdsToClean", "7")]), None);
    ask(
        "designated election of 2",
        C::CONTROLLER_ELECT_MASTER,
        &with(&[("brokerId", "2"), ("designateElect", "true")]),
        None,
    );
    ask("replica info after it", C::CONTROLLER_GET_REPLICA_INFO, &[("brokerName", "diff-a")], None);
    ask("sync state data after it", C::CONTROLLER_GET_SYNC_STATE_DATA, &[], Some(r#"["diff-a"]"#));
    ask("a code the controller does not serve", C::GET_BROKER_EPOCH_CACHE, &[], None);
    out
}

#[test]
#[ignore = "real peer: Java 5.5.0 controller"]
fn controller_replies_match_the_java_controller() {
    let _serial = serial();
    let java_store = tempfile::tempdir().unwrap();
    let java_port = support::free_port();
    let keys = controller_keys(java_port, java_store.path());
    let java = JavaNamesrv::start_with(JAVA_5X, &keys.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>());
    let theirs = script(java_port);
    drop(java);

    let our_store = tempfile::tempdir().unwrap();
    let our_port = support::free_port();
    let keys = controller_keys(our_port, our_store.path());
    let ours_ns = OurNamesrv::start_with(&keys.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>());
    let ours = script(our_port);

    let mut differences = Vec::new();
    for ((step, j), (_, o)) in theirs.iter().zip(&ours) {
        if j != o {
            differences.push(format!("{step}:\n  java: {j:?}\n  ours: {o:?}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} replies differ:\n{}\n{}",
        differences.len(),
        theirs.len(),
        differences.join("\n"),
        ours_ns.log()
    );
    eprintln!("{} controller replies identical to Java 5.5.0's", theirs.len());
}

/// Three controller nodes of one kind; returns (ports, index of a follower, index of the leader) once every node
/// names the same leader.
fn follower_of(ports: &[u16; 3]) -> (usize, usize) {
    let names = ["n0", "n1", "n2"];
    let mut found = None;
    let agreed = eventually(Duration::from_secs(90), || {
        let named: Vec<Option<String>> = ports
            .iter()
            .map(|p| controller::leader_named_by(SocketAddr::from(([127, 0, 0, 1], *p)), Duration::from_secs(2)))
            .collect();
        let Some(Some(first)) = named.first() else { return false };
        let all = named.iter().all(|n| n.as_deref() == Some(first.as_str()));
        found = names.iter().position(|n| n == first);
        all && found.is_some()
    });
    assert!(agreed, "three controller nodes on {ports:?} agree on a leader");
    let leader = found.unwrap();
    ((leader + 1) % 3, leader)
}

/// A scripted request: what it is, its code, its header fields.
type Step = (&'static str, i32, Vec<(&'static str, &'static str)>);

/// What a follower answers, with each node's port and the leader's id normalized.
fn follower_script(ports: &[u16; 3]) -> Vec<(String, Reply)> {
    let (follower, leader) = follower_of(ports);
    let addr = SocketAddr::from(([127, 0, 0, 1], ports[follower]));
    let mut c = Client::connect(addr);
    let mut out = Vec::new();
    let group = [("clusterName", "DiffCluster"), ("brokerName", "diff-a")];
    let steps: [Step; 5] = [
        ("metadata from a follower", C::CONTROLLER_GET_METADATA_INFO, vec![]),
        ("next id on a follower", C::CONTROLLER_GET_NEXT_BROKER_ID, group.to_vec()),
        ("apply id on a follower", C::CONTROLLER_APPLY_BROKER_ID, {
            let mut v = group.to_vec();
            v.extend([("appliedBrokerId", "1"), ("registerCheckCode", "10.0.0.1:10911;1")]);
            v
        }),
        ("replica info on a follower", C::CONTROLLER_GET_REPLICA_INFO, vec![("brokerName", "diff-a")]),
        ("elect on a follower", C::CONTROLLER_ELECT_MASTER, {
            let mut v = group.to_vec();
            v.push(("brokerId", "1"));
            v
        }),
    ];
    for (what, code, ext) in steps {
        let cmd = ext.iter().fold(c.cmd(code), |cmd, (k, v)| cmd.with_ext(k, *v));
        // Which node leads differs between the two groups: the leader's id and address become `<leader>`, every
        // other port `<ctlN>` by the node's place in the peer list.
        let leader_port = ports[leader].to_string();
        let mut r = reply_of(&c.request(cmd));
        for (key, value) in r.ext.iter_mut() {
            if key == "controllerLeaderAddress" {
                *value = value.replace(&leader_port, "<leader>");
            }
            if key == "controllerLeaderId" {
                *value = value.replace(["n0", "n1", "n2"][leader], "<leader>");
            }
            for (i, port) in ports.iter().enumerate() {
                *value = value.replace(&port.to_string(), &format!("<ctl{i}>"));
            }
        }
        out.push((what.to_string(), r));
    }
    out
}

#[test]
#[ignore = "real peer: Java 5.5.0 controller"]
fn followers_refuse_like_java_followers() {
    let _serial = serial();
    let stores: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let peers_of =
        |ports: &[u16; 3]| format!("n0-127.0.0.1:{};n1-127.0.0.1:{};n2-127.0.0.1:{}", ports[0], ports[1], ports[2]);
    let keys = |ports: &[u16; 3], me: usize, store: &std::path::Path| -> Vec<(&'static str, String)> {
        let mut k = controller_keys(ports[me], store);
        k.retain(|(key, _)| *key != "controllerDLegerPeers" && *key != "controllerDLegerSelfId");
        k.push(("controllerDLegerPeers", peers_of(ports)));
        k.push(("controllerDLegerSelfId", format!("n{me}")));
        k
    };
    let refs = |k: &[(&'static str, String)]| k.iter().map(|(a, b)| (*a, b.clone())).collect::<Vec<_>>();

    let java_ports = [support::free_port(), support::free_port(), support::free_port()];
    let java: Vec<JavaNamesrv> = (0..3)
        .map(|i| {
            let k = refs(&keys(&java_ports, i, stores[i].path()));
            JavaNamesrv::start_with(JAVA_5X, &k.iter().map(|(a, b)| (*a, b.as_str())).collect::<Vec<_>>())
        })
        .collect();
    let theirs = follower_script(&java_ports);
    drop(java);

    let stores: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let our_ports = [support::free_port(), support::free_port(), support::free_port()];
    let ours_ns: Vec<OurNamesrv> = (0..3)
        .map(|i| {
            let k = refs(&keys(&our_ports, i, stores[i].path()));
            OurNamesrv::start_with(&k.iter().map(|(a, b)| (*a, b.as_str())).collect::<Vec<_>>())
        })
        .collect();
    let ours = follower_script(&our_ports);
    let differences: Vec<String> = theirs
        .iter()
        .zip(&ours)
        .filter(|((_, j), (_, o))| j != o)
        .map(|((step, j), (_, o))| format!("{step}:\n  java: {j:?}\n  ours: {o:?}"))
        .collect();
    assert!(differences.is_empty(), "{}\n{}", differences.join("\n"), ours_ns[0].log());
    eprintln!("{} follower replies identical to a Java 5.5.0 follower's", theirs.len());
}
