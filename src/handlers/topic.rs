//! Topic administration and lists: 205/327 write permissions, 206 all topics, 216 delete, 217 register,
//! 224 by cluster, 304 system topics, 311–313 unit topic lists.

use super::{body_of, success, system_error, Action, Ctx};
use crate::model::TopicList;
use crate::protocol::{body, RemotingCommand, RequestCode as C};
use crate::state::routes::UnitTopicKind;
use crate::writer::command::WriteOp;

/// Java's remark when a list is switched off by `enableAllTopicList` / `enableTopicList`.
pub const DISABLED: &str = "disable";

fn list_reply(req: &RemotingCommand, list: &TopicList) -> Action {
    Action::Reply(success(req).with_body(body_of(|out| body::encode_topic_list(list, out))))
}

/// 205. A request without `brokerName` matches no queue data in Java: count 0.
pub fn wipe_write_perm(req: &RemotingCommand) -> Action {
    match req.ext("brokerName") {
        Some(name) => Action::Write(WriteOp::WipeWritePerm { broker_name: name.to_string() }),
        None => Action::Reply(perm_reply(req, 0)),
    }
}

/// 327.
pub fn add_write_perm(req: &RemotingCommand) -> Action {
    match req.ext("brokerName") {
        Some(name) => Action::Write(WriteOp::AddWritePerm { broker_name: name.to_string() }),
        None => Action::Reply(perm_reply(req, 0)),
    }
}

/// The answer to 205/327: the count under the header key of that code.
pub fn perm_reply(req: &RemotingCommand, count: i32) -> RemotingCommand {
    let key = if req.code == C::WIPE_WRITE_PERM_OF_BROKER { "wipeTopicCount" } else { "addTopicCount" };
    success(req).with_ext(key, count.to_string())
}

/// 206.
pub fn all_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
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
pub fn delete_topic(req: &RemotingCommand) -> Action {
    let Some(topic) = req.ext("topic") else {
        return Action::Reply(success(req));
    };
    let cluster = req.ext("clusterName").filter(|c| !c.is_empty()).map(str::to_string);
    Action::Write(WriteOp::DeleteTopic { topic: topic.to_string(), cluster })
}

/// 217: only the body's `queueDatas` are used; no queue data → nothing to do.
pub fn register_topic(req: &RemotingCommand) -> Action {
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
pub fn topics_by_cluster(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if !ctx.snapshot.config.enable_topic_list {
        return Action::Reply(system_error(req, DISABLED));
    }
    list_reply(req, &ctx.snapshot.routes.topics_by_cluster(req.ext("cluster").unwrap_or_default()))
}

/// 304: not gated. `brokerAddr` is the smallest-id address of the first broker group, in Java's iteration order
/// of `brokerAddrTable`, that has an address.
pub fn system_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let mut list = ctx.snapshot.routes.system_topics();
    let info = ctx.snapshot.routes.cluster_info();
    let table_len = java_chm_table_len(128, info.broker_addr_table.len());
    list.broker_addr = info
        .broker_addr_table
        .iter()
        .filter_map(|(name, bd)| bd.min_broker().map(|(_, addr)| (java_chm_bucket(name, table_len), name, addr)))
        .min()
        .map(|(_, _, addr)| addr.to_string());
    list_reply(req, &list)
}

/// `String.hashCode` over UTF-16 units.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// The bin a `ConcurrentHashMap` of `table_len` bins puts `key` in (`spread(h) & (n - 1)`); iteration visits bins
/// in index order. Keys sharing a bin come in insertion order in Java; we break such ties by name.
fn java_chm_bucket(key: &str, table_len: usize) -> usize {
    let h = java_string_hash(key);
    let spread = (h ^ ((h as u32) >> 16) as i32) & 0x7FFF_FFFF;
    spread as usize & (table_len - 1)
}

/// The table length of `new ConcurrentHashMap<>(initial)` (JDK 17: next power of two of `1 + initial / 0.75`)
/// after growing to hold `len` entries (it doubles once `len` exceeds three quarters of it).
fn java_chm_table_len(initial: usize, len: usize) -> usize {
    let mut n = ((1.0 + initial as f64 / 0.75) as usize).next_power_of_two();
    while len > n - (n >> 2) {
        n <<= 1;
    }
    n
}

/// 311, 312, 313.
pub fn unit_topics(ctx: &Ctx, req: &RemotingCommand) -> Action {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_order_of_broker_names() {
        assert_eq!(java_string_hash("surf-a"), "surf-a".chars().fold(0i32, |h, c| h.wrapping_mul(31) + c as i32));
        assert_eq!(java_chm_table_len(128, 0), 256);
        assert_eq!(java_chm_table_len(128, 193), 512);
        // Observed on Java 5.5.0: surf-b is visited before surf-a and surf-c.
        let order: Vec<usize> = ["surf-a", "surf-b", "surf-c"].iter().map(|n| java_chm_bucket(n, 256)).collect();
        assert_eq!(order, vec![137, 136, 143]);
    }
}
