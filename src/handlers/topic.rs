//! Topic administration and lists: 205/327 write permissions, 206 all topics, 216 delete, 217 register,
//! 224 by cluster, 304 system topics, 311–313 unit topic lists.

use super::{body_of, success, system_error, Action, Ctx};
use crate::model::TopicList;
use crate::protocol::{body, RemotingCommand, RequestCode as C};
use crate::state::routes::UnitTopicKind;
use crate::write_command::WriteOp;

/// Java's remark when a list is switched off by `enableAllTopicList` / `enableTopicList`.
pub(crate) const DISABLED: &str = "disable";

fn list_reply(req: &RemotingCommand, list: &TopicList) -> Action {
    Action::Reply(success(req).with_body(body_of(|out| body::encode_topic_list(list, out))))
}

/// 205. A request without `brokerName` matches no queue data in Java: count 0.
pub(crate) fn wipe_write_perm(req: &RemotingCommand) -> Action {
    match req.ext("brokerName") {
        Some(name) => Action::Write(WriteOp::WipeWritePerm { broker_name: name.to_string() }),
        None => Action::Reply(perm_reply(req, 0)),
    }
}

/// 327.
pub(crate) fn add_write_perm(req: &RemotingCommand) -> Action {
    match req.ext("brokerName") {
        Some(name) => Action::Write(WriteOp::AddWritePerm { broker_name: name.to_string() }),
        None => Action::Reply(perm_reply(req, 0)),
    }
}

/// The answer to 205/327: the count under the header key of that code.
pub(crate) fn perm_reply(req: &RemotingCommand, count: i32) -> RemotingCommand {
    let key = if req.code == C::WIPE_WRITE_PERM_OF_BROKER { "wipeTopicCount" } else { "addTopicCount" };
    success(req).with_ext(key, count.to_string())
}

/// 206.
pub(crate) fn all_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if !ctx.snapshot.config.enable_all_topic_list {
        return Action::Reply(system_error(req, DISABLED));
    }
    let snap = ctx.snapshot;
    // Never `get_or_init`: a second reactor asking while the first encodes would block on it. Two reactors may
    // each encode the body once per snapshot; the first to finish keeps it.
    let body = match snap.all_topics_body.get() {
        Some(body) => body.clone(),
        None => {
            let body = body_of(|out| body::encode_topic_list(&snap.routes.all_topics(), out));
            let _ = snap.all_topics_body.set(body.clone());
            body
        }
    };
    Action::Reply(success(req).with_body(body))
}

/// 216: `clusterName` non-empty → only that cluster's brokers' queue data. Java 5.5.0 answers SUCCESS without a
/// `topic` ext field and changes nothing.
pub(crate) fn delete_topic(req: &RemotingCommand) -> Action {
    let Some(topic) = req.ext("topic") else {
        return Action::Reply(success(req));
    };
    let cluster = req.ext("clusterName").filter(|c| !c.is_empty()).map(str::to_string);
    Action::Write(WriteOp::DeleteTopic { topic: topic.to_string(), cluster })
}

/// 217: only the body's `queueDatas` are used; no queue data → nothing to do.
pub(crate) fn register_topic(req: &RemotingCommand) -> Action {
    if req.body.is_empty() {
        return Action::Reply(success(req));
    }
    let queue_datas = match body::decode_queue_datas(&req.body) {
        Ok(q) => q,
        Err(e) => return Action::Reply(system_error(req, e.to_string())),
    };
    match req.ext("topic") {
        Some(topic) if !queue_datas.is_empty() => {
            Action::Write(WriteOp::RegisterTopic { topic: topic.to_string(), queue_datas })
        }
        _ => Action::Reply(success(req)),
    }
}

/// 224.
pub(crate) fn topics_by_cluster(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if !ctx.snapshot.config.enable_topic_list {
        return Action::Reply(system_error(req, DISABLED));
    }
    list_reply(req, &ctx.snapshot.routes.topics_by_cluster(req.ext("cluster").unwrap_or_default()))
}

/// 304: not gated. `brokerAddr` is the first address of the first broker group, in Java's iteration order of
/// `brokerAddrTable`, that has one (`RouteView::system_topics`).
pub(crate) fn system_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
    list_reply(req, &ctx.snapshot.routes.system_topics())
}

/// 311, 312, 313.
pub(crate) fn unit_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if !ctx.snapshot.config.enable_topic_list {
        return Action::Reply(system_error(req, DISABLED));
    }
    let kind = match req.code {
        C::GET_UNIT_TOPIC_LIST => UnitTopicKind::Unit,
        C::GET_HAS_UNIT_SUB_TOPIC_LIST => UnitTopicKind::HasUnitSub,
        _ => UnitTopicKind::HasUnitSubUnUnit,
    };
    list_reply(req, &ctx.snapshot.routes.unit_topics(kind))
}
