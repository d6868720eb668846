//! The controller node end to end, over its port, as a Java 5.x broker in controller mode drives it (the order of
//! `ReplicasManager`: 1005, 1012, 1013, 1003, 904, 1002, 1004, 1001): ids, the first election, the SyncStateSet, a
//! failover when the master's connection closes (with 1008 to the survivor), state across a restart, and three
//! nodes agreeing through Raft — writes only on the leader, a new leader after the old one stops.

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use namesrv::protocol::RemotingCommand;
use namesrv::protocol::ResponseCode;
use namesrv::test_support::protocol::code::{ControllerRequestCode as C, ControllerResponseCode as CR};
use support::client::Client;
use support::controller::{controller_keys, ControllerBroker as FakeBroker};
use support::inproc::InProc;
use support::{eventually, free_port};

const WAIT: Duration = Duration::from_secs(15);

/// One name server with a one-node controller on a free port.
fn single(store: &std::path::Path) -> InProc {
    InProc::start(|c| controller_keys(c, "n0-127.0.0.1:0", "n0", store))
}

fn ctl(srv: &InProc) -> Client {
    Client::connect(srv.controller_addr().expect("the controller runs"))
}

fn metadata(c: &mut Client) -> RemotingCommand {
    let cmd = c.cmd(C::CONTROLLER_GET_METADATA_INFO);
    c.request(cmd)
}

fn wait_leader(c: &mut Client) {
    assert!(eventually(WAIT, || metadata(c).ext("isLeader") == Some("true")), "the node became leader");
}

