//! 105 GET_ROUTEINFO_BY_TOPIC: the hot path. One snapshot, one route build, one encode.

use super::{body_of, system_error, Action, Ctx};
use crate::model::NAMESPACE_ORDER_TOPIC_CONFIG;
use crate::protocol::json::Dialect;
use crate::protocol::{body, RemotingCommand, ResponseCode};
use crate::state::routes::filter_by_zone;

/// `MQVersion.Version.V4_9_4.ordinal()`: from this request version on, routes are sent as standard JSON.
pub(crate) const STANDARD_JSON_SINCE_VERSION: i32 = 401;

/// Java's remark for a missing route (`FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)` appended).
pub(crate) fn topic_not_exist_remark(topic: Option<&str>) -> String {
    format!(
        "No topic route info in name server for the topic: {}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
        topic.unwrap_or("null")
    )
}

pub(crate) fn get_route_info(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let snap = ctx.snapshot;
    let config = &snap.config;
    if config.waiting_for_service(ctx.now_ms - ctx.started_ms) {
        return Action::Reply(system_error(req, "name server not ready"));
    }
    let topic = req.ext("topic");
    let dialect = if req.version >= STANDARD_JSON_SINCE_VERSION || req.ext_bool("acceptStandardJsonOnly") {
        Dialect::Standard
    } else {
        Dialect::Default
    };
    let build = |t: &str, dialect: Dialect| {
        let (route, stamp) = snap.routes.route_stamped(t, config.support_acting_master)?;
        Some((body_of(|out| body::encode_topic_route(&route, dialect, out)), stamp))
    };
    // The order conf (a KV lookup) and the zone filter shape a route per request; everything else is the same
    // for every reader of a topic, so its encoded body comes from the reactor's cache.
    let body = match topic {
        None => None,
        Some(t) if config.order_message_enable || req.ext_bool("__ZONE_MODE") => shaped_route(ctx, req, t, dialect),
        Some(t) => {
            ctx.route_cache.borrow_mut().body(snap.generation, &snap.routes, config, t, dialect, || build(t, dialect))
        }
    };
    let Some(body) = body else {
        return Action::Reply(RemotingCommand::response_to(
            req,
            ResponseCode::TOPIC_NOT_EXIST,
            Some(topic_not_exist_remark(topic)),
        ));
    };
    Action::Reply(RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(body))
}

/// A route with the order conf and/or the zone filter applied, built fresh.
fn shaped_route(ctx: &Ctx, req: &RemotingCommand, topic: &str, mut dialect: Dialect) -> Option<bytes::Bytes> {
    let snap = ctx.snapshot;
    let mut route = snap.routes.route(topic, snap.config.support_acting_master)?;
    if snap.config.order_message_enable {
        route.order_topic_conf = snap.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic).map(str::to_string);
    }
    // The zone hook (ZoneRouteRPCHook) filters and always re-encodes in the default dialect.
    if req.ext_bool("__ZONE_MODE") {
        if let Some(zone) = req.ext("__ZONE_NAME").filter(|z| !z.trim().is_empty()) {
            filter_by_zone(&mut route, zone);
            dialect = Dialect::Default;
        }
    }
    Some(body_of(|out| body::encode_topic_route(&route, dialect, out)))
}
