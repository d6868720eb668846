//! `diff -n A -n B [...]`: fetches cluster info (106), the topic list (206) and every topic route (105) from each
//! server and reports what differs — brokers missing on some servers, different clusters or addresses, topics only on
//! some servers, different queue data or perms. The "inconsistent route info" case: name servers share nothing, so a
//! broker that failed to register with one of them shows up here. Also KV entries (apache/rocketmq #7255: a write
//! that reached only some servers) and the config keys a fleet should agree on ([`crate::fleet_facts::AGREEING_KEYS`],
//! from 319). Our servers list all their KV in one FLEET_FACTS request; a Java server, which has no such request,
//! is asked (219) for ORDER_TOPIC_CONFIG and every namespace the other servers hold. Exit 0 when identical, 1 when
//! they differ.

use std::collections::{BTreeMap, BTreeSet};

use crate::fleet_facts::wire::{self, Told};
use crate::fleet_facts::{self as facts, Items, ORDER_TOPIC_CONFIG};
use crate::model::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use crate::protocol::{RequestCode, ResponseCode};

use super::client::Client;

use super::cluster::fetch_cluster;
use super::route::{fetch_route, fetch_topics};
use super::table::Table;
use super::{bad_body, call, perm_cell, CliError, Ctx, Output};

/// What one server knows.
struct View {
    cluster: ClusterInfo,
    /// topic → route (`None`: listed, but the server answered TOPIC_NOT_EXIST).
    routes: BTreeMap<String, Option<TopicRouteData>>,
    /// `namespace/key` → value; `None` until asked namespace by namespace (a server without FLEET_FACTS).
    kv: Option<Items>,
    /// The agreeing config keys the server lists.
    config: Items,
}

fn fetch(ctx: &Ctx, addr: &str) -> Result<View, CliError> {
    let mut client = ctx.connect(addr)?;
    let cluster = fetch_cluster(&mut client)?;
    let mut routes = BTreeMap::new();
    for topic in fetch_topics(&mut client)? {
        let route = fetch_route(&mut client, &topic)?;
        routes.insert(topic, route);
    }
    let cmd = client.cmd(RequestCode::GET_NAMESRV_CONFIG);
    let resp = call(&mut client, cmd)?;
    let config = facts::config_from_properties(&resp.body).map_err(|e| bad_body(&client, e.to_string()))?;
    let kv = fetch_all_kv(&mut client)?;
    Ok(View { cluster, routes, kv, config })
}

/// Every KV entry in one FLEET_FACTS request (no digests sent, so every aspect comes whole), or `None` from a
/// server that does not know the request (Java's answers REQUEST_CODE_NOT_SUPPORTED) or does not answer it to us.
fn fetch_all_kv(client: &mut Client) -> Result<Option<Items>, CliError> {
    let cmd = client.cmd(wire::FLEET_FACTS);
    let resp = client.request(cmd)?;
    // A Java server does not know the request; one of ours answers it to its fleet peers only (with ACL off).
    if resp.code == ResponseCode::REQUEST_CODE_NOT_SUPPORTED || resp.code == ResponseCode::NO_PERMISSION {
        return Ok(None);
    }
    let resp = call_answered(client, resp)?;
    let told = wire::read_answer(&resp.body, &[None; 4]).map_err(|e| bad_body(client, e.to_string()))?;
    let [_, _, kv, _] = told;
    match kv {
        Told::Items(kv) => Ok(Some(kv)),
        _ => Err(bad_body(client, "the fleet facts hold no KV".into())),
    }
}

/// `resp` if SUCCESS, else the server's error.
fn call_answered(
    client: &Client,
    resp: crate::protocol::RemotingCommand,
) -> Result<crate::protocol::RemotingCommand, CliError> {
    if resp.code == ResponseCode::SUCCESS {
        return Ok(resp);
    }
    Err(CliError::Server { addr: client.addr().to_string(), code: resp.code, remark: resp.remark })
}

/// The KV of a server without FLEET_FACTS: ORDER_TOPIC_CONFIG and each of `namespaces`, one 219 each.
fn fetch_kv_by_namespace(ctx: &Ctx, addr: &str, namespaces: &BTreeSet<String>) -> Result<Items, CliError> {
    let mut client = ctx.connect(addr)?;
    let mut kv = Items::new();
    for ns in namespaces {
        let cmd = client.cmd(RequestCode::GET_KVLIST_BY_NAMESPACE).with_ext("namespace", ns);
        let resp = client.request(cmd)?;
        if resp.code == ResponseCode::QUERY_NOT_FOUND {
            continue;
        }
        let resp = call_answered(&client, resp)?;
        facts::kv_from_table(ns, &resp.body, &mut kv).map_err(|e| bad_body(&client, e.to_string()))?;
    }
    Ok(kv)
}