#[test]
fn two_brokers_get_ids_elect_a_master_and_fail_over_when_its_connection_closes() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let srv = single(store.path());
    let ctl_addr = srv.controller_addr().unwrap();
    let mut admin = ctl(&srv);
    wait_leader(&mut admin);
    let meta = metadata(&mut admin);
    assert_eq!(meta.ext("group"), Some("group1"));
    assert_eq!(meta.ext("controllerLeaderId"), Some("n0"));
    assert_eq!(
        meta.ext("controllerLeaderAddress"),
        Some(ctl_addr.to_string().replace("0.0.0.0", "127.0.0.1").as_str())
    );
    assert_eq!(meta.ext("peers"), Some(format!("n0:127.0.0.1:{};", ctl_addr.port()).as_str()));

    let mut a = FakeBroker::new(ctl_addr, "broker-a");
    let first = a.register();
    assert_eq!(a.id, 1, "the first broker of a group gets id 1");
    assert_eq!(first.ext("masterBrokerId"), None, "no master yet");
    let elected = a.elect();
    assert_eq!(elected.code, ResponseCode::SUCCESS, "{elected:?}");
    assert_eq!((elected.ext("masterBrokerId"), elected.ext("masterEpoch")), (Some("1"), Some("1")));
    assert_eq!(elected.ext("masterAddress"), Some(a.addr().as_str()));
    let body = String::from_utf8(elected.body.to_vec()).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"brokerMemberGroup":{{"brokerAddrs":{{1:"{}"}},"brokerName":"broker-a","cluster":"DefaultCluster"}},"syncStateSet":[1]}}"#,
            a.addr()
        )
    );
    let note = a.role_change();
    assert_eq!(
        (note.code, note.ext("masterBrokerId"), note.ext("masterEpoch")),
        (C::NOTIFY_BROKER_ROLE_CHANGED, Some("1"), Some("1"))
    );

    let mut b = FakeBroker::new(ctl_addr, "broker-a");
    let joined = b.register();
    assert_eq!(b.id, 2);
    assert_eq!((joined.ext("masterBrokerId"), joined.ext("masterAddress")), (Some("1"), Some(a.addr().as_str())));
    let again = b.elect();
    assert_eq!(again.code, CR::CONTROLLER_MASTER_STILL_EXIST, "a live master stays: {again:?}");

    // The master takes the slave into its SyncStateSet (epoch fenced).
    let alter = |a: &mut FakeBroker, epoch: i32| {
        let ext =
            vec![("brokerName", "broker-a".to_string()), ("masterBrokerId", "1".into()), ("masterEpoch", "1".into())];
        a.ask(
            C::CONTROLLER_ALTER_SYNC_STATE_SET,
            &ext,
            Some(&format!(r#"{{"syncStateSet":[1,2],"syncStateSetEpoch":{epoch}}}"#)),
        )
    };
    let stale = alter(&mut a, 0);
    assert_eq!(stale.code, CR::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, "{stale:?}");
    let altered = alter(&mut a, 1);
    assert_eq!((altered.code, altered.ext("newSyncStateSetEpoch")), (ResponseCode::SUCCESS, Some("2")));
    let info = b.replica_info();
    assert_eq!(String::from_utf8(info.body.to_vec()).unwrap(), r#"{"syncStateSet":[1,2],"syncStateSetEpoch":2}"#);

    // kill -9 of the master, as the controller sees it: its connection closes. No heartbeat timeout is waited for
    // (the test clock never moves).
    drop(a);
    let note = b.role_change();
    assert_eq!(
        (note.ext("masterBrokerId"), note.ext("masterEpoch"), note.ext("masterAddress")),
        (Some("2"), Some("2"), Some(b.addr().as_str()))
    );
    let info = b.replica_info();
    assert_eq!((info.ext("masterBrokerId"), info.ext("masterEpoch")), (Some("2"), Some("2")));
    assert_eq!(String::from_utf8(info.body.to_vec()).unwrap(), r#"{"syncStateSet":[2],"syncStateSetEpoch":3}"#);
}

#[test]
fn ids_epochs_and_sync_state_sets_survive_a_restart() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let mut srv = single(store.path());
    let mut admin = ctl(&srv);
    wait_leader(&mut admin);
    let mut a = FakeBroker::new(srv.controller_addr().unwrap(), "broker-a");
    a.register();
    assert_eq!(a.elect().code, ResponseCode::SUCCESS);
    let before = a.replica_info();
    // The master stays connected: a master whose connection closes is replaced (or, alone, recorded as gone with
    // a new master epoch), which is not what this test is about.
    srv.restart();

    let mut admin = ctl(&srv);
    wait_leader(&mut admin);
    let mut probe = FakeBroker::new(srv.controller_addr().unwrap(), "broker-a");
    let after = probe.replica_info();
    assert_eq!(after.code, ResponseCode::SUCCESS);
    assert_eq!(
        (after.ext("masterBrokerId"), after.ext("masterEpoch"), &after.body),
        (before.ext("masterBrokerId"), before.ext("masterEpoch"), &before.body)
    );
    let next = probe.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &probe.group(), None);
    assert_eq!(next.ext("nextBrokerId"), Some("2"), "the id handed out before the restart stays taken");
}

#[test]
fn malformed_and_unknown_requests_get_javas_answers() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let srv = single(store.path());
    let mut c = ctl(&srv);
    wait_leader(&mut c);
    let cmd = c.cmd(C::CONTROLLER_GET_REPLICA_INFO);
    let r = c.request(cmd);
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (ResponseCode::SYSTEM_ERROR, Some("the custom field <brokerName> is null"))
    );
    let cmd = c.cmd(C::CONTROLLER_GET_REPLICA_INFO).with_ext("brokerName", "nobody");
    let r = c.request(cmd);
    assert_eq!(r.code, CR::CONTROLLER_BROKER_METADATA_NOT_EXIST);
    let cmd =
        c.cmd(C::BROKER_HEARTBEAT).with_ext("clusterName", "c").with_ext("brokerName", "b").with_ext("brokerAddr", "x");
    let r = c.request(cmd);
    assert_eq!((r.code, r.remark.as_deref()), (CR::CONTROLLER_INVALID_REQUEST, Some("Heart beat with empty brokerId")));
    let cmd = c.cmd(105);
    let r = c.request(cmd);
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (ResponseCode::REQUEST_CODE_NOT_SUPPORTED, Some(" request type 105 not supported"))
    );
    let cmd = c
        .cmd(C::CONTROLLER_ALTER_SYNC_STATE_SET)
        .with_ext("brokerName", "b")
        .with_ext("masterBrokerId", "1")
        .with_ext("masterEpoch", "1")
        .with_body(b"{not json".to_vec());
    assert_eq!(c.request(cmd).code, ResponseCode::SYSTEM_ERROR);
    // A broken frame closes this connection only; the node still answers others.
    c.send_raw(&[0, 0, 0, 4, 0, 0, 0, 99]);
    c.expect_closed(WAIT);
    wait_leader(&mut ctl(&srv));
}

#[test]
fn raft_messages_from_hosts_outside_the_peer_list_are_refused() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    // The only peer is 127.0.0.2; this test connects from 127.0.0.1.
    let srv = InProc::start(|c| controller_keys(c, "n0-127.0.0.2:0", "n0", store.path()));
    let mut c = ctl(&srv);
    let vote = c
        .cmd(52002)
        .with_body(br#"{"vote":{"leader_id":{"term":99,"node_id":7},"committed":false},"last_log_id":null}"#.to_vec());
    let r = c.request(vote);
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (ResponseCode::NO_PERMISSION, Some("127.0.0.1 is not a controller peer"))
    );
}

