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
//!
//! FLEET_ROUTES (decision 0034), under the same rule: the route table as the frames that would rebuild it
//! (`saved`), for a peer that starts empty. The writer cuts the tables (the last-update times live only there);
//! this reactor encodes the cut, once per such peer's start.

use super::{reply, success, system_error, Action, Ctx};
use crate::fleet_facts as facts;
use crate::fleet_facts::wire;
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::state::routes::ExportCut;
use crate::state::Snapshot;
use crate::write_command::WriteOp;

/// The remark to an address that is not a peer.
pub(crate) const NOT_A_PEER: &str = "FLEET_FACTS is answered only to the name servers listed in namesrvPeers and \
     to the addresses of adminAllowList (or to an account under aclEnable)";

/// The remark to an address that may not read the route table.
pub(crate) const NOT_A_PEER_ROUTES: &str = "FLEET_ROUTES is answered only to the name servers listed in namesrvPeers \
     and to the addresses of adminAllowList (or to an account under aclEnable)";

/// Room left in a frame for the answer's header, beside its body.
const HEADER_ROOM: usize = 4096;

/// NO_PERMISSION for an address that is neither a peer nor an admin (with ACL off; ACL has checked accounts).
fn refuse_stranger(ctx: &Ctx, req: &RemotingCommand, remark: &str) -> Option<Action> {
    let config = &ctx.snapshot.config;
    let stranger = ctx.acl.is_none() && !config.is_fleet_peer(ctx.peer) && !config.admin_allow_list.allows(ctx.peer);
    stranger.then(|| Action::Reply(reply(req, ResponseCode::NO_PERMISSION, Some(remark.to_string()))))
}

/// FLEET_ROUTES: to the writer for a cut of the tables (`routes_reply` answers).
pub(crate) fn routes(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if let Some(refused) = refuse_stranger(ctx, req, NOT_A_PEER_ROUTES) {
        return refused;
    }
    Action::Write(WriteOp::ExportRoutes { kv: req.ext_bool(wire::WANT_KV) })
}

/// The answer to FLEET_ROUTES from the writer's cut: the registrations with their last-update times, the KV entries
/// when asked, and our clock. An answer that would not fit in a frame (`maxFrameLength`) is refused with a remark
/// rather than sent: the asker's reader would drop it anyway.
pub(crate) fn routes_reply(
    req: &RemotingCommand,
    cut: &ExportCut,
    now_ms: i64,
    kv: bool,
    snap: &Snapshot,
) -> RemotingCommand {
    let body = crate::registration::saved::encode_table(&cut.export(), kv.then_some(&*snap.kv));
    let max = snap.config.max_frame_length;
    if body.len().saturating_add(HEADER_ROOM) > max {
        return system_error(
            req,
            format!("the route table is {} bytes, more than maxFrameLength {max} allows", body.len()),
        );
    }
    success(req).with_ext(wire::PEER_NOW, now_ms.to_string()).with_body(body)
}

pub(crate) fn facts(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if let Some(refused) = refuse_stranger(ctx, req, NOT_A_PEER) {
        return refused;
    }
    let prepared = facts::prepared(ctx.snapshot);
    let body = wire::answer(prepared, |aspect| wire::asked_digest(|k| req.ext(k).map(str::to_string), aspect));
    Action::Reply(success(req).with_body(body))
}
