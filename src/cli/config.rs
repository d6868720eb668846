//! `config get` (319) and `config set KEY=VALUE...` (318).

use std::collections::BTreeMap;

use crate::config::{self, Config, Update};
use crate::protocol::{props, RequestCode};

use super::servers::note;
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

/// What the server will do with `key=value`, said before sending: `Err` for a value that must not be sent (not
/// `true`/`false` for a boolean), `Ok(Some(warning))` for a key the server ignores or refuses, or a value it cannot
/// read. Known keys are those of [`crate::config::KEYS`] (Java's NamesrvConfig and NettyServerConfig, and ours).
fn check_item(key: &str, value: &str) -> Result<Option<String>, CliError> {
    let Some(policy) = config::update_policy(key) else {
        if crate::controller_node::settings::KEYS.contains(&key) {
            return Ok(Some(format!(
                "{key} is a controller setting, read at start only: the name server keeps the new value only if its \
                 -c file has the key, and it takes effect at the next start"
            )));
        }
        return Ok(Some(format!(
            "{key} is not a name server setting (neither Java's NamesrvConfig or NettyServerConfig nor ours): the \
             server ignores it, as Java's does (unless its -c file has the key, where it changes nothing)"
        )));
    };
    let v = value.trim();
    if Config::is_boolean(key) && !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
        return Err(CliError::Usage(format!(
            "{key} is a boolean: give true or false, not {value:?}. Nothing was sent: the name server (Java's \
             Boolean.parseBoolean) would read it as false"
        )));
    }
    if policy == Update::Start {
        return Ok(Some(format!(
            "{key} is set at start only: the server refuses it (NO_PERMISSION) and applies nothing of this update"
        )));
    }
    if Config::default().set(key, value) == Ok(false) {
        return Ok(Some(format!("{value:?} is not a valid {key}: the server ignores it, as Java's does")));
    }
    Ok(None)
}

fn set(ctx: &Ctx, items: &[String]) -> Result<Output, CliError> {
    let pairs = items.iter().map(|i| parse_item(i)).collect::<Result<Vec<_>, _>>()?;
    // Every value is checked before anything is sent: a refused value refuses the whole update.
    let mut warnings = Vec::new();
    for (k, v) in &pairs {
        warnings.extend(check_item(k, v)?);
    }
    for w in &warnings {
        note(&format!("warning: {w}"));
    }
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

    #[test]
    fn values_are_checked_against_the_servers_keys() {
        let warning = |k: &str, v: &str| check_item(k, v).ok().flatten().unwrap_or_default();
        assert_eq!(check_item("orderMessageEnable", "TRUE").ok(), Some(None));
        assert_eq!(check_item("orderMessageEnable", " false").ok(), Some(None));
        assert_eq!(check_item("waitSecondsForService", "30").ok(), Some(None));
        for bad in ["maybe", "1", "yes", ""] {
            let e = check_item("orderMessageEnable", bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("is a boolean") && e.contains("Nothing was sent"), "{bad}: {e}");
        }
        assert!(warning("fooBar", "1").contains("the server ignores it"));
        assert!(warning("listenPort", "1").contains("NO_PERMISSION"));
        assert!(warning("aclEnable", "true").contains("NO_PERMISSION"));
        assert!(check_item("aclEnable", "on").is_err(), "a start-only boolean is still a boolean");
        assert!(warning("waitSecondsForService", "soon").contains("not a valid waitSecondsForService"));
        assert!(warning("controllerDLegerGroup", "g").contains("controller setting"));
    }
}