/// One difference: a title and what each server has (`None` = nothing), in `-n` order.
struct Difference {
    kind: &'static str,
    title: String,
    values: Vec<Option<String>>,
}

fn all_equal<T: PartialEq>(values: &[T]) -> bool {
    values.windows(2).all(|w| w[0] == w[1])
}

fn broker_summary(bd: &BrokerData) -> String {
    let addrs: Vec<String> = bd.broker_addrs.iter().map(|(id, a)| format!("{id}={a}")).collect();
    format!("cluster {}, {}", bd.cluster, if addrs.is_empty() { "no addresses".into() } else { addrs.join(" ") })
}

fn queue_summary(q: &QueueData) -> String {
    format!(
        "read {} write {} perm {} sysflag {}",
        q.read_queue_nums,
        q.write_queue_nums,
        perm_cell(q.perm),
        q.topic_sys_flag
    )
}

fn compare_brokers(views: &[View], out: &mut Vec<Difference>) {
    let names: BTreeSet<_> = views.iter().flat_map(|v| v.cluster.broker_addr_table.keys().cloned()).collect();
    for name in names {
        let per: Vec<Option<&BrokerData>> =
            views.iter().map(|v| v.cluster.broker_addr_table.get(&name).map(|b| &**b)).collect();
        if per.iter().any(Option::is_none) {
            out.push(Difference {
                kind: "broker_missing",
                title: format!("broker {name}: not registered on every server"),
                values: per.iter().map(|b| b.map(broker_summary)).collect(),
            });
            continue;
        }
        let per: Vec<&BrokerData> = per.into_iter().flatten().collect();
        let clusters: Vec<&str> = per.iter().map(|b| &*b.cluster).collect();
        if !all_equal(&clusters) {
            out.push(Difference {
                kind: "broker_cluster",
                title: format!("broker {name}: different cluster"),
                values: clusters.iter().map(|c| Some(c.to_string())).collect(),
            });
        }
        let ids: BTreeSet<i64> = per.iter().flat_map(|b| b.broker_addrs.keys().copied()).collect();
        for id in ids {
            let addrs: Vec<Option<&String>> = per.iter().map(|b| b.broker_addrs.get(&id)).collect();
            if !all_equal(&addrs) {
                out.push(Difference {
                    kind: "broker_address",
                    title: format!("broker {name} id {id}: different address"),
                    values: addrs.iter().map(|a| a.cloned()).collect(),
                });
            }
        }
    }
}

fn compare_topics(views: &[View], out: &mut Vec<Difference>) {
    let topics: BTreeSet<&String> = views.iter().flat_map(|v| v.routes.keys()).collect();
    for topic in topics {
        let listed: Vec<Option<&Option<TopicRouteData>>> = views.iter().map(|v| v.routes.get(topic)).collect();
        if listed.iter().any(Option::is_none) {
            out.push(Difference {
                kind: "topic_missing",
                title: format!("topic {topic}: not on every server"),
                values: listed.iter().map(|r| r.map(|_| "present".to_string())).collect(),
            });
            continue;
        }
        let routes: Vec<&Option<TopicRouteData>> = listed.into_iter().flatten().collect();
        if routes.iter().any(|r| r.is_none()) {
            out.push(Difference {
                kind: "route_missing",
                title: format!("topic {topic}: listed everywhere, but some servers have no route (TOPIC_NOT_EXIST)"),
                values: routes.iter().map(|r| r.as_ref().map(|_| "route".to_string())).collect(),
            });
            continue;
        }
        let routes: Vec<&TopicRouteData> = routes.into_iter().flatten().collect();
        let brokers: BTreeSet<&str> =
            routes.iter().flat_map(|r| r.queue_datas.iter().map(|q| &*q.broker_name)).collect();
        for broker in brokers {
            let queues: Vec<Option<&QueueData>> =
                routes.iter().map(|r| r.queue_datas.iter().find(|q| &*q.broker_name == broker)).collect();
            if !all_equal(&queues) {
                out.push(Difference {
                    kind: "queue_data",
                    title: format!("topic {topic}, broker {broker}: different queue data"),
                    values: queues.iter().map(|q| q.map(queue_summary)).collect(),
                });
            }
        }
        let confs: Vec<&Option<String>> = routes.iter().map(|r| &r.order_topic_conf).collect();
        if !all_equal(&confs) {
            out.push(Difference {
                kind: "order_topic_conf",
                title: format!("topic {topic}: different orderTopicConf"),
                values: confs.into_iter().cloned().collect(),
            });
        }
    }
}

