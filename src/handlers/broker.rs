//! Broker-facing requests: 103 REGISTER_BROKER, 104 UNREGISTER_BROKER, 904 BROKER_HEARTBEAT, 322 QUERY_DATA_VERSION.
//! Decoding, CRC and body checks (`crate::registration`) happen here on the reactor (in parallel); the writer only
//! applies.

use super::{body_of, success, system_error, Action, Ctx};
use crate::limit::Limit;
use crate::model::NAMESPACE_ORDER_TOPIC_CONFIG;
use crate::protocol::{body, RemotingCommand, ResponseCode};
use crate::registration::{decode_register_against, RegisterError};
use crate::state::routes::{RegisterOutcome, RegisterResult, UnregisterBroker};
use crate::state::Snapshot;
use crate::write_command::WriteOp;

/// The registration checksum, public for the benches.
pub use crate::registration::crc32_masked;
/// A broker's request, public for the benches.
#[doc(hidden)]
pub use crate::registration::encode_register_as;

/// Remark Java gives a refused registration (§5.3 step 7).
pub(crate) use crate::state::routes::REGISTER_FAILED;

/// 103. Java order: CRC check, body decode, then the route update.
///
/// Our limits `maxInflatedBody` and `maxTopicsPerRegistration` refuse the whole registration with SYSTEM_ERROR,
/// as Java answers a bad body.
pub(crate) fn register(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let config = &ctx.snapshot.config;
    match decode_register_against(req, config.max_inflated_body, Some(&ctx.snapshot.routes), &ctx.give_way) {
        Ok(Some((reg, body)))
            if config.max_topics_per_registration > 0 && body.topics(&reg) > config.max_topics_per_registration =>
        {
            let remark = format!(
                "[LIMIT] registration of broker {} carries {} topics, more than maxTopicsPerRegistration={}; \
                 nothing applied",
                crate::clip::clip(&reg.broker_name, crate::clip::NAME_CHARS),
                body.topics(&reg),
                config.max_topics_per_registration
            );
            Action::Refused(system_error(req, remark), Limit::TopicsPerRegistration)
        }
        Ok(Some((mut reg, body))) => {
            reg.conn = Some(ctx.conn);
            // The sort below is one more long piece of work without a call in it (the number:
            // perf/results/2026-12-06-numbers-from-comments.md).
            (ctx.give_way)();
            // The writer files topics in name order: its descents of the topic map then walk neighbouring leaves,
            // and the broker's topic list comes out sorted (decision 0022). Stable, so of a topic sent twice the
            // last still wins. Brokers send their hash table's order; the keys' inline heads make this cheap here.
            reg.body.topic_configs.sort_by(|a, b| a.topic_name.cmp(&b.topic_name));
            Action::Write(WriteOp::RegisterBroker(Box::new(reg), body))
        }
        // Java fails inside its try block (a null key) and answers like a registration that changed nothing:
        // SUCCESS, and the order-topic KV table when `returnOrderTopicConfigToBroker`.
        Ok(None) => Action::Reply(register_reply(req, Some(RegisterResult::default()), ctx.snapshot)),
        Err(e @ RegisterError::Body(body::BodyError::TooLarge(_))) => {
            Action::Refused(system_error(req, e.to_string()), Limit::InflatedBody)
        }
        Err(e) => Action::Reply(system_error(req, e.to_string())),
    }
}

/// The writer's answer to a registration: ha/master address for slaves, the order-topic KV table as body.
pub(crate) fn register_reply(req: &RemotingCommand, outcome: RegisterOutcome, snap: &Snapshot) -> RemotingCommand {
    let Some(result) = outcome else {
        return system_error(req, REGISTER_FAILED).with_empty_ext();
    };
    let mut resp = success(req).with_empty_ext();
    if let Some(ha) = result.ha_server_addr {
        resp = resp.with_ext("haServerAddr", ha);
    }
    if let Some(master) = result.master_addr {
        resp = resp.with_ext("masterAddr", master);
    }
    if snap.config.return_order_topic_config_to_broker {
        if let Some(table) = snap.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG) {
            resp = resp.with_body(body_of(|out| body::encode_kv_table(table, out)));
        }
    }
    resp
}

