//! 318 UPDATE_NAMESRV_CONFIG and 319 GET_NAMESRV_CONFIG: Java properties text in, sorted properties text out.

use super::{reply, success, system_error, Action, Ctx};
use crate::protocol::{props, RemotingCommand, ResponseCode};
use crate::writer::command::WriteOp;

/// Java's remark when an update names a black-listed key; ours goes on to name the refused keys.
pub const BLACK_LISTED: &str = "Can not update config in black list.";

/// 318: parse; refuse the whole update if it names a key that may not change at runtime (Java refuses its black
/// list the same way: NO_PERMISSION, nothing applied); then let the writer apply and persist.
pub fn update_config(ctx: &Ctx, req: &RemotingCommand) -> Action {
    if req.body.is_empty() {
        return Action::Reply(success(req));
    }
    // Java decodes the body with `new String(body, UTF_8)`: malformed bytes become U+FFFD, never an error.
    let text = String::from_utf8_lossy(&req.body);
    let Ok(pairs) = props::parse(&text) else {
        return Action::Reply(system_error(req, "string2Properties error"));
    };
    let refused = ctx.snapshot.config.refused_updates(pairs.iter().map(|(k, _)| k.as_str()));
    if !refused.is_empty() {
        return Action::Reply(reply(req, ResponseCode::NO_PERMISSION, Some(refusal_remark(&refused))));
    }
    Action::Write(WriteOp::UpdateConfig { pairs })
}

/// 319.
pub fn get_config(ctx: &Ctx, req: &RemotingCommand) -> Action {
    // Java's answer less any secret the `-c` file holds (docs/security.md): nobody reads a secret off the wire.
    let mut entries = ctx.snapshot.config.java_entries();
    entries.retain(|(k, _)| !crate::config::is_secret_key(k));
    let text = props::write(&entries);
    Action::Reply(success(req).with_body(text.into_bytes()))
}

/// Java's sentence, then the refused keys: scripts that look for Java's remark still find it, and the operator
/// learns which key it was.
pub fn refusal_remark(refused: &[String]) -> String {
    format!("{BLACK_LISTED} Not changeable at runtime: {}", refused.join(", "))
}
