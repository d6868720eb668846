//! `cluster` (106): clusters → brokers → ids and addresses.

use crate::model::ClusterInfo;
use crate::protocol::RequestCode;

use super::client::Client;
use super::table::Table;
use super::{bad_body, broker_json, call, decode, CliError, Ctx, Output};

/// Cluster info; the body is fastjson's default dialect (bare integer keys), which the lenient reader accepts.
pub(super) fn fetch_cluster(client: &mut Client) -> Result<ClusterInfo, CliError> {
    let cmd = client.cmd(RequestCode::GET_BROKER_CLUSTER_INFO);
    let resp = call(client, cmd)?;
    decode::cluster_info(&resp.body).map_err(|e| bad_body(client, e.to_string()))
}

pub(super) fn cluster(ctx: &Ctx) -> Result<Output, CliError> {
    let info = ctx.read(fetch_cluster)?;

    if ctx.json {
        let brokers: serde_json::Map<String, serde_json::Value> =
            info.broker_addr_table.iter().map(|(name, bd)| (name.to_string(), broker_json(bd))).collect();
        let clusters: serde_json::Map<String, serde_json::Value> = info
            .cluster_addr_table
            .iter()
            .map(|(c, names)| {
                let mut names: Vec<&str> = names.iter().map(|n| &**n).collect();
                names.sort_unstable();
                (c.to_string(), names.into())
            })
            .collect();
        return Ok(Output::json(&serde_json::json!({
            "clusterAddrTable": clusters,
            "brokerAddrTable": brokers,
        })));
    }

    let mut t = Table::new(&["CLUSTER", "BROKER", "ID", "ADDRESS"]);
    let mut listed = std::collections::BTreeSet::new();
    for (cluster, names) in &info.cluster_addr_table {
        let mut names: Vec<_> = names.iter().collect();
        names.sort();
        for name in names {
            listed.insert(name.clone());
            match info.broker_addr_table.get(name) {
                Some(bd) if !bd.broker_addrs.is_empty() => {
                    for (id, a) in &bd.broker_addrs {
                        t.row(vec![cluster.to_string(), name.to_string(), id.to_string(), a.clone()]);
                    }
                }
                _ => t.row(vec![cluster.to_string(), name.to_string(), "-".into(), "-".into()]),
            }
        }
    }
    // Broker groups no cluster lists (not expected, but shown rather than hidden).
    for (name, bd) in &info.broker_addr_table {
        if listed.contains(name) {
            continue;
        }
        for (id, a) in &bd.broker_addrs {
            t.row(vec![format!("({})", bd.cluster), name.to_string(), id.to_string(), a.clone()]);
        }
    }
    if t.is_empty() {
        return Ok(Output::ok("No brokers registered.\n".into()));
    }
    Ok(Output::ok(t.render()))
}
