//! FLEET_FACTS (a code of ours, `fleet::wire`): what this server knows, for another name server's fleet view.
//! Built from the one snapshot the reactor loaded, in O(brokers + topics + KV): one request per peer per
//! `fleetCheckSeconds`.

use super::{success, Action, Ctx};
use crate::fleet::facts::Facts;
use crate::fleet::wire;
use crate::protocol::RemotingCommand;

pub(crate) fn facts(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let facts = Facts::from_snapshot(ctx.snapshot);
    let body = wire::answer(&facts, |aspect| wire::asked_digest(|k| req.ext(k).map(str::to_string), aspect));
    Action::Reply(success(req).with_body(body))
}
