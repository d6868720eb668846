//! `config get` (319) and `config set KEY=VALUE...` (318).

use std::collections::BTreeMap;

use crate::protocol::{props, RequestCode};

use super::table::Table;
use super::{bad_body, call, CliError, ConfigCommand, Ctx, Output};

pub(super) fn run(ctx: &Ctx, cmd: &ConfigCommand) -> Result<Output, CliError> {
    match cmd {
        ConfigCommand::Get => get(ctx),
        ConfigCommand::Set { items } => set(ctx, items),
    }
}

fn get(ctx: &Ctx) -> Result<Output, CliError> {
    let pairs = ctx.read(|client| {
        let cmd = client.cmd(RequestCode::GET_NAMESRV_CONFIG);
        let resp = call(client, cmd)?;
        let text = String::from_utf8_lossy(&resp.body);
        props::parse(&text).map_err(|e| bad_body(client, format!("cannot read the configuration: {e}")))
    })?;
    // Later duplicates win, as in java.util.Properties.
    let config: BTreeMap<String, String> = pairs.into_iter().collect();
    if ctx.json {
        return Ok(Output::json(&serde_json::json!(config)));
    }
    let mut t = Table::new(&["KEY", "VALUE"]);
    for (k, v) in config {
        t.row(vec![k, v]);
    }
    Ok(Output::ok(t.render()))
}

/// `KEY=VALUE` → (key, value); the value may contain `=`.
fn parse_item(item: &str) -> Result<(String, String), CliError> {
    let usage = |why: &str| CliError::Usage(format!("config set: {why} in {item:?} (expected KEY=VALUE)"));
    let (k, v) = item.split_once('=').ok_or_else(|| usage("no '='"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(usage("empty key"));
    }
    if item.contains(['\n', '\r']) {
        return Err(usage("line break"));
    }
    Ok((k.to_string(), v.to_string()))
}

fn set(ctx: &Ctx, items: &[String]) -> Result<Output, CliError> {
    let pairs = items.iter().map(|i| parse_item(i)).collect::<Result<Vec<_>, _>>()?;
    let body = props::write(&pairs);
    let writes = ctx
        .write_all(|c| c.cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(body.clone().into_bytes()), |_, _| Ok(()))
        .sole_error()?;
    let updated: BTreeMap<&str, &str> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let shown: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(writes.report(ctx, &format!("Update {}", shown.join(" ")), serde_json::json!({ "updated": updated })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_split_at_the_first_equals_sign() {
        assert_eq!(parse_item("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_item("a=").unwrap(), ("a".into(), "".into()));
        assert!(parse_item("a").is_err());
        assert!(parse_item("=b").is_err());
    }
}