/// Three name servers, each with a controller node of one group.
struct Trio {
    nodes: BTreeMap<&'static str, InProc>,
    _stores: Vec<tempfile::TempDir>,
}

impl Trio {
    fn start() -> Trio {
        let ports = [free_port(), free_port(), free_port()];
        let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{};n2-127.0.0.1:{}", ports[0], ports[1], ports[2]);
        let stores: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let nodes = ["n0", "n1", "n2"]
            .into_iter()
            .zip(&stores)
            .map(|(me, store)| (me, InProc::start(|c| controller_keys(c, &peers, me, store.path()))))
            .collect();
        Trio { nodes, _stores: stores }
    }

    /// The leader every running node agrees on (one of them).
    fn leader(&self) -> &'static str {
        let mut agreed = None;
        let found = eventually(WAIT, || {
            let named: Vec<Option<String>> = self
                .nodes
                .values()
                .map(|n| metadata(&mut ctl(n)).ext("controllerLeaderId").map(str::to_owned))
                .collect();
            let first = named[0].as_deref();
            agreed = self.nodes.keys().copied().find(|k| Some(*k) == first);
            agreed.is_some() && named.iter().all(|n| n.as_deref() == first)
        });
        assert!(found, "the running nodes agree on a leader among them");
        agreed.unwrap()
    }
}

#[test]
fn three_nodes_agree_writes_go_to_the_leader_and_a_new_leader_takes_over() {
    let _turn = crate::heavy();
    let mut trio = Trio::start();
    let leader = trio.leader();
    let follower = *trio.nodes.keys().find(|k| **k != leader).unwrap();

    let mut on_follower = FakeBroker::new(trio.nodes[follower].controller_addr().unwrap(), "broker-a");
    let refused = on_follower.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &on_follower.group(), None);
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (CR::CONTROLLER_NOT_LEADER, Some("The controller is not in leader state"))
    );
    let meta = metadata(&mut ctl(&trio.nodes[follower]));
    assert_eq!(meta.ext("isLeader"), Some("false"));

    let mut a = FakeBroker::new(trio.nodes[leader].controller_addr().unwrap(), "broker-a");
    a.register();
    assert_eq!(a.elect().code, ResponseCode::SUCCESS);
    let before = a.replica_info();

    // The leader stops (the master stays connected to it: see the restart test); the other two elect one of themselves, which has the replicated state.
    trio.nodes.get_mut(leader).unwrap().stop();
    trio.nodes.remove(leader);
    let new_leader = trio.leader();
    assert_ne!(new_leader, leader);
    let mut probe = FakeBroker::new(trio.nodes[new_leader].controller_addr().unwrap(), "broker-a");
    let after = probe.replica_info();
    assert_eq!((after.ext("masterBrokerId"), &after.body), (before.ext("masterBrokerId"), &before.body));
    let next = probe.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &probe.group(), None);
    assert_eq!(next.ext("nextBrokerId"), Some("2"));
}

#[test]
fn config_is_readable_and_nothing_an_operator_set_changes_over_the_network() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let srv = single(store.path());
    let mut c = ctl(&srv);
    let cmd = c.cmd(C::GET_CONTROLLER_CONFIG);
    let r = c.request(cmd);
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert!(
        text.contains("enableElectUncleanMaster=false\n") && text.contains("controllerDLegerGroup=group1\n"),
        "{text}"
    );
    for body in [
        "enableElectUncleanMaster=true",
        "notifyBrokerRoleChanged=false",
        "configBlackList=",
        "x=1\ncontrollerStorePath=/tmp/evil",
    ] {
        let cmd = c.cmd(C::UPDATE_CONTROLLER_CONFIG).with_body(body.as_bytes().to_vec());
        let r = c.request(cmd);
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (ResponseCode::NO_PERMISSION, Some("Can not update config in black list.")),
            "{body}"
        );
    }
    let cmd = c.cmd(C::GET_CONTROLLER_CONFIG);
    let after = c.request(cmd);
    assert_eq!(String::from_utf8_lossy(&after.body), text, "unchanged");
    let cmd = c.cmd(C::UPDATE_CONTROLLER_CONFIG).with_body(b"someoneElsesKey=1".to_vec());
    assert_eq!(c.request(cmd).code, ResponseCode::SUCCESS, "a key nobody knows changes nothing, as in Java");
}

