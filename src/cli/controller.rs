//! Controller (RIP-44) commands, sent to a controller's own port (`-a`), not to a name server: `controller-meta`
//! (1005), `sync-state-set` (1006), `elect-master` (1002) and `clean-broker-metadata` (1011), with mqadmin's names
//! (`getControllerMetaData`, `getSyncStateSet`, `electMaster`, `cleanBrokerMetadata`) and flags. Everything but
//! the metadata goes to the leader, found with 1005 (its `controllerLeaderAddress`), as mqadmin does.

use clap::Args;

use crate::protocol::code::{ControllerRequestCode as C, ControllerResponseCode as CR};
use crate::protocol::json::{self, Value};
use crate::protocol::ResponseCode;

use super::client::Client;
use super::table::Table;
use super::{bad_body, call, CliError, Ctx, Output};

/// `-a`: one controller, or several separated by ';' (any of them leads to the leader).
#[derive(Args, Debug, Clone)]
pub(super) struct Controllers {
    /// Controller address host:port (its own port, from controllerDLegerPeers); several separated by ';'.
    #[arg(short = 'a', long = "controllerAddress", value_name = "HOST:PORT", required = true)]
    addr: String,
}

impl Controllers {
    fn list(&self) -> Vec<&str> {
        self.addr.split(';').map(str::trim).filter(|a| !a.is_empty()).collect()
    }
}

#[derive(Args, Debug, Clone)]
pub struct MetaArgs {
    #[command(flatten)]
    at: Controllers,
}

#[derive(Args, Debug, Clone)]
pub struct SyncStateArgs {
    #[command(flatten)]
    at: Controllers,
    /// Broker group (broker name); repeat it, or separate names with ','.
    #[arg(short = 'b', long = "brokerName", value_name = "BROKER", required = true, action = clap::ArgAction::Append)]
    brokers: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ElectArgs {
    #[command(flatten)]
    at: Controllers,
    /// The broker (controller id) to make master.
    #[arg(short = 'b', long = "brokerId", value_name = "ID")]
    broker_id: i64,
    /// Broker group (mqadmin's `-bn`, or `--bn`).
    #[arg(long = "brokerName", visible_alias = "bn", value_name = "BROKER")]
    broker_name: String,
    /// The group's cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    cluster: String,
}

#[derive(Args, Debug, Clone)]
pub struct CleanArgs {
    #[command(flatten)]
    at: Controllers,
    /// Broker group (mqadmin's `-bn`, or `--bn`).
    #[arg(long = "brokerName", visible_alias = "bn", value_name = "BROKER")]
    broker_name: String,
    /// The group's cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    cluster: Option<String>,
    /// Controller broker ids to clean, separated by ';' ("1;2"); without it, the whole group (if it has no master).
    #[arg(short = 'b', long = "brokerControllerIdsToClean", value_name = "IDS")]
    ids: Option<String>,
    /// Clean even if brokers of the group are alive: the controller then cleans the whole group, whatever -b
    /// names (as Java's does).
    #[arg(short = 'l', long = "cleanLivingBroker")]
    clean_living: bool,
}

/// Java names of the controller response codes (2000–2016).
pub(super) fn response_name(code: i32) -> Option<&'static str> {
    Some(match code {
        CR::CONTROLLER_FENCED_MASTER_EPOCH => "CONTROLLER_FENCED_MASTER_EPOCH",
        CR::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH => "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
        CR::CONTROLLER_INVALID_MASTER => "CONTROLLER_INVALID_MASTER",
        CR::CONTROLLER_INVALID_REPLICAS => "CONTROLLER_INVALID_REPLICAS",
        CR::CONTROLLER_MASTER_NOT_AVAILABLE => "CONTROLLER_MASTER_NOT_AVAILABLE",
        CR::CONTROLLER_INVALID_REQUEST => "CONTROLLER_INVALID_REQUEST",
        CR::CONTROLLER_BROKER_NOT_ALIVE => "CONTROLLER_BROKER_NOT_ALIVE",
        CR::CONTROLLER_NOT_LEADER => "CONTROLLER_NOT_LEADER",
        CR::CONTROLLER_BROKER_METADATA_NOT_EXIST => "CONTROLLER_BROKER_METADATA_NOT_EXIST",
        CR::CONTROLLER_INVALID_CLEAN_BROKER_METADATA => "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
        CR::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED => "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
        CR::CONTROLLER_MASTER_STILL_EXIST => "CONTROLLER_MASTER_STILL_EXIST",
        CR::CONTROLLER_ELECT_MASTER_FAILED => "CONTROLLER_ELECT_MASTER_FAILED",
        CR::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED => "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
        CR::CONTROLLER_BROKER_ID_INVALID => "CONTROLLER_BROKER_ID_INVALID",
        CR::CONTROLLER_JRAFT_INTERNAL_ERROR => "CONTROLLER_JRAFT_INTERNAL_ERROR",
        CR::CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS => "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
        _ => return None,
    })
}

