//! FLEET_FACTS (a code of ours, `fleet::wire`): what this server knows, for another name server's fleet view.
//! Answered from the pieces prepared once per snapshot (`fleet::facts::prepared`): after the first request following
//! a publish, a request costs copying the answer, not a walk of every topic.
//!
//! With ACL off, only the name servers of `namesrvPeers` are answered (`Config::is_fleet_peer`): the answer lists
//! every broker, topic and KV entry, the first one after a publish walks all of them on a reactor, and nothing else
//! needs it. Anybody else gets NO_PERMISSION with a remark (`mqnamesrv admin diff` then reads the standard codes).
//! With ACL on, the request is signed like any other and an account is answered.

use super::{reply, success, Action, Ctx};
use crate::fleet::facts;
use crate::fleet::wire;
use crate::protocol::{RemotingCommand, ResponseCode};

/// The remark to an address that is not a peer.
pub(crate) const NOT_A_PEER: &str =
    "FLEET_FACTS is answered only to the name servers listed in namesrvPeers (or to an account under aclEnable)";

pub(crate) fn facts(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if ctx.acl.is_none() && !ctx.snapshot.config.is_fleet_peer(ctx.peer) {
        return Action::Reply(reply(req, ResponseCode::NO_PERMISSION, Some(NOT_A_PEER.to_string())));
    }
    let prepared = facts::prepared(ctx.snapshot);
    let body = wire::answer(prepared, |aspect| wire::asked_digest(|k| req.ext(k).map(str::to_string), aspect));
    Action::Reply(success(req).with_body(body))
}