#[test]
fn metrics_show_the_role_the_live_brokers_and_the_elections() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let srv = InProc::start(|c| {
        controller_keys(c, "n0-127.0.0.1:0", "n0", store.path());
        c.http_address = "127.0.0.1:0".into();
    });
    let mut admin = ctl(&srv);
    wait_leader(&mut admin);
    let mut a = FakeBroker::new(srv.controller_addr().unwrap(), "broker-a");
    a.register();
    assert_eq!(a.elect().code, ResponseCode::SUCCESS);
    assert_eq!(a.elect().code, CR::CONTROLLER_MASTER_STILL_EXIST);
    let http = srv.http_addr().unwrap();
    let mut text = String::new();
    let refreshed = eventually(WAIT, || {
        text = support::observe::http_get(http, "/metrics").unwrap_or_default();
        text.contains("namesrv_controller_alive_brokers 1\n")
    });
    assert!(refreshed, "{text}");
    for line in [
        "namesrv_controller_is_leader 1\n",
        "namesrv_controller_leader_id 0\n",
        "namesrv_controller_groups 1\n",
        "namesrv_controller_group_alive_brokers{group=\"broker-a\"} 1\n",
        "namesrv_controller_elections_total{result=\"new_master_elected\"} 1\n",
        "namesrv_controller_elections_total{result=\"keep_current_master\"} 1\n",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// `mqnamesrv -c file controller`: the controller alone, as Java's `mqcontroller`; no name server port.
#[test]
fn the_binary_runs_a_stand_alone_controller() {
    let _turn = crate::heavy();
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let (ctl_port, ns_port) = (free_port(), free_port());
    let props = dir.path().join("controller.properties");
    std::fs::write(
        &props,
        format!(
            "listenPort={ns_port}\ncontrollerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:{ctl_port}\n\
             controllerDLegerSelfId=n0\ncontrollerStorePath={}\n",
            dir.path().join("store").display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&props)
        .arg("controller")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], ctl_port));
    assert!(eventually(WAIT, || std::net::TcpStream::connect(addr).is_ok()), "the controller listens");
    wait_leader(&mut Client::connect(addr));
    let ns = SocketAddr::from(([127, 0, 0, 1], ns_port));
    assert!(std::net::TcpStream::connect(ns).is_err(), "no name server in controller mode");
    let killed = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(killed.success());
    let mut status = None;
    assert!(eventually(WAIT, || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    assert_eq!(status.unwrap().code(), Some(0));
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(out.contains("The Controller Server boot success. serializeType=JSON"), "{out}");
    assert!(dir.path().join("store/raft-log").exists(), "its Raft log is under controllerStorePath");
}

#[test]
fn admin_allow_list_guards_the_controllers_writes_too() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    let srv = InProc::start(|c| {
        controller_keys(c, "n0-127.0.0.1:0", "n0", store.path());
        c.admin_allow_list = namesrv::test_support::allow_list::AllowList::parse("10.9.9.9").unwrap();
    });
    let mut admin = ctl(&srv);
    wait_leader(&mut admin);
    let mut b = FakeBroker::new(srv.controller_addr().unwrap(), "broker-a");
    let next = b.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &b.group(), None);
    assert_eq!(next.code, ResponseCode::SUCCESS, "reads stay open");
    let mut apply = b.group();
    apply.push(("appliedBrokerId", "1".into()));
    apply.push(("registerCheckCode", "127.0.0.1:1;1".into()));
    let refused = b.ask(C::CONTROLLER_APPLY_BROKER_ID, &apply, None);
    assert_eq!(refused.code, ResponseCode::NO_PERMISSION);
    assert_eq!(
        refused.remark.as_deref(),
        Some("[ADMIN_ALLOW_LIST] 127.0.0.1 may not send controller request 1013; allowed: 10.9.9.9/32")
    );
    let next = b.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &b.group(), None);
    assert_eq!(next.ext("nextBrokerId"), Some("1"), "nothing was applied");
}

