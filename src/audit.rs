//! The audit trail: one line per state-changing request, accepted or refused, and per broker removal, at INFO
//! under the tracing target `audit` (docs/security.md has the format). `auditLogPath` sends these lines to a file
//! of their own; `RUST_LOG=audit=off` silences them. Lines name the peer, the account (if the request was signed),
//! the request, its facts (broker, topic, namespace/key, config keys: never values or secrets) and the outcome.
//! Whatever a peer chose is cut to a bound first ([`crate::clip`]): a line is never longer than a few KiB, however
//! long the names in the request.
//!
//! Liveness that changes nothing an operator would look for is logged at DEBUG: accepted heartbeats (904),
//! QUERY_DATA_VERSION (322) and re-registrations that leave the routes as they were — every broker sends those
//! every few seconds.

use std::net::IpAddr;

use tracing::Level;

use crate::clip::{clip, ACCESS_KEY_CHARS, NAME_CHARS, REMARK_CHARS};
use crate::protocol::{RemotingCommand, RequestCode as C, ResponseCode};

/// The tracing target of every audit line.
pub(crate) const TARGET: &str = "audit";

/// Is anybody listening? Callers skip building facts when not.
pub(crate) fn enabled() -> bool {
    tracing::enabled!(target: "audit", Level::INFO)
}

/// A write answered without reaching the writer: invalid, or with nothing to do. (Writes refused for a limit, the
/// allow-list or the ACL go through `RefusedWrite`.)
pub(crate) fn answered(peer: IpAddr, account: Option<&str>, req: &RemotingCommand, response: &RemotingCommand) {
    if enabled() {
        let (code, remark) = (response.code, response.remark.as_deref().unwrap_or(""));
        line(peer, account, req.code, &answered_facts(account, req), code, remark, false);
    }
}

fn answered_facts(account: Option<&str>, req: &RemotingCommand) -> String {
    let mut facts = request_facts(req);
    // Not signed (or not verified): the account it claimed to be, so that a refusal can be traced.
    if let (None, Some(claimed)) = (account, req.ext(crate::acl::signature::ACCESS_KEY)) {
        push(&mut facts, "claimedAccount", &clip(claimed, ACCESS_KEY_CHARS));
    }
    facts
}

/// The audit line of a write refused for a limit, the allow-list or the ACL: built where the request is at hand
/// ([`crate::handlers::dispatch`], on a reactor or the decoder thread), then written — or counted into a summary, when
/// the same peer was refused the same way moments before — by the reactor that answers it (`reactor/refusals.rs`).
#[derive(Debug)]
pub(crate) struct RefusedWrite {
    pub peer: IpAddr,
    account: Option<String>,
    code: i32,
    facts: String,
}

impl RefusedWrite {
    /// `None` when nobody listens to the audit trail.
    pub(crate) fn new(peer: IpAddr, account: Option<&str>, req: &RemotingCommand) -> Option<Box<RefusedWrite>> {
        enabled().then(|| {
            let facts = answered_facts(account, req);
            Box::new(RefusedWrite { peer, account: account.map(str::to_owned), code: req.code, facts })
        })
    }

    /// The line, with the refusal's outcome and remark.
    pub(crate) fn write(&self, response: &RemotingCommand) {
        let remark = response.remark.as_deref().unwrap_or("");
        line(self.peer, self.account.as_deref(), self.code, &self.facts, response.code, remark, false);
    }
}

/// The refused writes of one peer (`None`: of the peers past the tracked ones) not audited one by one in the
/// interval that just ended.
pub(crate) fn refusals_summary(peer: Option<IpAddr>, reason: &str, more: u64, seconds: i64) {
    let from = peer.map_or_else(|| "other peers".to_string(), |p| p.to_string());
    tracing::info!(target: "audit", peer = %from, reason, more, seconds,
        "… and {more} more refusals of {reason} from {from} in the last {seconds}s");
}

/// A write the writer applied (or failed to make durable), answered `outcome` with `remark`. `routine`: it changed
/// nothing an operator looks for.
pub(crate) fn applied(
    peer: IpAddr,
    account: Option<&str>,
    code: i32,
    facts: &str,
    outcome: i32,
    remark: &str,
    routine: bool,
) {
    line(peer, account, code, facts, outcome, remark, routine);
}

fn line(peer: IpAddr, account: Option<&str>, code: i32, facts: &str, outcome: i32, remark: &str, routine: bool) {
    let request = crate::protocol::code::request_name(code);
    let account = account.unwrap_or("-");
    let remark = &*clip(remark, REMARK_CHARS);
    if routine && outcome == ResponseCode::SUCCESS {
        tracing::debug!(target: "audit", %peer, account, request, code, facts, outcome, remark, "request");
    } else {
        tracing::info!(target: "audit", %peer, account, request, code, facts, outcome, remark, "request");
    }
}

/// A broker left the route table, and why.
pub(crate) fn removed(cluster: &str, broker: &str, id: i64, addr: &str, cause: &str) {
    let (cluster, broker, addr) = (&*clip(cluster, NAME_CHARS), &*clip(broker, NAME_CHARS), &*clip(addr, NAME_CHARS));
    tracing::info!(target: "audit", cluster, broker, id, addr, cause, "broker removed");
}