/// A 1005 answer.
struct Meta {
    addr: String,
    group: String,
    leader_id: String,
    leader_addr: String,
    is_leader: bool,
    /// `id:host:port;…` as the node reports it.
    peers: String,
}

fn metadata(client: &mut Client) -> Result<Meta, CliError> {
    let cmd = client.cmd(C::CONTROLLER_GET_METADATA_INFO);
    let resp = call(client, cmd)?;
    let field = |k: &str| resp.ext(k).unwrap_or_default().to_string();
    Ok(Meta {
        addr: client.addr().to_string(),
        group: field("group"),
        leader_id: field("controllerLeaderId"),
        leader_addr: field("controllerLeaderAddress"),
        is_leader: resp.ext("isLeader") == Some("true"),
        peers: field("peers"),
    })
}

/// Peers as (id, address): `n0:127.0.0.1:9878;` (ours) or `n0-127.0.0.1:9878;` (controllerDLegerPeers' form).
fn peers(text: &str) -> Vec<(String, String)> {
    text.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once(':') {
            Some((id, addr)) if addr.contains(':') => (id.to_string(), addr.to_string()),
            _ => match p.split_once('-') {
                Some((id, addr)) => (id.to_string(), addr.to_string()),
                None => (String::new(), p.to_string()),
            },
        })
        .collect()
}