/// A master that hangs without closing its connection is replaced once its heartbeats time out
/// (`scanNotActiveBrokerInterval`), as Java's `DefaultBrokerHeartbeatManager` scan does.
#[test]
fn a_silent_master_is_replaced_after_its_heartbeat_timeout() {
    let _turn = crate::heavy();
    let store = tempfile::tempdir().unwrap();
    // The leader's inactive-master scan would find it too, later: an hour apart here, so only the heartbeat scan
    // (every 10 ms in these tests) can.
    let srv = InProc::start(|c| {
        controller_keys(c, "n0-127.0.0.1:0", "n0", store.path());
        c.extra.insert("scanInactiveMasterInterval".into(), "3600000".into());
    });
    let ctl_addr = srv.controller_addr().unwrap();
    wait_leader(&mut ctl(&srv));
    let mut a = FakeBroker::new(ctl_addr, "broker-a");
    a.register();
    assert_eq!(a.elect().code, ResponseCode::SUCCESS);
    a.role_change();
    let mut b = FakeBroker::new(ctl_addr, "broker-a");
    b.register();
    let ext = vec![("brokerName", "broker-a".to_string()), ("masterBrokerId", "1".into()), ("masterEpoch", "1".into())];
    let body = r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#;
    assert_eq!(a.ask(C::CONTROLLER_ALTER_SYNC_STATE_SET, &ext, Some(body)).code, ResponseCode::SUCCESS);

    // 9 s pass: both heartbeat timeouts (10 s) still hold. Then B heartbeats and 2 more seconds pass: only A is
    // past its timeout.
    srv.clock.advance_ms(9_000);
    b.heartbeat(5);
    srv.clock.advance_ms(2_000);
    let note = b.role_change();
    assert_eq!((note.ext("masterBrokerId"), note.ext("masterEpoch")), (Some("2"), Some("2")));
    let info = b.replica_info();
    assert_eq!((info.ext("masterBrokerId"), info.ext("masterEpoch")), (Some("2"), Some("2")));
    drop(a);
}

/// Twenty connections that each announce a 4 MiB frame and send part of it: the controller port reads them under
/// `controllerFrameBytes` (8 MiB here), so what its read buffers hold stays near the budget (without it every
/// connection reserved its frame's length: 80 MiB), the rest wait, a normal client is answered meanwhile, and all
/// the room comes back when they close.
#[test]
fn half_sent_big_frames_are_read_under_one_budget() {
    let _turn = crate::heavy();
    use std::io::Write;
    use std::sync::atomic::Ordering::Relaxed;
    const BUDGET: usize = 8 * 1024 * 1024;
    const FRAME: usize = 4 * 1024 * 1024;
    const CONNS: usize = 20;
    let store = tempfile::tempdir().unwrap();
    let srv = InProc::start(|c| {
        controller_keys(c, "n0-127.0.0.1:0", "n0", store.path());
        c.extra.insert("controllerFrameBytes".into(), BUDGET.to_string());
    });
    wait_leader(&mut ctl(&srv));
    let m = srv.metrics().controller.clone();
    let addr = srv.controller_addr().unwrap();
    let half: Vec<std::net::TcpStream> = (0..CONNS)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(&(FRAME as u32 - 4).to_be_bytes()).unwrap();
            // As much of the first half as the kernel takes without blocking: a server that stops reading is the
            // point, so the rest may never go.
            s.set_nonblocking(true).unwrap();
            let chunk = vec![0u8; 64 * 1024];
            for _ in 0..FRAME / 2 / chunk.len() {
                if s.write(&chunk).is_err() {
                    break;
                }
            }
            s
        })
        .collect();

    let bound = (BUDGET + CONNS * 64 * 1024) as u64;
    let settled = eventually(WAIT, || {
        m.read_buffer_bytes.load(Relaxed) > bound || m.frames_waiting.load(Relaxed) == (CONNS - BUDGET / FRAME) as u64
    });
    let held = m.read_buffer_bytes.load(Relaxed);
    eprintln!("read buffers: {held} bytes, waiting: {}", m.frames_waiting.load(Relaxed));
    assert!(held <= bound, "read buffers hold {held} bytes with {CONNS} half frames of {FRAME}: over {bound}");
    assert!(settled, "waiting: {}", m.frames_waiting.load(Relaxed));
    assert_eq!(m.frame_room_bytes.load(Relaxed), BUDGET as u64, "two frames fill the budget");

    let mut fresh = ctl(&srv);
    assert_eq!(metadata(&mut fresh).ext("isLeader"), Some("true"), "a normal client is answered meanwhile");

    drop(half);
    let freed = eventually(WAIT, || m.frame_room_bytes.load(Relaxed) == 0 && m.frames_waiting.load(Relaxed) == 0);
    assert!(freed, "room {} waiting {}", m.frame_room_bytes.load(Relaxed), m.frames_waiting.load(Relaxed));
    assert!(m.read_buffer_bytes.load(Relaxed) < 64 * 1024, "{}", m.read_buffer_bytes.load(Relaxed));
}
