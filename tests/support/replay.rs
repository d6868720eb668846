//! Differential replay: the requests a recording proxy (`super::recorder`) captured from real peers are sent, in
//! their recorded order and on the same connection grouping, to a fresh Java 5.5.0 name server and a fresh one of
//! ours (started by `super::differ::run_script`); every reply is normalised and compared there, and differences not
//! in its allow-list fail.
//!
//! Timing-dependent state is made deterministic: after an UNREGISTER_BROKER, and after closing a connection on which
//! brokers registered, the replay waits (up to `differ::POLL_FOR`) until each server no longer lists those brokers,
//! because Java applies both on a background thread and the next recorded request may depend on it.

use std::collections::{BTreeMap, BTreeSet};

use namesrv::protocol::{RemotingCommand, RequestCode};

use super::differ::{run_script, Check, Run};
use super::normalize::{Body, Normalized};
use super::recorder::{decode_frame, Event, Recording};

/// What a replay compared.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Two-way requests compared, per request code.
    pub compared: BTreeMap<i32, usize>,
    /// One-way requests sent (nothing to compare).
    pub oneway: usize,
    /// Connections closed in the recorded order.
    pub closed: usize,
}

/// Replays `recording` against a fresh Java name server and a fresh one of ours; panics (with every unexplained
/// difference) if a reply differed.
pub fn replay(what: &str, recording: &Recording) -> Replayed {
    let mut done = Replayed::default();
    // Java refuses to start without a rocketmqHome and lists it in GET_NAMESRV_CONFIG; ours gets one in its -c
    // file so that both list the key (as in the surface test; docs/compatibility.md).
    let home = std::env::temp_dir().to_string_lossy().into_owned();
    run_script(what, &[], &[("rocketmqHome", &home)], |run| replay_into(run, recording, &mut done));
    done
}

fn replay_into(run: &mut Run, recording: &Recording, done: &mut Replayed) {
    // Broker addresses registered per recorded connection, for waiting out the eviction when it closes.
    let mut registered: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for (i, event) in recording.events.iter().enumerate() {
        match event {
            Event::Request { conn, frame } => {
                let cmd = decode_frame(frame).unwrap_or_else(|e| panic!("recorded request #{i}: {e}"));
                let conn_name = format!("peer-{conn}");
                let broker = cmd.ext("brokerAddr").map(str::to_string);
                if cmd.is_oneway() {
                    run.oneway_frame(&conn_name, frame);
                    done.oneway += 1;
                } else {
                    let name = format!(
                        "#{i} connection {conn}: code {} version {} from {}",
                        cmd.code,
                        cmd.version,
                        cmd.language.map(|l| l.name()).unwrap_or("?")
                    );
                    run.exchange_frame(&name, &conn_name, &cmd, frame, Check::default());
                    *done.compared.entry(cmd.code).or_default() += 1;
                }
                match (cmd.code, broker) {
                    (RequestCode::REGISTER_BROKER, Some(addr)) => {
                        registered.entry(*conn).or_default().insert(addr);
                    }
                    (RequestCode::UNREGISTER_BROKER, Some(addr)) => wait_gone(run, &[addr]),
                    _ => {}
                }
            }
            Event::Closed { conn } => {
                run.close(&format!("peer-{conn}"));
                done.closed += 1;
                let gone: Vec<String> = registered.remove(conn).unwrap_or_default().into_iter().collect();
                if !gone.is_empty() {
                    wait_gone(run, &gone);
                }
            }
            Event::Reply { .. } => {}
        }
    }
}

/// Waits until neither server's cluster info lists any of `addrs`.
fn wait_gone(run: &mut Run, addrs: &[String]) {
    let probe = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, 0);
    let addrs = addrs.to_vec();
    run.settle("replay-probe", &probe, move |n: &Normalized| {
        n.code == 0 && !addrs.iter().any(|a| body_text(n).contains(&format!("\"{a}\"")))
    });
}

fn body_text(n: &Normalized) -> String {
    match &n.body {
        Body::Json(c) => c.to_string(),
        Body::Text(t) => t.clone(),
        Body::Empty => String::new(),
    }
}
