//! The 4.x account file, `plain_acl.yml`, as RocketMQ operators write it:
//!
//! ```yaml
//! globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.{1,2}]
//! accounts:
//!   - accessKey: RocketMQ
//!     secretKey: 12345678
//!     whiteRemoteAddress: 192.168.1.*
//!     admin: false
//! ```
//!
//! Topic and group permissions (`topicPerms`, `groupPerms`, `defaultTopicPerm`, `defaultGroupPerm`) are accepted and
//! ignored: a name server serves no messages. Any other mistake makes the whole file invalid, as in Java: an account
//! set is never half-loaded.

use std::collections::HashMap;

use yaml_rust2::{Yaml, YamlLoader};

use super::address::{AddressError, AddressPattern};
use super::{Account, Acl};

/// Java's rule (`PlainPermissionManager`): access and secret keys longer than six characters.
const MIN_KEY_LEN: usize = 7;

/// Why a `plain_acl.yml` (or mqadmin's `tools.yml`) cannot be used. The messages name the place in the file and
/// never carry a secret key.
#[derive(Debug, thiserror::Error)]
pub enum AclParseError {
    #[error("not valid YAML: {0}")]
    Yaml(#[from] yaml_rust2::ScanError),
    #[error("the file is empty")]
    Empty,
    #[error("more than one YAML document")]
    ManyDocuments,
    #[error("the top level must be a mapping (globalWhiteRemoteAddresses, accounts)")]
    NotAMapping,
    #[error("{0} must be a list")]
    NotAList(&'static str),
    /// `place` is e.g. `globalWhiteRemoteAddresses[2]` or `whiteRemoteAddress of rocketmq2`.
    #[error("{place} is not a text")]
    NotAText { place: String },
    #[error("{place}: {source}")]
    Pattern { place: String, source: AddressError },
    /// A bad pattern whose text is not quoted: a YAML slip can fold the next lines (a `secretKey` among them)
    /// into one long value, and the error must not carry it into the log.
    #[error("{place}: not an address pattern (a long or multi-word value; check the YAML indentation)")]
    LongPattern { place: String },
    #[error("accounts[{index}]: {source}")]
    Account { index: usize, source: Box<AclParseError> },
    #[error("an account must be a mapping")]
    AccountNotAMapping,
    #[error("accessKey {0:?} must be longer than six characters")]
    ShortAccessKey(String),
    #[error("the secretKey of {0} must be longer than six characters")]
    ShortSecretKey(String),
    #[error("accounts[{index}]: accessKey {access_key} is given twice")]
    Duplicate { index: usize, access_key: String },
    /// `tools.yml` lacks one of the two keys (or is not a mapping).
    #[error("expected accessKey and secretKey")]
    NoCredentials,
}

/// Parses the text of a `plain_acl.yml`. The error names the place; it never contains a secret key.
pub fn parse(text: &str) -> Result<Acl, AclParseError> {
    let docs = YamlLoader::load_from_str(text)?;
    let root = match docs.as_slice() {
        [] => return Err(AclParseError::Empty),
        [one] => one,
        _ => return Err(AclParseError::ManyDocuments),
    };
    let Yaml::Hash(map) = root else {
        return Err(AclParseError::NotAMapping);
    };
    let mut global_white = Vec::new();
    let mut accounts = HashMap::new();
    for (key, value) in map {
        match key.as_str() {
            Some("globalWhiteRemoteAddresses") => {
                for (i, item) in list(value, "globalWhiteRemoteAddresses")?.iter().enumerate() {
                    let place = || format!("globalWhiteRemoteAddresses[{i}]");
                    let text = scalar(item).ok_or_else(|| AclParseError::NotAText { place: place() })?;
                    let pattern = AddressPattern::parse(&text).map_err(|e| shown(place(), &text, e))?;
                    global_white.push(pattern);
                }
            }
            Some("accounts") => {
                for (i, item) in list(value, "accounts")?.iter().enumerate() {
                    let account =
                        account(item).map_err(|e| AclParseError::Account { index: i, source: Box::new(e) })?;
                    if accounts.contains_key(&account.access_key) {
                        return Err(AclParseError::Duplicate { index: i, access_key: account.access_key });
                    }
                    accounts.insert(account.access_key.clone(), account);
                }
            }
            // Java's files carry a dataVersion, and 5.x adds other keys; none concerns a name server.
            _ => {}
        }
    }
    Ok(Acl { global_white, accounts, ..Acl::default() })
}

/// mqadmin's `conf/tools.yml`: `accessKey` and `secretKey` at the top level, the keys the admin CLI signs with.
pub(crate) fn tools_credentials(text: &str) -> Result<(String, String), AclParseError> {
    let docs = YamlLoader::load_from_str(text)?;
    let Some(Yaml::Hash(map)) = docs.first() else {
        return Err(AclParseError::NoCredentials);
    };
    let get = |k: &str| map.get(&Yaml::String(k.into())).and_then(scalar).filter(|v| !v.is_empty());
    match (get("accessKey"), get("secretKey")) {
        (Some(ak), Some(sk)) => Ok((ak, sk)),
        _ => Err(AclParseError::NoCredentials),
    }
}

/// A pattern error as the log shows it: quoted only when the value looks like a pattern. A YAML slip can fold the
/// next lines (a `secretKey` among them) into one long value, and the error must not carry it into the log.
fn shown(place: String, text: &str, source: AddressError) -> AclParseError {
    if text.len() <= 64 && !text.trim().contains(char::is_whitespace) {
        AclParseError::Pattern { place, source }
    } else {
        AclParseError::LongPattern { place }
    }
}

fn list<'a>(value: &'a Yaml, what: &'static str) -> Result<&'a [Yaml], AclParseError> {
    match value {
        Yaml::Array(items) => Ok(items),
        Yaml::Null => Ok(&[]),
        _ => Err(AclParseError::NotAList(what)),
    }
}

/// A scalar as text: `secretKey: 12345678` is an integer to YAML and a string to Java.
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn account(item: &Yaml) -> Result<Account, AclParseError> {
    let Yaml::Hash(map) = item else {
        return Err(AclParseError::AccountNotAMapping);
    };
    let field = |name: &str| map.get(&Yaml::String(name.into()));
    let access_key = field("accessKey").and_then(scalar).unwrap_or_default();
    if access_key.chars().count() < MIN_KEY_LEN {
        return Err(AclParseError::ShortAccessKey(access_key));
    }
    let secret_key = field("secretKey").and_then(scalar).unwrap_or_default();
    if secret_key.chars().count() < MIN_KEY_LEN {
        return Err(AclParseError::ShortSecretKey(access_key));
    }
    let white = match field("whiteRemoteAddress") {
        None | Some(Yaml::Null) => None,
        Some(v) => {
            let place = || format!("whiteRemoteAddress of {access_key}");
            let text = scalar(v).ok_or_else(|| AclParseError::NotAText { place: place() })?;
            match AddressPattern::parse(&text).map_err(|e| shown(place(), &text, e))? {
                // Blank means "not set" here: the account is then usable from any address.
                AddressPattern::Nobody => None,
                p => Some(p),
            }
        }
    };
    let admin = match field("admin") {
        None | Some(Yaml::Null) => false,
        Some(Yaml::Boolean(b)) => *b,
        // Java reads it with `Boolean.parseBoolean`-like leniency through its JSON conversion.
        Some(v) => scalar(v).is_some_and(|s| s.trim().eq_ignore_ascii_case("true")),
    };
    let key = super::signature::Key::new(secret_key.as_bytes());
    Ok(Account { access_key, secret_key: secret_key.into_bytes(), key, white, admin, enabled: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javas_sample_file() {
        let acl = parse(
            "globalWhiteRemoteAddresses:\n  - 10.10.103.*\n  - 192.168.0.{1,2}\n\naccounts:\n  - accessKey: RocketMQ\n    \
             secretKey: 12345678\n    whiteRemoteAddress:\n    admin: false\n    defaultTopicPerm: DENY\n    \
             defaultGroupPerm: SUB\n    topicPerms:\n      - topicA=DENY\n    groupPerms:\n      - groupA=DENY\n\n  \
             - accessKey: rocketmq2\n    secretKey: 12345678\n    whiteRemoteAddress: 192.168.1.*\n    admin: true\n",
        )
        .unwrap();
        assert_eq!(acl.global_white.len(), 2);
        let a = &acl.accounts["RocketMQ"];
        assert_eq!((a.secret_key.as_slice(), a.white.is_none(), a.admin), (&b"12345678"[..], true, false));
        let b = &acl.accounts["rocketmq2"];
        assert_eq!((b.white.as_ref().map(|w| w.to_string()), b.admin), (Some("192.168.1.0-255".into()), true));
    }

    #[test]
    fn mistakes_invalidate_the_whole_file_without_showing_secrets() {
        for (text, says) in [
            ("", "empty"),
            ("- a\n- b\n", "top level"),
            ("accounts: {a: 1}\n", "must be a list"),
            ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "longer than six"),
            ("accounts:\n  - accessKey: rocketmq2\n    secretKey: secret\n", "secretKey of rocketmq2"),
            ("accounts:\n  - accessKey: rocketmq2\n    secretKey: s3cretkey\n  - accessKey: rocketmq2\n    secretKey: s3cretkey2\n", "twice"),
            ("accounts:\n  - accessKey: rocketmq2\n    secretKey: s3cretkey\n    whiteRemoteAddress: 10.0.*.1\n", "after a range"),
            ("globalWhiteRemoteAddresses: [10.0.0.300]\n", "not an IP address"),
            ("accounts: [\n", "not valid YAML"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains("s3cretkey") && !e.contains("secret\""), "{e}");
        }
    }

    #[test]
    fn tools_yml() {
        assert_eq!(
            tools_credentials("accessKey: rocketmq2\nsecretKey: 12345678\n").unwrap(),
            ("rocketmq2".into(), "12345678".into())
        );
        assert!(matches!(tools_credentials("accessKey: rocketmq2\n"), Err(AclParseError::NoCredentials)));
    }

    #[test]
    fn errors_keep_the_place_and_the_pattern_fault() {
        let e =
            parse("accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    whiteRemoteAddress: 10.0.*.1\n")
                .unwrap_err();
        let AclParseError::Account { index: 0, source } = &e else { panic!("{e}") };
        assert!(matches!(**source, AclParseError::Pattern { source: AddressError::Shape { .. }, .. }), "{e}");
        // A long value (a folded secretKey, say) is refused without quoting it.
        let e = parse("globalWhiteRemoteAddresses: [\"10.0.0.1 secretKey: s3cretkey\"]\n").unwrap_err();
        assert!(matches!(e, AclParseError::LongPattern { .. }) && !e.to_string().contains("s3cretkey"), "{e}");
    }

    #[test]
    fn empty_sections_are_allowed() {
        let acl = parse("globalWhiteRemoteAddresses:\naccounts:\n").unwrap();
        assert!(acl.global_white.is_empty() && acl.accounts.is_empty());
    }
}
