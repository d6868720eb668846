//! FLEET_FACTS (a code of ours, [`crate::fleet_facts::wire`]): what this server knows, for another name server's fleet view.
//! Answered from the pieces prepared once per snapshot ([`crate::fleet_facts::prepared`]): after the first request
//! following a publish, a request costs copying the answer, not a walk of every topic.
//!
//! With ACL off, the name servers of `namesrvPeers` (`Config::is_fleet_peer`) and the addresses `adminAllowList`
//! admits are answered: the answer lists every broker, topic and KV entry, and the first one after a publish walks
//! all of them on a reactor; peers need it for the fleet view, admins for `mqnamesrv admin diff`. Anybody else gets
//! NO_PERMISSION with a remark. With `adminAllowList` off that is everybody: such a server lets anybody write
//! (318, 100, 103, …) and read every KV namespace (219), so refusing this read would protect nothing, while it would
//! leave `admin diff` blind to KV namespaces (docs/security.md). With ACL on, the request is signed like any other
//! and an account is answered.

use super::{reply, success, Action, Ctx};
use crate::fleet_facts as facts;
use crate::fleet_facts::wire;
use crate::protocol::{RemotingCommand, ResponseCode};

/// The remark to an address that is not a peer.
pub(crate) const NOT_A_PEER: &str = "FLEET_FACTS is answered only to the name servers listed in namesrvPeers and \
     to the addresses of adminAllowList (or to an account under aclEnable)";

pub(crate) fn facts(ctx: &Ctx, req: &RemotingCommand) -> Action {
    let config = &ctx.snapshot.config;
    if ctx.acl.is_none() && !config.is_fleet_peer(ctx.peer) && !config.admin_allow_list.allows(ctx.peer) {
        return Action::Reply(reply(req, ResponseCode::NO_PERMISSION, Some(NOT_A_PEER.to_string())));
    }
    let prepared = facts::prepared(ctx.snapshot);
    let body = wire::answer(prepared, |aspect| wire::asked_digest(|k| req.ext(k).map(str::to_string), aspect));
    Action::Reply(success(req).with_body(body))
}