/// One row per KV entry not on every server or with different values.
fn compare_kv(views: &[View], out: &mut Vec<Difference>) {
    let keys: BTreeSet<&String> = views.iter().flat_map(|v| v.kv.iter().flat_map(|kv| kv.keys())).collect();
    for key in keys {
        let values: Vec<Option<String>> =
            views.iter().map(|v| v.kv.as_ref().and_then(|kv| kv.get(key)).cloned()).collect();
        if all_equal(&values) {
            continue;
        }
        let (kind, title) = match values.iter().any(Option::is_none) {
            true => ("kv_missing", format!("KV {key}: not on every server")),
            false => ("kv_value", format!("KV {key}: different value")),
        };
        out.push(Difference { kind, title, values });
    }
}

/// One row per agreeing config key that every server lists, with different values (a key one server does not list
/// is one its version does not have).
fn compare_config(views: &[View], out: &mut Vec<Difference>) {
    for key in facts::AGREEING_KEYS {
        let values: Vec<Option<String>> = views.iter().map(|v| v.config.get(*key).cloned()).collect();
        if values.iter().all(Option::is_some) && !all_equal(&values) {
            out.push(Difference { kind: "config", title: format!("config {key}: different value"), values });
        }
    }
}

pub(super) fn diff(ctx: &Ctx) -> Result<Output, CliError> {
    if ctx.addrs.len() < 2 {
        return Err(CliError::Usage(format!(
            "diff compares two or more name servers (-n A -n B), got {}",
            ctx.addrs.len()
        )));
    }
    let mut views = ctx.addrs.iter().map(|a| fetch(ctx, a)).collect::<Result<Vec<_>, _>>()?;
    // The namespaces to ask the servers that cannot list all their KV: those the others hold.
    let mut namespaces: BTreeSet<String> = BTreeSet::from([ORDER_TOPIC_CONFIG.to_string()]);
    for kv in views.iter().filter_map(|v| v.kv.as_ref()) {
        namespaces.extend(kv.keys().filter_map(|k| k.split_once('/')).map(|(ns, _)| ns.to_string()));
    }
    for (addr, view) in ctx.addrs.iter().zip(views.iter_mut()) {
        if view.kv.is_none() {
            view.kv = Some(fetch_kv_by_namespace(ctx, addr, &namespaces)?);
        }
    }
    let mut diffs = Vec::new();
    compare_brokers(&views, &mut diffs);
    compare_topics(&views, &mut diffs);
    compare_kv(&views, &mut diffs);
    compare_config(&views, &mut diffs);
    let code = u8::from(!diffs.is_empty());

    if ctx.json {
        let differences: Vec<serde_json::Value> = diffs
            .iter()
            .map(|d| {
                let values: Vec<serde_json::Value> = ctx
                    .addrs
                    .iter()
                    .zip(&d.values)
                    .map(|(a, v)| serde_json::json!({ "server": a, "value": v }))
                    .collect();
                serde_json::json!({ "kind": d.kind, "title": d.title, "values": values })
            })
            .collect();
        let v = serde_json::json!({
            "servers": ctx.addrs,
            "identical": diffs.is_empty(),
            "differences": differences,
        });
        return Ok(Output { code, ..Output::json(&v) });
    }

    let brokers: BTreeSet<_> = views.iter().flat_map(|v| v.cluster.broker_addr_table.keys()).collect();
    let topics: BTreeSet<_> = views.iter().flat_map(|v| v.routes.keys()).collect();
    let kv: BTreeSet<_> = views.iter().flat_map(|v| v.kv.iter().flat_map(|kv| kv.keys())).collect();
    let mut text = format!(
        "Compared {}: {} brokers, {} topics, {} KV entries.\n",
        ctx.addrs.join(", "),
        brokers.len(),
        topics.len(),
        kv.len()
    );
    if diffs.is_empty() {
        text.push_str("Identical: cluster info, every topic route, KV and the config keys that should agree.\n");
        return Ok(Output { text, code });
    }
    for d in &diffs {
        text.push('\n');
        text.push_str(&d.title);
        text.push('\n');
        let mut t = Table::new(&["  SERVER", "HAS"]);
        for (a, v) in ctx.addrs.iter().zip(&d.values) {
            t.row(vec![format!("  {a}"), v.clone().unwrap_or_else(|| "(nothing)".into())]);
        }
        text.push_str(&t.render());
    }
    text.push_str(&format!("\n{} difference{} found.\n", diffs.len(), if diffs.len() == 1 { "" } else { "s" }));
    Ok(Output { text, code })
}
