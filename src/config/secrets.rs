//! Which keys are secret: never served, on either port (GET_NAMESRV_CONFIG, `/api/config`), to anyone.
//!
//! Every key of the table carries its class (`Public` or `Secret`, a token the table's macro requires, so a key
//! added without one does not compile). A key is secret when its value grants something: a password, a key or
//! credential that signs requests, an account. Keys of the `-c` file that are not in the table (Java's, a broker's
//! or the controller's keys kept in `Config::extra`) are served as Java serves them, except those listed in
//! `FOREIGN_SECRETS` and those whose name reads like a secret (`named_like_a_secret`): we cannot know what an
//! unknown key grants, so a name that hints at it is enough to withhold it (docs/security.md).
//!
//! `-p` prints everything, secrets included: it runs on the operator's own terminal against the operator's own
//! file, and it is how a file is checked.

use super::{Config, CLASSES};

/// What serving a key's value would give away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Served on both ports (GET_NAMESRV_CONFIG for Java's keys and the extra ones, `/api/config` for all).
    Public,
    /// Never served: the value grants something (a password, a signing credential, an account).
    Secret,
}

/// Keys of other RocketMQ components, not in our table, whose value grants something although the name does not
/// say so: the controller's metrics exporter header (an `Authorization` header, typically).
const FOREIGN_SECRETS: &[&str] = &["metricsGrpcExporterHeader"];

/// Words in an unknown key's name that hint at a secret (matched lower-case anywhere in the name): passwords,
/// secret and access keys, credentials, tokens, private keys, accounts (`user`), anything auth-related, headers.
const SECRET_WORDS: &[&str] =
    &["password", "passwd", "secret", "credential", "accesskey", "token", "privatekey", "user", "auth", "header"];

/// The class of a known key; `None` for keys not in the table.
pub(crate) fn class(key: &str) -> Option<Class> {
    CLASSES.iter().find(|(name, _)| *name == key).map(|(_, class)| *class)
}

/// Whether a key's value must never be served. A known key by its class only; an unknown key by
/// `FOREIGN_SECRETS` and its name.
pub(crate) fn is_secret_key(key: &str) -> bool {
    match class(key) {
        Some(class) => class == Class::Secret,
        None => FOREIGN_SECRETS.contains(&key) || named_like_a_secret(key),
    }
}

fn named_like_a_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| k.contains(w))
}

impl Config {
    /// GET_NAMESRV_CONFIG's list: Java's (`java_entries`) less the secrets.
    pub(crate) fn served_java_entries(&self) -> Vec<(String, String)> {
        self.java_entries().into_iter().filter(|(k, _)| !is_secret_key(k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, KEYS};

    /// The secret keys of the table, by name: a key that becomes secret or stops being one is a decision this
    /// list records.
    #[test]
    fn the_secret_keys_of_the_table() {
        let secret: Vec<&str> = CLASSES.iter().filter(|(_, c)| *c == Class::Secret).map(|(k, _)| *k).collect();
        assert_eq!(
            secret,
            ["tls.server.keyPassword", "innerClientAuthenticationCredentials", "initAuthenticationUser"]
        );
        assert_eq!(CLASSES.len(), KEYS.len(), "every key has a class");
        for (key, _) in CLASSES {
            assert!(class(key).is_some(), "{key}");
        }
    }

    /// Known keys go by their class, not their name: `initAuthenticationUser` has no secret word in it (root's
    /// password was served for that reason), `authenticationEnabled` has one and is public.
    #[test]
    fn known_keys_go_by_class_not_by_name() {
        assert!(is_secret_key("initAuthenticationUser"));
        assert!(is_secret_key("innerClientAuthenticationCredentials"));
        assert!(is_secret_key("tls.server.keyPassword"));
        for key in ["authenticationEnabled", "authUsersPath", "authUsersRefreshSeconds", "authenticationWhitelist"] {
            assert!(!is_secret_key(key), "{key}");
        }
        assert!(!is_secret_key("listenPort") && !is_secret_key("aclEnable"));
    }

    /// Unknown keys: served as Java serves them, except a listed foreign secret or a name that reads like one.
    #[test]
    fn unknown_keys_are_served_unless_they_look_secret() {
        for key in ["secretKey", "accessKey", "securityToken", "tls.client.keyPassword", "metricsGrpcExporterHeader"] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["initAuthUser", "someUserName", "authorizationEnabled"] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["productEnvNote", "controllerDLegerPeers", "brokerClusterName", "mappedFileSize"] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    /// GET_NAMESRV_CONFIG's list holds no secret, whatever the `-c` file set (`/api/config`: [`crate::http::api`]'s
    /// tests).
    #[test]
    fn served_list_holds_no_secret() {
        let mut c = Config::default();
        c.set("initAuthenticationUser", r#"{"username":"root","password":"s3cret"}"#).unwrap();
        c.set("innerClientAuthenticationCredentials", r#"{"accessKey":"ak","secretKey":"sk"}"#).unwrap();
        c.set("tls.server.keyPassword", "kp").unwrap();
        c.apply(&[("metricsGrpcExporterHeader".into(), "authorization:Bearer x".into())]);
        let served = c.served_java_entries();
        assert!(served.iter().any(|(k, _)| k == "listenPort"));
        for (k, v) in served {
            assert!(!is_secret_key(&k), "{k}");
            assert!(!v.contains("s3cret") && !v.contains("Bearer"), "{k}={v}");
        }
        // `-p` keeps them: the operator's own terminal.
        assert!(c.all_entries().iter().any(|(k, _)| k == "initAuthenticationUser"));
    }
}