/// 104. Java queues it and answers at once; a request missing fields is dropped by the batch later.
pub(crate) fn unregister(req: &RemotingCommand) -> Action {
    match (req.ext("clusterName"), req.ext("brokerAddr"), req.ext("brokerName"), req.ext_i64("brokerId")) {
        (Some(c), Some(a), Some(n), Some(id)) => Action::Write(WriteOp::UnregisterBroker(UnregisterBroker {
            cluster_name: c.to_string(),
            broker_addr: a.to_string(),
            broker_name: n.to_string(),
            broker_id: id,
        })),
        _ => Action::Reply(success(req)),
    }
}

/// Java dereferences `clusterName`/`brokerAddr` in 904 and 322 and answers a missing one with SYSTEM_ERROR.
fn live_key(req: &RemotingCommand) -> Result<(String, String), RemotingCommand> {
    match (req.ext("clusterName"), req.ext("brokerAddr")) {
        (Some(c), Some(a)) => Ok((c.to_string(), a.to_string())),
        _ => Err(system_error(req, "clusterName and brokerAddr are required")),
    }
}

/// 904: refreshes a live entry; unknown brokers are ignored.
pub(crate) fn heartbeat(req: &RemotingCommand) -> Action {
    match live_key(req) {
        Ok((cluster, addr)) => Action::Write(WriteOp::BrokerHeartbeat { cluster, addr }),
        Err(resp) => Action::Reply(resp),
    }
}

/// 322: compares the broker's DataVersion with ours and refreshes its live entry. No body is no DataVersion,
/// which Java reports as changed.
pub(crate) fn query_data_version(req: &RemotingCommand) -> Action {
    let data_version = if req.body.is_empty() {
        None
    } else {
        match body::decode_data_version(&req.body) {
            Ok(dv) => Some(dv),
            Err(e) => return Action::Reply(system_error(req, e.to_string())),
        }
    };
    match live_key(req) {
        Ok((cluster, addr)) => Action::Write(WriteOp::QueryDataVersion { cluster, addr, data_version }),
        Err(resp) => Action::Reply(resp),
    }
}

/// The writer's answer to 322.
pub(crate) fn query_data_version_reply(
    req: &RemotingCommand,
    changed: bool,
    stored: Option<crate::model::DataVersion>,
) -> RemotingCommand {
    let mut resp =
        RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_ext("changed", changed.to_string());
    if let Some(dv) = stored {
        resp = resp.with_body(body_of(|out| body::encode_data_version(&dv, out)));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::Cell;

    use crate::handlers::tests::TestCtx;
    use crate::model::TopicConfig;
    use crate::registration::encode_register;
    use crate::state::routes::RegisterBroker;

    thread_local! {
        static GAVE_WAY: Cell<usize> = const { Cell::new(0) };
    }

    /// The decoder thread's `give_way` is called while a registration is decoded, and once more before its topics
    /// are sorted, so a query that arrives meanwhile need not wait for the rest of the decoder's slice
    /// (decision 0025).
    #[test]
    fn a_long_registration_gives_way_while_decoded_and_before_its_sort() {
        let test = TestCtx::new(Default::default());
        let ctx = test.ctx(std::net::Ipv4Addr::LOCALHOST.into(), || GAVE_WAY.with(|c| c.set(c.get() + 1)));
        let topics = (0..1000).rev().map(|i| TopicConfig::with_defaults(format!("t-{i:04}"))).collect();
        let reg = RegisterBroker::new("c", "b", 0, "10.0.0.1:10911", topics, Default::default());
        let Action::Write(WriteOp::RegisterBroker(decoded, _)) = register(&ctx, &encode_register(&reg, 1)) else {
            panic!("a registration to apply");
        };
        assert!(decoded.body.topic_configs.windows(2).all(|w| w[0].topic_name < w[1].topic_name));
        // The scanner's topics 256, 512 and 768, then the sort.
        assert_eq!(GAVE_WAY.with(Cell::get), 4);
    }
}
