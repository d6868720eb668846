//! `wipeWritePerm -b` (205), `addWritePerm -b` (327) and `deleteTopic -t [-c]` (216): writes an operator makes
//! around taking a broker down or retiring a topic, sent to every server given with -n, as mqadmin does.

use crate::protocol::RequestCode;

use super::{on_each, CliError, Ctx, Output};

/// Which way the write permission goes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Change {
    Wipe,
    Add,
}

impl Change {
    fn code(self) -> i32 {
        match self {
            Change::Wipe => RequestCode::WIPE_WRITE_PERM_OF_BROKER,
            Change::Add => RequestCode::ADD_WRITE_PERM_OF_BROKER,
        }
    }

    /// The response ext field with the number of topics touched.
    fn count_field(self) -> &'static str {
        match self {
            Change::Wipe => "wipeTopicCount",
            Change::Add => "addTopicCount",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Change::Wipe => "wipe",
            Change::Add => "add",
        }
    }
}

pub(super) fn write_perm(ctx: &Ctx, broker: &str, change: Change) -> Result<Output, CliError> {
    let answers = on_each(ctx, |c| c.cmd(change.code()).with_ext("brokerName", broker))?;
    let mut counts = Vec::with_capacity(answers.len());
    for (addr, resp) in &answers {
        let count = resp.ext(change.count_field()).and_then(|n| n.trim().parse::<i64>().ok()).ok_or_else(|| {
            CliError::BadBody { addr: addr.clone(), reason: format!("the answer has no {}", change.count_field()) }
        })?;
        counts.push((addr.as_str(), count));
    }
    if ctx.json {
        let servers: Vec<serde_json::Value> =
            counts.iter().map(|(addr, n)| serde_json::json!({ "namesrv": addr, change.count_field(): n })).collect();
        return Ok(Output::json(&serde_json::json!({ "brokerName": broker, "servers": servers })));
    }
    // mqadmin's line, so that scripts reading its output read ours.
    let text = counts
        .iter()
        .map(|(addr, n)| format!("{} write perm of broker[{broker}] in name server[{addr}] OK, {n}\n", change.verb()))
        .collect();
    Ok(Output::ok(text))
}

pub(super) fn delete_topic(ctx: &Ctx, topic: &str, cluster: Option<&str>) -> Result<Output, CliError> {
    on_each(ctx, |c| {
        let cmd = c.cmd(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", topic);
        match cluster {
            Some(cluster) => cmd.with_ext("clusterName", cluster),
            None => cmd,
        }
    })?;
    if ctx.json {
        return Ok(Output::json(&serde_json::json!({ "topic": topic, "clusterName": cluster, "servers": ctx.addrs })));
    }
    let scope = cluster.map(|c| format!(" (cluster {c})")).unwrap_or_default();
    Ok(Output::ok(format!("Deleted topic {topic}{scope} on {}\n", ctx.addrs.join(", "))))
}
