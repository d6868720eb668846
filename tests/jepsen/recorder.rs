//! The recorder: one thread per controller node and one for the name server, each polling on a short interval and
//! appending what it saw to the shared history (`history.rs`). Requests have a short timeout, so a node that is
//! cut or paused costs its own thread a timeout and nobody else anything.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use namesrv::protocol::json::{self, Value};
use namesrv::protocol::RemotingCommand;
use namesrv::test_support::protocol::code::ControllerRequestCode as C;

use crate::cluster::GROUP;
use crate::history::{Event, Replica};
use crate::support::client::Client;

/// Between two polls of one target.
const INTERVAL: Duration = Duration::from_millis(200);
/// A request's connect and answer timeout: above a loaded machine's latency, well below the faults' lengths.
const TIMEOUT: Duration = Duration::from_millis(800);

/// The shared history (of the controller test's `Event`s, or the fleet test's) and the run's clock.
pub struct Log<E = Event> {
    t0: Instant,
    /// The wall clock at `t0`, in ms since the epoch: the clients write wall-clock times.
    t0_epoch_ms: u64,
    events: Arc<Mutex<Vec<E>>>,
}

impl<E> Clone for Log<E> {
    fn clone(&self) -> Self {
        Log { t0: self.t0, t0_epoch_ms: self.t0_epoch_ms, events: Arc::clone(&self.events) }
    }
}

impl<E: Clone> Log<E> {
    /// A new history, its clock starting now.
    pub fn start() -> Log<E> {
        let epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Log { t0: Instant::now(), t0_epoch_ms: epoch.as_millis() as u64, events: Arc::new(Mutex::new(Vec::new())) }
    }

    pub fn now_ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// A wall-clock time (ms since the epoch, as a client on this machine printed it) on the run's clock.
    pub fn run_ms(&self, epoch_ms: u64) -> u64 {
        epoch_ms.saturating_sub(self.t0_epoch_ms)
    }

    pub fn push(&self, e: E) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }

    pub fn snapshot(&self) -> Vec<E> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One request on a fresh connection, or `None` if the node does not connect or answer within `timeout`. The
/// test client panics when a connection it was handed is already reset (its peer address is gone), which is what a
/// node killed mid-request does: here that is one more missing answer, not the end of a poller.
pub fn ask(addr: SocketAddr, code: i32, ext: &[(&str, &str)], timeout: Duration) -> Option<RemotingCommand> {
    let stream = std::net::TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.peer_addr().ok()?;
    std::panic::catch_unwind(move || {
        let mut c = Client::from_stream(stream);
        let cmd = ext.iter().fold(c.cmd(code), |cmd, (k, v)| cmd.with_ext(k, *v));
        c.try_request(cmd, timeout).ok()
    })
    .ok()
    .flatten()
}

/// 1004's answer as a `Replica`, if it is SUCCESS and well formed.
pub fn parse_replica(node: &str, sent_ms: u64, recv_ms: u64, r: &RemotingCommand) -> Option<Replica> {
    if r.code != 0 {
        return None;
    }
    let body = json::parse(&r.body).ok()?;
    let sss = match body.get("syncStateSet") {
        Some(Value::Array(ids)) => ids.iter().filter_map(Value::as_i64).collect(),
        _ => Vec::new(),
    };
    Some(Replica {
        node: node.to_string(),
        sent_ms,
        recv_ms,
        master_id: r.ext_i64("masterBrokerId").unwrap_or(-1),
        master_addr: r.ext("masterAddress").unwrap_or_default().to_string(),
        master_epoch: r.ext_i64("masterEpoch").unwrap_or(0),
        sss,
        sss_epoch: body.get("syncStateSetEpoch").and_then(Value::as_i64).unwrap_or(0),
    })
}

/// 1004 for `GROUP` from the node at `addr`.
pub fn replica_info(addr: SocketAddr) -> Option<RemotingCommand> {
    ask(addr, C::CONTROLLER_GET_REPLICA_INFO, &[("brokerName", GROUP)], TIMEOUT)
}

/// The address the name server at `ns` registers as brokerId 0 of `GROUP` (106); `Err` if it did not answer.
pub fn route_master(ns: SocketAddr) -> Result<Option<String>, ()> {
    let r = ask(ns, 106, &[], TIMEOUT).filter(|r| r.code == 0).ok_or(())?;
    let v = json::parse(&r.body).map_err(drop)?;
    let master = v
        .get("brokerAddrTable")
        .and_then(|t| t.get(GROUP))
        .and_then(|g| g.get("brokerAddrs"))
        .and_then(|addrs| match addrs {
            Value::Object(members) => members.iter().find(|(id, _)| id == "0").and_then(|(_, a)| a.as_str()),
            _ => None,
        })
        .map(|a| a.into_owned());
    Ok(master)
}

/// The polling threads; stopped and joined by `stop` or on drop.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Recorder {
    /// Polls every controller (`(name, address)`: 1005 and 1004) and the name server (106).
    pub fn start(log: &Log, controllers: &[(String, SocketAddr)], ns: SocketAddr) -> Recorder {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (node, addr) in controllers.iter().cloned() {
            let (log, stop) = (log.clone(), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    poll_controller(&log, &node, addr);
                    std::thread::sleep(INTERVAL);
                }
            }));
        }
        let (log, stop2) = (log.clone(), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let at_ms = log.now_ms();
                match route_master(ns) {
                    Ok(master_addr) => log.push(Event::Route { at_ms, master_addr }),
                    Err(()) => log.push(Event::NoAnswer { node: "namesrv".into(), at_ms, what: "106".into() }),
                }
                std::thread::sleep(INTERVAL);
            }
        }));
        Recorder { stop, threads }
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
    }
}

fn poll_controller(log: &Log, node: &str, addr: SocketAddr) {
    let at_ms = log.now_ms();
    let leads = match ask(addr, C::CONTROLLER_GET_METADATA_INFO, &[], TIMEOUT) {
        Some(r) if r.code == 0 => {
            let is_leader = r.ext("isLeader") == Some("true");
            log.push(Event::Meta {
                node: node.to_string(),
                at_ms,
                leader: r.ext("controllerLeaderId").map(str::to_owned),
                is_leader,
            });
            is_leader
        }
        other => {
            let what = other.map_or("1005: no answer".to_string(), |r| format!("1005: code {}", r.code));
            log.push(Event::NoAnswer { node: node.to_string(), at_ms, what });
            return;
        }
    };
    let sent_ms = log.now_ms();
    // Our followers answer 2007 (reads are served by the leader only): nothing to record. Java's followers may
    // answer from their own state: recorded apart (history.rs, `FollowerRead`).
    if let Some(r) = replica_info(addr) {
        let recv_ms = log.now_ms();
        if let Some(replica) = parse_replica(node, sent_ms, recv_ms, &r) {
            log.push(if leads { Event::Replica(replica) } else { Event::FollowerRead(replica) });
        }
    }
}