/// The controller's requests that change its state (ids applied, registrations, elections, SyncStateSet changes,
/// cleans, config updates), accepted or refused, with the new master or epoch the answer carries. Heartbeats and
/// reads are not logged.
pub(crate) fn controller(peer: IpAddr, req: &RemotingCommand, response: &RemotingCommand) {
    use crate::protocol::code::ControllerRequestCode as CC;
    let request = match req.code {
        CC::CONTROLLER_ALTER_SYNC_STATE_SET => "CONTROLLER_ALTER_SYNC_STATE_SET",
        CC::CONTROLLER_ELECT_MASTER => "CONTROLLER_ELECT_MASTER",
        CC::CONTROLLER_REGISTER_BROKER => "CONTROLLER_REGISTER_BROKER",
        CC::UPDATE_CONTROLLER_CONFIG => "UPDATE_CONTROLLER_CONFIG",
        CC::CLEAN_BROKER_DATA => "CLEAN_BROKER_DATA",
        CC::CONTROLLER_APPLY_BROKER_ID => "CONTROLLER_APPLY_BROKER_ID",
        _ => return,
    };
    if !enabled() {
        return;
    }
    const SHOWN: [&str; 9] = [
        "clusterName",
        "brokerName",
        "brokerId",
        "brokerAddress",
        "appliedBrokerId",
        "masterBrokerId",
        "masterEpoch",
        "brokerControllerIdsToClean",
        "designateElect",
    ];
    let mut facts = String::new();
    for key in SHOWN {
        if let Some(v) = req.ext(key) {
            push(&mut facts, key, v);
        }
    }
    for (key, shown) in [
        ("masterBrokerId", "newMasterBrokerId"),
        ("masterEpoch", "newMasterEpoch"),
        ("newSyncStateSetEpoch", "newSyncStateSetEpoch"),
    ] {
        if let (Some(v), true) = (response.ext(key), response.code == ResponseCode::SUCCESS) {
            push(&mut facts, shown, v);
        }
    }
    let (outcome, remark) = (response.code, &*clip(response.remark.as_deref().unwrap_or(""), REMARK_CHARS));
    tracing::info!(target: "audit", %peer, request, code = req.code, facts, outcome, remark, "controller request");
}

/// The controller elected (or failed to elect) a master on its own, after the master was lost.
pub(crate) fn controller_election(broker: &str, master: Option<i64>, epoch: Option<i32>, outcome: i32, remark: &str) {
    let master = master.map_or_else(|| "-".to_string(), |m| m.to_string());
    let epoch = epoch.map_or_else(|| "-".to_string(), |e| e.to_string());
    tracing::info!(target: "audit", broker, master, epoch, outcome, remark, "controller election");
}

/// The ext fields an operator identifies a request by, and for UPDATE_NAMESRV_CONFIG the keys of its body (never
/// their values, never a KV value, never a signature).
pub(crate) fn request_facts(req: &RemotingCommand) -> String {
    const SHOWN: [&str; 8] =
        ["clusterName", "brokerName", "brokerAddr", "brokerId", "cluster", "topic", "namespace", "key"];
    let mut out = String::new();
    for (k, v) in req.ext_fields.iter().flat_map(|e| e.0.iter()) {
        if SHOWN.contains(&k.as_str()) {
            push(&mut out, k, v);
        }
    }
    if req.code == C::UPDATE_NAMESRV_CONFIG {
        let text = String::from_utf8_lossy(&req.body);
        if let Ok(pairs) = crate::protocol::props::parse(&text) {
            let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            push(&mut out, "keys", &keys.join(","));
        }
    }
    out
}

/// Appends `key=value`, space-separated, with the value quoted if it has a space or a quote (names are peers'
/// input: a crafted one must not fake another field) and cut to `NAME_CHARS` (nor flood the trail).
pub(crate) fn push(out: &mut String, key: &str, value: &str) {
    let value = &*clip(value, NAME_CHARS);
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(key);
    out.push('=');
    if value.is_empty() || value.contains([' ', '"', '=', '\n', '\r']) {
        out.push_str(&format!("{value:?}"));
    } else {
        out.push_str(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_name_things_but_not_values() {
        let req = RemotingCommand::request(C::PUT_KV_CONFIG, 1)
            .with_ext("namespace", "NS")
            .with_ext("key", "k 1")
            .with_ext("value", "secret-ish")
            .with_ext("Signature", "sig");
        assert_eq!(request_facts(&req), "namespace=NS key=\"k 1\"");
        let req = RemotingCommand::request(C::UPDATE_NAMESRV_CONFIG, 1)
            .with_body(b"orderMessageEnable=true\nkvConfigPath=/x\n".to_vec());
        assert_eq!(request_facts(&req), "keys=orderMessageEnable,kvConfigPath");
        let req = RemotingCommand::request(C::WIPE_WRITE_PERM_OF_BROKER, 1).with_ext("brokerName", "b x=1");
        assert_eq!(request_facts(&req), "brokerName=\"b x=1\"");
    }

    #[test]
    fn long_names_are_cut_in_the_facts() {
        let topic = "t".repeat(100_000);
        let req = RemotingCommand::request(C::DELETE_TOPIC_IN_NAMESRV, 1).with_ext("topic", &topic);
        let facts = request_facts(&req);
        assert_eq!(facts, format!("topic=\"{}…(+99872 chars)\"", "t".repeat(128)));
        let topic = "t".repeat(128);
        let req = RemotingCommand::request(C::DELETE_TOPIC_IN_NAMESRV, 1).with_ext("topic", &topic);
        assert_eq!(request_facts(&req), format!("topic={topic}"), "a name at the bound is kept whole");
    }
}
