//! KV config: 100 PUT, 101 GET, 102 DELETE, 219 GET_KVLIST_BY_NAMESPACE. Reads come from the snapshot; writes go
//! to the writer, which makes them durable before it answers.

use super::{body_of, success, system_error, Action, Ctx};
use crate::protocol::{body, RemotingCommand, ResponseCode};
use crate::write_command::WriteOp;

/// 100.
pub(crate) fn put(req: &RemotingCommand) -> Action {
    match (req.ext("namespace"), req.ext("key")) {
        (Some(ns), Some(key)) => Action::Write(WriteOp::PutKv {
            namespace: ns.to_string(),
            key: key.to_string(),
            value: req.ext("value").map(str::to_string),
        }),
        _ => Action::Reply(system_error(req, "namespace or key is null")),
    }
}

/// 101.
pub(crate) fn get(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let (ns, key) = (req.ext("namespace"), req.ext("key"));
    match ns.zip(key).and_then(|(ns, key)| ctx.snapshot.kv.get(ns, key)) {
        Some(value) => Action::Reply(success(req).with_ext("value", value)),
        None => Action::Reply(
            RemotingCommand::response_to(
                req,
                ResponseCode::QUERY_NOT_FOUND,
                Some(format!("No config item, Namespace: {} Key: {}", ns.unwrap_or("null"), key.unwrap_or("null"))),
            )
            .with_empty_ext(),
        ),
    }
}

/// 102: always SUCCESS.
pub(crate) fn delete(req: &RemotingCommand) -> Action {
    match (req.ext("namespace"), req.ext("key")) {
        (Some(ns), Some(key)) => Action::Write(WriteOp::DeleteKv { namespace: ns.to_string(), key: key.to_string() }),
        _ => Action::Reply(success(req)),
    }
}

/// 219.
pub(crate) fn list(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let ns = req.ext("namespace");
    match ns.and_then(|ns| ctx.snapshot.kv.namespace(ns)) {
        Some(table) => Action::Reply(success(req).with_body(body_of(|out| body::encode_kv_table(table, out)))),
        None => Action::Reply(RemotingCommand::response_to(
            req,
            ResponseCode::QUERY_NOT_FOUND,
            Some(format!("No config item, Namespace: {}", ns.unwrap_or("null"))),
        )),
    }
}
