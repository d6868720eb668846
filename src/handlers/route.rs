//! 105 GET_ROUTEINFO_BY_TOPIC: the hot path. One snapshot, one route build, one encode.

use super::{body_of, system_error, Action, Ctx};
use crate::model::NAMESPACE_ORDER_TOPIC_CONFIG;
use crate::protocol::json::Dialect;
use crate::protocol::{body, RemotingCommand, ResponseCode};
use crate::state::routes::filter_by_zone;

/// `MQVersion.Version.V4_9_4.ordinal()`: from this request version on, routes are sent as standard JSON.
pub const STANDARD_JSON_SINCE_VERSION: i32 = 401;

/// Java's remark for a missing route (`FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)` appended).
pub fn topic_not_exist_remark(topic: Option<&str>) -> String {
    format!(
        "No topic route info in name server for the topic: {}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
        topic.unwrap_or("null")
    )
}

pub fn get_route_info(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let snap = ctx.snapshot;
    let config = &snap.config;
    if config.waiting_for_service(ctx.now_ms - ctx.started_ms) {
        return Action::Reply(system_error(req, "name server not ready"));
    }
    let topic = req.ext("topic");
    let Some(mut route) = topic.and_then(|t| snap.routes.route(t, config.support_acting_master)) else {
        return Action::Reply(RemotingCommand::response_to(
            req,
            ResponseCode::TOPIC_NOT_EXIST,
            Some(topic_not_exist_remark(topic)),
        ));
    };
    if config.order_message_enable {
        route.order_topic_conf = topic.and_then(|t| snap.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, t)).map(str::to_string);
    }
    let mut dialect = if req.version >= STANDARD_JSON_SINCE_VERSION || req.ext_bool("acceptStandardJsonOnly") {
        Dialect::Standard
    } else {
        Dialect::Default
    };
    // The zone hook (ZoneRouteRPCHook) filters and always re-encodes in the default dialect.
    if req.ext_bool("__ZONE_MODE") {
        if let Some(zone) = req.ext("__ZONE_NAME").filter(|z| !z.trim().is_empty()) {
            filter_by_zone(&mut route, zone);
            dialect = Dialect::Default;
        }
    }
    let body = body_of(|out| body::encode_topic_route(&route, dialect, out));
    Action::Reply(RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(body))
}
