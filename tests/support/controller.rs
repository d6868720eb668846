//! A one-node controller in a name server, and brokers that drive it as a Java 5.x broker in controller mode does
//! (1012 → 1013 → 1003 → 904, then 1002 and 1001), for tests that need a group with a master.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::RemotingCommand;
use namesrv::protocol::ResponseCode;
use namesrv::test_support::protocol::code::ControllerRequestCode as C;

use super::client::Client;
use super::inproc::InProc;

/// One request to the node at `ctl` (a controller, or any RocketMQ server) on a fresh connection, or `None` if it
/// does not connect or answer within `timeout` (nodes that are down or still electing are expected in the multi-node
/// tests).
pub fn try_ask(ctl: SocketAddr, code: i32, ext: &[(&str, &str)], timeout: Duration) -> Option<RemotingCommand> {
    let stream = std::net::TcpStream::connect_timeout(&ctl, timeout).ok()?;
    let mut c = Client::from_stream(stream);
    let cmd = ext.iter().fold(c.cmd(code), |cmd, (k, v)| cmd.with_ext(k, *v));
    c.try_request(cmd, timeout).ok()
}

/// Whom the controller node at `ctl` names as the leader (1005's `controllerLeaderId`), if it answers.
pub fn leader_named_by(ctl: SocketAddr, timeout: Duration) -> Option<String> {
    try_ask(ctl, C::CONTROLLER_GET_METADATA_INFO, &[], timeout)?.ext("controllerLeaderId").map(str::to_owned)
}

/// The controller keys of a node `me` of `peers` (`n0-127.0.0.1:0;…`), group `group1`, its files in `store`.
pub fn controller_keys(c: &mut Config, peers: &str, me: &str, store: &Path) {
    c.enable_controller_in_namesrv = true;
    c.extra.insert("controllerDLegerGroup".into(), "group1".into());
    c.extra.insert("controllerDLegerPeers".into(), peers.into());
    c.extra.insert("controllerDLegerSelfId".into(), me.into());
    c.extra.insert("controllerStorePath".into(), store.to_string_lossy().into_owned());
}

/// One name server with a one-node controller on a free port, once that node leads.
pub fn single_leader(store: &Path) -> InProc {
    let srv = InProc::start(|c| controller_keys(c, "n0-127.0.0.1:0", "n0", store));
    let mut c = Client::connect(controller_addr(&srv));
    let leads = super::eventually(Duration::from_secs(15), || {
        let cmd = c.cmd(C::CONTROLLER_GET_METADATA_INFO);
        c.request(cmd).ext("isLeader") == Some("true")
    });
    assert!(leads, "the controller node became leader");
    srv
}

