//! `kv get|put|delete|list` (101, 100, 102, 219): reads from the first server that answers, writes to all.

use crate::protocol::RequestCode;

use super::table::Table;
use super::{bad_body, call, decode, CliError, Ctx, KvCommand, Output};

pub(super) fn run(ctx: &Ctx, cmd: &KvCommand) -> Result<Output, CliError> {
    match cmd {
        KvCommand::Get { namespace, key } => get(ctx, namespace, key),
        KvCommand::Put { namespace, key, value } => put(ctx, namespace, key, value),
        KvCommand::Delete { namespace, key } => delete(ctx, namespace, key),
        KvCommand::List { namespace } => list(ctx, namespace),
    }
}

fn get(ctx: &Ctx, namespace: &str, key: &str) -> Result<Output, CliError> {
    let value = ctx.read(|client| {
        let cmd = client.cmd(RequestCode::GET_KV_CONFIG).with_ext("namespace", namespace).with_ext("key", key);
        let resp = call(client, cmd)?;
        Ok(resp.ext("value").unwrap_or_default().to_string())
    })?;
    if ctx.json {
        return Ok(Output::json(&serde_json::json!({ "namespace": namespace, "key": key, "value": value })));
    }
    Ok(Output::ok(format!("{value}\n")))
}

fn put(ctx: &Ctx, namespace: &str, key: &str, value: &str) -> Result<Output, CliError> {
    let writes = ctx
        .write_all(
            |c| {
                let cmd = c.cmd(RequestCode::PUT_KV_CONFIG);
                cmd.with_ext("namespace", namespace).with_ext("key", key).with_ext("value", value)
            },
            |_, _| Ok(()),
        )
        .sole_error()?;
    let json = serde_json::json!({ "namespace": namespace, "key": key, "value": value });
    Ok(writes.report(ctx, &format!("Put {namespace} {key} = {value}"), json))
}

fn delete(ctx: &Ctx, namespace: &str, key: &str) -> Result<Output, CliError> {
    let writes = ctx
        .write_all(
            |c| c.cmd(RequestCode::DELETE_KV_CONFIG).with_ext("namespace", namespace).with_ext("key", key),
            |_, _| Ok(()),
        )
        .sole_error()?;
    let json = serde_json::json!({ "namespace": namespace, "key": key });
    Ok(writes.report(ctx, &format!("Delete {namespace} {key}"), json))
}

fn list(ctx: &Ctx, namespace: &str) -> Result<Output, CliError> {
    let table = ctx.read(|client| {
        let cmd = client.cmd(RequestCode::GET_KVLIST_BY_NAMESPACE).with_ext("namespace", namespace);
        let resp = call(client, cmd)?;
        decode::kv_table(&resp.body).map_err(|e| bad_body(client, e.to_string()))
    })?;
    if ctx.json {
        return Ok(Output::json(&serde_json::json!({ "namespace": namespace, "table": table })));
    }
    let mut t = Table::new(&["KEY", "VALUE"]);
    for (k, v) in table {
        t.row(vec![k, v]);
    }
    Ok(Output::ok(t.render()))
}
