//! 106 GET_BROKER_CLUSTER_INFO and 901 GET_BROKER_MEMBER_GROUP: always the default dialect.

use super::{body_of, success, Action, Ctx};
use crate::protocol::{body, RemotingCommand};

pub(crate) fn cluster_info(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let info = ctx.snapshot.routes.cluster_info();
    Action::Reply(success(req).with_body(body_of(|out| body::encode_cluster_info(&info, out))))
}

/// Java 5.x leaves the default remark of `createResponseCommand` on this SUCCESS reply; clients ignore it.
pub(crate) const MEMBER_GROUP_REMARK: &str = "not set any response code";

pub(crate) fn member_group(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let group = ctx.snapshot.routes.broker_member_group(req.ext("clusterName"), req.ext("brokerName"));
    let mut resp = success(req).with_body(body_of(|out| body::encode_broker_member_group(&group, out)));
    resp.remark = Some(MEMBER_GROUP_REMARK.to_string());
    Action::Reply(resp)
}