/// The controller's address on 127.0.0.1.
pub fn controller_addr(srv: &InProc) -> SocketAddr {
    let port = srv.controller_addr().expect("the controller runs").port();
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A broker as the controller sees it: a connection (closing it counts as the broker going away), and a listening
/// address where 1008 arrives (`role_change`).
pub struct ControllerBroker {
    pub name: &'static str,
    pub id: i64,
    conn: Client,
    listener: TcpListener,
}

/// How long a test waits for the controller to act.
const WAIT: Duration = Duration::from_secs(15);

impl ControllerBroker {
    pub fn new(controller: SocketAddr, name: &'static str) -> ControllerBroker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        ControllerBroker { name, id: 0, conn: Client::connect(controller), listener }
    }

    pub fn addr(&self) -> String {
        self.listener.local_addr().unwrap().to_string()
    }

    pub fn ask(&mut self, code: i32, ext: &[(&str, String)], body: Option<&str>) -> RemotingCommand {
        let mut cmd = self.conn.cmd(code);
        for (k, v) in ext {
            cmd = cmd.with_ext(k, v.clone());
        }
        if let Some(body) = body {
            cmd = cmd.with_body(body.as_bytes().to_vec());
        }
        self.conn.request(cmd)
    }

    /// clusterName and brokerName.
    pub fn group(&self) -> Vec<(&'static str, String)> {
        vec![("clusterName", "DefaultCluster".to_string()), ("brokerName", self.name.into())]
    }

    /// `group()`, the broker's id once it has one, and `more`.
    pub fn with_id(&self, more: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
        let mut ext = self.group();
        if self.id > 0 {
            ext.push(("brokerId", self.id.to_string()));
        }
        ext.extend(more.iter().cloned());
        ext
    }

    /// 1012, 1013, 1003 and a 904 heartbeat: what a fresh broker does before it asks for an election. Returns
    /// 1003's answer.
    pub fn register(&mut self) -> RemotingCommand {
        let next = self.ask(C::CONTROLLER_GET_NEXT_BROKER_ID, &self.group(), None);
        assert_eq!(next.code, ResponseCode::SUCCESS, "{next:?}");
        self.id = next.ext_i64("nextBrokerId").expect("nextBrokerId");
        let check = format!("{};1700000000000", self.addr());
        let apply = self.with_id(&[("appliedBrokerId", self.id.to_string()), ("registerCheckCode", check)]);
        let applied = self.ask(C::CONTROLLER_APPLY_BROKER_ID, &apply, None);
        assert_eq!(applied.code, ResponseCode::SUCCESS, "{applied:?}");
        let registered =
            self.ask(C::CONTROLLER_REGISTER_BROKER, &self.with_id(&[("brokerAddress", self.addr())]), None);
        assert_eq!(registered.code, ResponseCode::SUCCESS, "{registered:?}");
        self.heartbeat(0);
        registered
    }

    /// A 904 as a broker of epoch 0 at `max_offset`, with a 10 s timeout.
    pub fn heartbeat(&mut self, max_offset: i64) {
        let heartbeat = self.with_id(&[
            ("brokerAddr", self.addr()),
            ("epoch", "0".into()),
            ("maxOffset", max_offset.to_string()),
            ("heartbeatTimeoutMills", "10000".into()),
        ]);
        let beat = self.ask(C::BROKER_HEARTBEAT, &heartbeat, None);
        assert_eq!((beat.code, beat.remark.as_deref()), (ResponseCode::SUCCESS, Some("Heart beat success")));
    }

    /// 1002 for itself.
    pub fn elect(&mut self) -> RemotingCommand {
        self.ask(C::CONTROLLER_ELECT_MASTER, &self.with_id(&[]), None)
    }

    /// 1004 for its group.
    pub fn replica_info(&mut self) -> RemotingCommand {
        self.ask(C::CONTROLLER_GET_REPLICA_INFO, &[("brokerName", self.name.into())], None)
    }

    /// 1001 from this broker as master `epoch`: the SyncStateSet becomes `ids`, fenced by `sync_epoch`.
    pub fn alter_sync_state_set(&mut self, epoch: i32, ids: &[i64], sync_epoch: i32) -> RemotingCommand {
        let ext = [
            ("brokerName", self.name.to_string()),
            ("masterBrokerId", self.id.to_string()),
            ("masterEpoch", epoch.to_string()),
        ];
        let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
        let body = format!(r#"{{"syncStateSet":[{}],"syncStateSetEpoch":{sync_epoch}}}"#, ids.join(","));
        self.ask(C::CONTROLLER_ALTER_SYNC_STATE_SET, &ext, Some(&body))
    }

    /// The next 1008 the controller sends to this broker's address.
    pub fn role_change(&self) -> RemotingCommand {
        self.listener.set_nonblocking(true).unwrap();
        let mut accepted = None;
        let connected = super::eventually(WAIT, || {
            accepted = accepted.take().or_else(|| self.listener.accept().ok().map(|(stream, _)| stream));
            accepted.is_some()
        });
        assert!(connected, "the controller connects to {} with a 1008", self.addr());
        let stream = accepted.unwrap();
        stream.set_nonblocking(false).unwrap();
        Client::from_stream(stream).recv(WAIT).expect("a 1008 frame")
    }
}
