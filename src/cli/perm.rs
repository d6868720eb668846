//! `wipeWritePerm -b` (205), `addWritePerm -b` (327) and `deleteTopic -t [-c]` (216): writes an operator makes
//! around taking a broker down or retiring a topic, sent to every server given with -n, each server's outcome
//! printed.

use crate::protocol::RequestCode;

use super::{CliError, Ctx, Output};

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
    let field = change.count_field();
    let writes = ctx
        .write_all(
            |c| c.cmd(change.code()).with_ext("brokerName", broker),
            |client, resp| {
                resp.ext(field).and_then(|n| n.trim().parse::<i64>().ok()).ok_or_else(|| CliError::BadBody {
                    addr: client.addr().to_string(),
                    reason: format!("the answer has no {field}"),
                })
            },
        )
        .sole_error()?;
    let servers: Vec<serde_json::Value> =
        writes.applied().map(|(addr, n)| serde_json::json!({ "namesrv": addr, field: n })).collect();
    let json = serde_json::json!({ "brokerName": broker, "servers": servers, "failed": writes.failed_json() });
    // mqadmin's lines (WipeWritePermSubCommand), so that scripts reading its output read ours; a failure also
    // says why, where mqadmin prints a stack trace.
    let verb = change.verb();
    let text = writes
        .outcomes
        .iter()
        .map(|(addr, outcome)| match outcome {
            Ok(n) => format!("{verb} write perm of broker[{broker}] in name server[{addr}] OK, {n}\n"),
            Err(e) => format!("{verb} write perm of broker[{broker}] in name server[{addr}] Failed: {}\n", e.reason()),
        })
        .collect();
    Ok(writes.finish(ctx, text, json))
}

pub(super) fn delete_topic(ctx: &Ctx, topic: &str, cluster: Option<&str>) -> Result<Output, CliError> {
    let writes = ctx
        .write_all(
            |c| {
                let cmd = c.cmd(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", topic);
                match cluster {
                    Some(cluster) => cmd.with_ext("clusterName", cluster),
                    None => cmd,
                }
            },
            |_, _| Ok(()),
        )
        .sole_error()?;
    let scope = cluster.map(|c| format!(" (cluster {c})")).unwrap_or_default();
    let json = serde_json::json!({ "topic": topic, "clusterName": cluster });
    Ok(writes.report(ctx, &format!("Delete topic {topic}{scope}"), json))
}
