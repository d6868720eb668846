//! `route TOPIC` (105) and `topics` (206).

use crate::model::TopicRouteData;
use crate::protocol::{RequestCode, ResponseCode};

use super::client::Client;
use super::table::Table;
use super::{bad_body, broker_json, call, decode, perm_cell, queue_json, CliError, Ctx, Output};

/// The route of `topic`, `None` when the server answers TOPIC_NOT_EXIST. Asked with version 513, so the body is
/// standard JSON from both our server and Java's.
pub(super) fn fetch_route(client: &mut Client, topic: &str) -> Result<Option<TopicRouteData>, CliError> {
    let cmd = client.cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    match call(client, cmd) {
        Ok(resp) => decode::topic_route(&resp.body).map(Some).map_err(|e| bad_body(client, e.to_string())),
        Err(CliError::Server { code: ResponseCode::TOPIC_NOT_EXIST, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// All topic names, sorted.
pub(super) fn fetch_topics(client: &mut Client) -> Result<Vec<String>, CliError> {
    let cmd = client.cmd(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    let resp = call(client, cmd)?;
    decode::topic_list(&resp.body).map_err(|e| bad_body(client, e.to_string()))
}

pub(super) fn route(ctx: &Ctx, topic: &str) -> Result<Output, CliError> {
    let route = ctx.read(|client| {
        fetch_route(client, topic)?
            .ok_or_else(|| CliError::TopicNotExist { addr: client.addr().to_string(), topic: topic.to_string() })
    })?;

    if ctx.json {
        let mut v = serde_json::json!({
            "topic": topic,
            "brokerDatas": route.broker_datas.iter().map(|b| broker_json(b)).collect::<Vec<_>>(),
            "queueDatas": route.queue_datas.iter().map(queue_json).collect::<Vec<_>>(),
            "filterServerTable": route.filter_server_table,
        });
        if let Some(conf) = &route.order_topic_conf {
            v["orderTopicConf"] = conf.clone().into();
        }
        return Ok(Output::json(&v));
    }

    let mut brokers = Table::new(&["BROKER", "CLUSTER", "ID", "ADDRESS"]);
    let mut broker_datas: Vec<_> = route.broker_datas.iter().collect();
    broker_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for bd in broker_datas {
        if bd.broker_addrs.is_empty() {
            brokers.row(vec![bd.broker_name.to_string(), bd.cluster.to_string(), "-".into(), "-".into()]);
        }
        for (id, a) in &bd.broker_addrs {
            brokers.row(vec![bd.broker_name.to_string(), bd.cluster.to_string(), id.to_string(), a.clone()]);
        }
    }
    let mut queues = Table::new(&["BROKER", "READ", "WRITE", "PERM", "SYSFLAG"]);
    let mut queue_datas: Vec<_> = route.queue_datas.iter().collect();
    queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for q in queue_datas {
        queues.row(vec![
            q.broker_name.to_string(),
            q.read_queue_nums.to_string(),
            q.write_queue_nums.to_string(),
            perm_cell(q.perm),
            q.topic_sys_flag.to_string(),
        ]);
    }
    let mut text = format!("Topic: {topic}\n");
    if let Some(conf) = &route.order_topic_conf {
        text.push_str(&format!("Order topic conf: {conf}\n"));
    }
    text.push_str("\nBrokers\n");
    text.push_str(&brokers.render());
    text.push_str("\nQueues\n");
    text.push_str(&queues.render());
    let filters: Vec<_> = route.filter_server_table.iter().filter(|(_, s)| !s.is_empty()).collect();
    if !filters.is_empty() {
        let mut t = Table::new(&["BROKER ADDRESS", "FILTER SERVERS"]);
        for (a, servers) in filters {
            t.row(vec![a.clone(), servers.join(", ")]);
        }
        text.push_str("\nFilter servers\n");
        text.push_str(&t.render());
    }
    Ok(Output::ok(text))
}

pub(super) fn topics(ctx: &Ctx) -> Result<Output, CliError> {
    let topics = ctx.read(fetch_topics)?;
    if ctx.json {
        return Ok(Output::json(&serde_json::json!({ "topicList": topics })));
    }
    Ok(Output::ok(topics.iter().map(|t| format!("{t}\n")).collect()))
}
