//! 318 UPDATE_NAMESRV_CONFIG and 319 GET_NAMESRV_CONFIG: Java properties text in, sorted properties text out.

use super::{reply, success, system_error, Action, Ctx};
use crate::protocol::{props, RemotingCommand, ResponseCode};
use crate::write_command::WriteOp;

/// 318: parse; refuse the whole update if it names a key that may not change at runtime (Java refuses its black
/// list the same way: NO_PERMISSION, nothing applied) or holds a control character (`Config::screen_update`); then
/// let the writer apply and persist.
pub(crate) fn update_config(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if req.body.is_empty() {
        return Action::Reply(success(req));
    }
    // Java decodes the body with `new String(body, UTF_8)`: malformed bytes become U+FFFD, never an error.
    let text = String::from_utf8_lossy(&req.body);
    let Ok(pairs) = props::parse(&text) else {
        return Action::Reply(system_error(req, "string2Properties error"));
    };
    if let Err(refused) = ctx.snapshot.config.screen_update(&pairs) {
        return Action::Reply(reply(req, ResponseCode::NO_PERMISSION, Some(refused.remark())));
    }
    Action::Write(WriteOp::UpdateConfig { pairs })
}

/// 319: raw lines, as Java's `MixAll.properties2String` (the file is written escaped: `Config::file_text`).
pub(crate) fn get_config(ctx: &Ctx, req: &RemotingCommand) -> Action {
    // Java's answer less every secret (`config::secrets`, docs/security.md): nobody reads a secret off the wire.
    let text = props::write(&ctx.snapshot.config.served_java_entries());
    Action::Reply(success(req).with_body(text.into_bytes()))
}
