//! Broker-facing requests: 103 REGISTER_BROKER, 104 UNREGISTER_BROKER, 904 BROKER_HEARTBEAT, 322 QUERY_DATA_VERSION.
//! Decoding, CRC and body checks happen here on the reactor (in parallel); the writer only applies.

use super::{body_of, success, system_error, Action, Ctx};
use crate::limit::Limit;
use crate::model::{RegisterBrokerBody, SameBody, NAMESPACE_ORDER_TOPIC_CONFIG};
use crate::protocol::{body, RemotingCommand, ResponseCode};
use crate::state::routes::{RegisterBroker, RegisterOutcome, RegisterResult, RouteView, UnregisterBroker};
use crate::state::Snapshot;
use crate::write_command::{RegisterBody, WriteOp};

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

/// Why a REGISTER_BROKER is answered SYSTEM_ERROR; the text is the remark.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegisterError {
    /// Java's remark.
    #[error("crc32 not match")]
    CrcMismatch,
    #[error(transparent)]
    Body(#[from] body::BodyError),
    /// Java unboxes a null brokerId and answers with the NullPointerException text; ours says what is wrong.
    #[error("brokerId is missing or not a number")]
    NoBrokerId,
}

/// Decodes a REGISTER_BROKER request (also used to replay the warm-restart file). `Err` = SYSTEM_ERROR with its
/// text as the remark; `Ok(None)` = a request Java answers SUCCESS without changing anything; the result has no
/// connection.
pub(crate) fn decode_register(
    req: &RemotingCommand,
    max_inflated: usize,
) -> Result<Option<RegisterBroker>, RegisterError> {
    decode_register_against(req, max_inflated, None, &|| {}).map(|r| r.map(|(reg, _)| reg))
}

/// `decode_register`, recognising the body as the broker's last one (at a new DataVersion) when `routes` holds
/// its mark: then the body is not decoded (`RegisterBody::Same`; `crate::state::routes::register_same`). `give_way` as
/// for `body::decode_register_broker_body_marked`.
fn decode_register_against(
    req: &RemotingCommand,
    max_inflated: usize,
    routes: Option<&RouteView>,
    give_way: &dyn Fn(),
) -> Result<Option<(RegisterBroker, RegisterBody)>, RegisterError> {
    let expected_crc = req.ext_i32("bodyCrc32").unwrap_or(0);
    if expected_crc != 0 && crc32_masked(&req.body) != expected_crc {
        return Err(RegisterError::CrcMismatch);
    }
    let compressed = req.ext_bool("compressed");
    let (cluster, addr, name) = (req.ext("clusterName"), req.ext("brokerAddr"), req.ext("brokerName"));
    let known = match (routes, cluster, addr) {
        (Some(routes), Some(cluster), Some(addr)) => {
            routes.body_mark(cluster, addr).filter(|m| m.version == req.version)
        }
        _ => None,
    };
    let same = known
        .and_then(|m| Some((m, body::same_register_body(&req.body, compressed, &m.mark, max_inflated, give_way)?)));
    let (decoded, kind) = match same {
        Some((m, data_version)) => {
            let same = SameBody {
                mark: m.mark,
                raw: req.body.clone(),
                compressed,
                version: req.version,
                topics: m.topic_count,
            };
            (RegisterBrokerBody { data_version, ..Default::default() }, RegisterBody::Same(Box::new(same)))
        }
        None => {
            let (decoded, mark) =
                body::decode_register_broker_body_marked(&req.body, compressed, req.version, max_inflated, give_way)?;
            (decoded, RegisterBody::Decoded { mark, version: req.version })
        }
    };
    let broker_id = req.ext_i64("brokerId").ok_or(RegisterError::NoBrokerId)?;
    let (Some(cluster), Some(addr), Some(name)) = (cluster, addr, name) else {
        return Ok(None);
    };
    let reg = RegisterBroker {
        cluster_name: cluster.to_string(),
        broker_addr: addr.to_string(),
        broker_name: name.to_string(),
        broker_id,
        ha_server_addr: req.ext("haServerAddr").unwrap_or_default().to_string(),
        zone_name: req.ext("__ZONE_NAME").map(str::to_string),
        heartbeat_timeout_ms: req.ext_i64("heartbeatTimeoutMillis"),
        enable_acting_master: req.ext_opt_bool("enableActingMaster"),
        body: decoded,
        conn: None,
    };
    Ok(Some((reg, kind)))
}

/// The REGISTER_BROKER request a broker would send for `reg` (JSON body with its CRC); the inverse of
/// `decode_register`.
pub(crate) fn encode_register(reg: &RegisterBroker, opaque: i32) -> RemotingCommand {
    encode_register_as(reg, opaque, crate::protocol::command::SERVER_VERSION)
}

/// `encode_register` as a broker of release `version` sends it (the body layout and the request version follow
/// it: 4.9 and 5.x bodies differ).
#[doc(hidden)]
pub fn encode_register_as(reg: &RegisterBroker, opaque: i32, version: i32) -> RemotingCommand {
    let bytes = body::encode_register_broker_body(&reg.body, false, version);
    let mut cmd = RemotingCommand::request(crate::protocol::RequestCode::REGISTER_BROKER, opaque)
        .with_ext("brokerName", reg.broker_name.clone())
        .with_ext("brokerAddr", reg.broker_addr.clone())
        .with_ext("clusterName", reg.cluster_name.clone())
        .with_ext("haServerAddr", reg.ha_server_addr.clone())
        .with_ext("brokerId", reg.broker_id.to_string())
        .with_ext("compressed", "false")
        .with_ext("bodyCrc32", crc32_masked(&bytes).to_string());
    if let Some(t) = reg.heartbeat_timeout_ms {
        cmd = cmd.with_ext("heartbeatTimeoutMillis", t.to_string());
    }
    if let Some(e) = reg.enable_acting_master {
        cmd = cmd.with_ext("enableActingMaster", e.to_string());
    }
    if let Some(z) = &reg.zone_name {
        cmd = cmd.with_ext("__ZONE_NAME", z.clone());
    }
    cmd.version = version;
    cmd.with_body(bytes)
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

/// `UtilAll.crc32`: CRC-32 (IEEE) masked to 31 bits.
pub fn crc32_masked(bytes: &[u8]) -> i32 {
    (crc32fast::hash(bytes) & 0x7FFF_FFFF) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::Cell;

    use crate::handlers::tests::TestCtx;
    use crate::model::TopicConfig;

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

    #[test]
    fn crc_is_masked_to_31_bits() {
        // crc32("123456789") = 0xCBF43926; masked = 0x4BF43926.
        assert_eq!(crc32_masked(b"123456789"), 0x4BF4_3926);
    }
}