/// A connection to the leader: the first controller of `-a` that answers 1005 names it.
fn leader(ctx: &Ctx, at: &Controllers) -> Result<Client, CliError> {
    let mut last = None;
    for addr in at.list() {
        let meta = match ctx.connect(addr).and_then(|mut c| metadata(&mut c).map(|m| (m, c))) {
            Ok(found) => found,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        return match meta {
            (m, client) if m.is_leader => Ok(client),
            (m, _) if m.leader_addr.is_empty() => Err(CliError::Server {
                addr: m.addr,
                code: CR::CONTROLLER_NOT_LEADER,
                remark: Some("no controller leader is known yet (an election may be under way)".into()),
            }),
            (m, _) => ctx.connect(&m.leader_addr),
        };
    }
    Err(last.unwrap_or_else(|| CliError::Usage("-a names no controller address".into())))
}

pub(super) fn meta(ctx: &Ctx, args: &MetaArgs) -> Result<Output, CliError> {
    let mut metas = Vec::new();
    for addr in args.at.list() {
        metas.push(metadata(&mut ctx.connect(addr)?)?);
    }
    if ctx.json {
        let nodes: Vec<serde_json::Value> = metas
            .iter()
            .map(|m| {
                let peers: Vec<serde_json::Value> =
                    peers(&m.peers).into_iter().map(|(id, a)| serde_json::json!({ "id": id, "address": a })).collect();
                serde_json::json!({
                    "controller": m.addr,
                    "group": m.group,
                    "controllerLeaderId": m.leader_id,
                    "controllerLeaderAddress": m.leader_addr,
                    "isLeader": m.is_leader,
                    "peers": peers,
                })
            })
            .collect();
        return Ok(Output::json(&serde_json::json!({ "controllers": nodes })));
    }
    let mut t = Table::new(&["CONTROLLER", "GROUP", "LEADER ID", "LEADER ADDRESS", "IS LEADER"]);
    for m in &metas {
        let cell = |s: &str| if s.is_empty() { "-".to_string() } else { s.to_string() };
        t.row(vec![m.addr.clone(), cell(&m.group), cell(&m.leader_id), cell(&m.leader_addr), m.is_leader.to_string()]);
    }
    let mut p = Table::new(&["PEER", "ADDRESS"]);
    for (id, addr) in metas.first().map(|m| peers(&m.peers)).unwrap_or_default() {
        p.row(vec![id, addr]);
    }
    Ok(Output::ok(format!("{}\nPeers\n{}", t.render(), p.render())))
}

/// One broker of a group, as 1006 lists it.
struct Replica {
    id: i64,
    addr: String,
    alive: bool,
    in_sync: bool,
}

/// One group of a 1006 answer.
struct SyncState {
    name: String,
    master_id: Option<i64>,
    master_addr: String,
    master_epoch: i64,
    sync_state_set_epoch: i64,
    replicas: Vec<Replica>,
}

/// The SyncStateSet answer (1006) was no JSON.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the SyncStateSet data: {0}")]
struct SyncStateError(#[source] json::JsonError);

fn sync_states(body: &[u8]) -> Result<Vec<SyncState>, SyncStateError> {
    let v = json::parse(body).map_err(SyncStateError)?;
    let long = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(|s| s.into_owned()).unwrap_or_default();
    let mut out = Vec::new();
    for (name, g) in v.get("replicasInfoTable").map(Value::members).unwrap_or_default() {
        let mut replicas = Vec::new();
        for (key, in_sync) in [("inSyncReplicas", true), ("notInSyncReplicas", false)] {
            if let Some(Value::Array(items)) = g.get(key) {
                replicas.extend(items.iter().map(|r| Replica {
                    id: long(r, "brokerId").unwrap_or(-1),
                    addr: text(r, "brokerAddress"),
                    alive: r.get("alive").and_then(Value::as_bool).unwrap_or(false),
                    in_sync,
                }));
            }
        }
        replicas.sort_by_key(|r| r.id);
        out.push(SyncState {
            name: name.clone(),
            master_id: long(g, "masterBrokerId"),
            master_addr: text(g, "masterAddress"),
            master_epoch: long(g, "masterEpoch").unwrap_or(0),
            sync_state_set_epoch: long(g, "syncStateSetEpoch").unwrap_or(0),
            replicas,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The groups of 1006 for the names asked; exit 1 if the controller knows none of some of them.
pub(super) fn sync_state_set(ctx: &Ctx, args: &SyncStateArgs) -> Result<Output, CliError> {
    let mut names: Vec<String> = args
        .brokers
        .iter()
        .flat_map(|b| b.split(','))
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(String::from)
        .collect();
    names.sort();
    names.dedup();
    let mut client = leader(ctx, &args.at)?;
    let body = serde_json::to_vec(&names).unwrap_or_default();
    let cmd = client.cmd(C::CONTROLLER_GET_SYNC_STATE_DATA).with_body(body);
    let resp = call(&mut client, cmd)?;
    let groups = sync_states(&resp.body).map_err(|e| bad_body(&client, e.to_string()))?;
    let unknown: Vec<&String> = names.iter().filter(|n| !groups.iter().any(|g| &g.name == *n)).collect();
    let code = u8::from(!unknown.is_empty());

    if ctx.json {
        let table: serde_json::Map<String, serde_json::Value> = groups
            .iter()
            .map(|g| {
                let replicas = |in_sync: bool| -> Vec<serde_json::Value> {
                    g.replicas
                        .iter()
                        .filter(|r| r.in_sync == in_sync)
                        .map(|r| serde_json::json!({ "brokerId": r.id, "brokerAddress": r.addr, "alive": r.alive }))
                        .collect()
                };
                let v = serde_json::json!({
                    "masterBrokerId": g.master_id,
                    "masterAddress": g.master_addr,
                    "masterEpoch": g.master_epoch,
                    "syncStateSetEpoch": g.sync_state_set_epoch,
                    "inSyncReplicas": replicas(true),
                    "notInSyncReplicas": replicas(false),
                });
                (g.name.clone(), v)
            })
            .collect();
        let v = serde_json::json!({ "controller": client.addr(), "replicasInfoTable": table, "unknown": unknown });
        return Ok(Output { text: super::json_text(&v), code });
    }

    let mut groups_t = Table::new(&["BROKER", "MASTER ID", "MASTER ADDRESS", "MASTER EPOCH", "SYNC STATE SET EPOCH"]);
    let mut replicas_t = Table::new(&["BROKER", "ID", "ADDRESS", "IN SYNC", "ALIVE"]);
    for g in &groups {
        let master = g.master_id.map_or_else(|| "-".to_string(), |id| id.to_string());
        let addr = if g.master_addr.is_empty() { "-".to_string() } else { g.master_addr.clone() };
        groups_t.row(vec![
            g.name.clone(),
            master,
            addr,
            g.master_epoch.to_string(),
            g.sync_state_set_epoch.to_string(),
        ]);
        for r in &g.replicas {
            replicas_t.row(vec![
                g.name.clone(),
                r.id.to_string(),
                r.addr.clone(),
                r.in_sync.to_string(),
                r.alive.to_string(),
            ]);
        }
    }
    let mut text = String::new();
    if !groups.is_empty() {
        text = format!("{}\nReplicas\n{}", groups_t.render(), replicas_t.render());
    }
    for name in &unknown {
        text.push_str(&format!("Broker group {name} is unknown to the controller.\n"));
    }
    Ok(Output { text, code })
}

pub(super) fn elect_master(ctx: &Ctx, args: &ElectArgs) -> Result<Output, CliError> {
    let mut client = leader(ctx, &args.at)?;
    let cmd = client
        .cmd(C::CONTROLLER_ELECT_MASTER)
        .with_ext("clusterName", args.cluster.as_str())
        .with_ext("brokerName", args.broker_name.as_str())
        .with_ext("brokerId", args.broker_id.to_string())
        .with_ext("designateElect", "true");
    let resp = client.request(cmd)?;
    let long = |k: &str| resp.ext(k).and_then(|v| v.trim().parse::<i64>().ok());
    let master_id = long("masterBrokerId");
    // The designated broker is already the master: the controller says so with MASTER_STILL_EXIST; not a failure.
    let already = resp.code == CR::CONTROLLER_MASTER_STILL_EXIST && master_id == Some(args.broker_id);
    if resp.code != ResponseCode::SUCCESS && !already {
        return Err(CliError::Server { addr: client.addr().to_string(), code: resp.code, remark: resp.remark });
    }
    let master_addr = resp.ext("masterAddress").unwrap_or_default().to_string();
    let (master_epoch, sync_epoch) = (long("masterEpoch"), long("syncStateSetEpoch"));
    // The body: the group's members (`brokerMemberGroup.brokerAddrs`) and the new SyncStateSet.
    let body = if resp.body.is_empty() { None } else { json::parse(&resp.body).ok() };
    let sync_state_set: Vec<i64> = match body.as_ref().and_then(|b| b.get("syncStateSet")) {
        Some(Value::Array(ids)) => ids.iter().filter_map(Value::as_i64).collect(),
        _ => Vec::new(),
    };

    if ctx.json {
        return Ok(Output::json(&serde_json::json!({
            "controller": client.addr(),
            "clusterName": args.cluster,
            "brokerName": args.broker_name,
            "masterBrokerId": master_id,
            "masterAddress": master_addr,
            "masterEpoch": master_epoch,
            "syncStateSetEpoch": sync_epoch,
            "syncStateSet": sync_state_set,
            "alreadyMaster": already,
        })));
    }
    let show = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let ids: Vec<String> = sync_state_set.iter().map(i64::to_string).collect();
    Ok(Output::ok(format!(
        "Master of {} ({}): broker {} at {}, master epoch {}, SyncStateSet epoch {}, SyncStateSet [{}]{}\n",
        args.broker_name,
        args.cluster,
        show(master_id),
        if master_addr.is_empty() { "-" } else { &master_addr },
        show(master_epoch),
        show(sync_epoch),
        ids.join(", "),
        if already { " (already the master)" } else { "" }
    )))
}

pub(super) fn clean_broker_metadata(ctx: &Ctx, args: &CleanArgs) -> Result<Output, CliError> {
    let mut client = leader(ctx, &args.at)?;
    let mut cmd = client
        .cmd(C::CLEAN_BROKER_DATA)
        .with_ext("brokerName", args.broker_name.as_str())
        .with_ext("isCleanLivingBroker", args.clean_living.to_string());
    if let Some(cluster) = &args.cluster {
        cmd = cmd.with_ext("clusterName", cluster.as_str());
    }
    if let Some(ids) = &args.ids {
        cmd = cmd.with_ext("brokerControllerIdsToClean", ids.as_str());
    }
    call(&mut client, cmd)?;
    if ctx.json {
        return Ok(Output::json(&serde_json::json!({
            "controller": client.addr(),
            "clusterName": args.cluster,
            "brokerName": args.broker_name,
            "brokerControllerIdsToClean": args.ids,
            "isCleanLivingBroker": args.clean_living,
        })));
    }
    // mqadmin's line, so that scripts reading its output read ours.
    Ok(Output::ok(format!("clear broker {} metadata from controller success! \n", args.broker_name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_in_both_forms() {
        assert_eq!(
            peers("n0:127.0.0.1:9878;n1:h:9;"),
            vec![("n0".into(), "127.0.0.1:9878".into()), ("n1".into(), "h:9".into())]
        );
        assert_eq!(peers("n0-127.0.0.1:9878"), vec![("n0".to_string(), "127.0.0.1:9878".to_string())]);
    }

    #[test]
    fn sync_state_data_is_read_leniently() {
        let body = br#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"h:1","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"h:1","masterBrokerId":1,"masterEpoch":2,"notInSyncReplicas":[{"alive":false,"brokerAddress":"h:2","brokerId":"2"}],"syncStateSetEpoch":3}}}"#;
        let groups = sync_states(body).unwrap();
        assert_eq!((groups[0].name.as_str(), groups[0].master_id, groups[0].master_epoch), ("broker-a", Some(1), 2));
        assert_eq!(groups[0].replicas.len(), 2);
        assert!(groups[0].replicas[0].in_sync && groups[0].replicas[0].alive);
        assert!(!groups[0].replicas[1].in_sync && groups[0].replicas[1].id == 2);
        assert_eq!(response_name(2007), Some("CONTROLLER_NOT_LEADER"));
    }
}
