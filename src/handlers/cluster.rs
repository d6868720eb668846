//! 106 GET_BROKER_CLUSTER_INFO and 901 GET_BROKER_MEMBER_GROUP: always the default dialect.

use super::{body_of, success, Action, Ctx};
use crate::protocol::{body, RemotingCommand};

pub fn cluster_info(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let info = ctx.snapshot.routes.cluster_info();
    Action::Reply(success(req).with_body(body_of(|out| body::encode_cluster_info(&info, out))))
}

pub fn member_group(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let group = ctx
        .snapshot
        .routes
        .broker_member_group(req.ext("clusterName"), req.ext("brokerName"));
    Action::Reply(
        success(req).with_body(body_of(|out| body::encode_broker_member_group(&group, out))),
    )
}
