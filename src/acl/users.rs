//! ACL 2.0 (RocketMQ 5.3+, `authenticationEnabled=true`): the users a cluster keeps on its brokers, as AUTH_LIST_USER
//! (3005) answers them, and the account set the name server checks signatures against. Pure: parsing, merging the
//! lists of several brokers, and building an `Acl`; asking the brokers is `auth_sync`.
//!
//! A user signs as a 4.x account does (the user name is the `AccessKey`, the password the secret), so the check is
//! the one of `Acl::check`: a Super user is an admin account; a disabled user is kept, to be refused by name.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{signature, Account, Acl, Wording};

/// One user as the brokers keep it (`UserInfo` in Java: `username`, `password`, `userType`, `userStatus`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct User {
    pub username: String,
    #[serde(default)]
    pub password: String,
    /// `Super` or `Normal`.
    #[serde(rename = "userType", default)]
    pub user_type: String,
    /// `enable` or `disable`.
    #[serde(rename = "userStatus", default)]
    pub user_status: String,
}

impl User {
    pub(crate) fn is_super(&self) -> bool {
        self.user_type.eq_ignore_ascii_case("super")
    }

    /// A user is enabled unless it says otherwise (Java's default status is `enable`).
    pub(crate) fn is_enabled(&self) -> bool {
        !self.user_status.eq_ignore_ascii_case("disable")
    }
}

/// Why a user list or a credential could not be read. Never carries a password.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UsersError {
    #[error("not a user list: {0}")]
    List(String),
    #[error("{key} is not JSON with {fields}")]
    Credentials { key: &'static str, fields: &'static str },
}

/// The body of an AUTH_LIST_USER answer (or the cache file): a JSON list of users. Users without a name are
/// dropped; a name given twice keeps its last entry, as a map keyed by name would.
pub(crate) fn parse_list(body: &[u8]) -> Result<Vec<User>, UsersError> {
    let users: Vec<User> = serde_json::from_slice(body).map_err(|e| UsersError::List(e.to_string()))?;
    let by_name: BTreeMap<String, User> =
        users.into_iter().filter(|u| !u.username.is_empty()).map(|u| (u.username.clone(), u)).collect();
    Ok(by_name.into_values().collect())
}

/// What the lists of several brokers say together, and the users they disagree about.
///
/// The brokers of a cluster each keep their own users (`mqadmin createUser -c` writes to every broker, `-b` to one),
/// so they can differ. A user gains a right only if no broker that answered denies it: it exists only if every
/// answering broker lists it (absent from one that answered is absent), it is Super only if every one says Super,
/// enabled only if every one says enabled, and disabled outright if their passwords differ — the name server cannot
/// tell which password is the real one, and guessing wrong would let in a password the operator changed. So one
/// broker's answer can never add, enable or promote a user; it can take rights away, which is why only brokers that
/// registered signed with the inner credential are asked at all (`auth_sync`): a broker that holds the cluster's own
/// key can do worse than remove a user. A user created with `-b` on part of the cluster is therefore unknown here
/// until it is on every broker asked.
pub(crate) fn merge(lists: &[Vec<User>]) -> (Vec<User>, Vec<String>) {
    let mut merged: BTreeMap<&str, User> = BTreeMap::new();
    // Named once each, in the order first found; a set keeps that linear in the users the brokers send.
    let mut disagree: (Vec<String>, HashSet<String>) = (Vec::new(), HashSet::new());
    fn note(name: &str, disagree: &mut (Vec<String>, HashSet<String>)) {
        if disagree.1.insert(name.to_string()) {
            disagree.0.push(name.to_string());
        }
    }
    let Some((first, rest)) = lists.split_first() else { return (Vec::new(), Vec::new()) };
    for user in first {
        merged.insert(&user.username, user.clone());
    }
    for list in rest {
        let names: BTreeMap<&str, &User> = list.iter().map(|u| (u.username.as_str(), u)).collect();
        for name in names.keys().filter(|n| !merged.contains_key(*n)) {
            note(name, &mut disagree);
        }
        merged.retain(|name, seen| {
            let Some(user) = names.get(name) else {
                note(name, &mut disagree);
                return false;
            };
            if *user != seen {
                note(name, &mut disagree);
                if !user.is_super() {
                    seen.user_type = user.user_type.clone();
                }
                if !user.is_enabled() || seen.password != user.password {
                    seen.user_status = "disable".into();
                }
            }
            true
        });
    }
    (merged.into_values().collect(), disagree.0)
}

/// `innerClientAuthenticationCredentials`: `{"accessKey":..,"secretKey":..}`, what the brokers and proxies sign
/// their own requests with. `None` when the key is empty.
pub(crate) fn inner_credentials(json: &str) -> Result<Option<(String, String)>, UsersError> {
    credentials(json, "innerClientAuthenticationCredentials", "accessKey", "secretKey")
}

/// `initAuthenticationUser`: `{"username":..,"password":..}`, a Super user known from the start.
pub(crate) fn init_user(json: &str) -> Result<Option<(String, String)>, UsersError> {
    credentials(json, "initAuthenticationUser", "username", "password")
}

fn credentials(
    json: &str,
    key: &'static str,
    name: &'static str,
    secret: &'static str,
) -> Result<Option<(String, String)>, UsersError> {
    if json.trim().is_empty() {
        return Ok(None);
    }
    let fields = if name == "accessKey" { "accessKey and secretKey" } else { "username and password" };
    let bad = || UsersError::Credentials { key, fields };
    let v: serde_json::Value = serde_json::from_str(json).map_err(|_| bad())?;
    match (v.get(name).and_then(|x| x.as_str()), v.get(secret).and_then(|x| x.as_str())) {
        (Some(n), Some(s)) if !n.is_empty() && !s.is_empty() => Ok(Some((n.to_string(), s.to_string()))),
        _ => Err(bad()),
    }
}

/// `authenticationWhitelist`: request codes that need no signature, comma-separated as on the broker. Entries that
/// are not numbers are ignored (the broker compares them as text and so never matches them either).
pub(crate) fn open_codes(list: &str) -> Vec<i32> {
    list.split(',').filter_map(|c| c.trim().parse().ok()).collect()
}

/// What the name server's own settings contribute, whatever the brokers say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Base {
    /// `innerClientAuthenticationCredentials`: accepted as a Super user from the start, so the first broker can
    /// register before any user list is known.
    pub inner: Option<(String, String)>,
    /// `initAuthenticationUser`: a Super user from the start, as the broker creates it.
    pub init: Option<(String, String)>,
    /// `authenticationWhitelist`.
    pub open_codes: Vec<i32>,
}

/// The account set for `users` plus `base`. The inner credential and the initial user win over a learned user
/// of the same name: the name server's own configuration is what lets the cluster in at all. A user with an empty
/// password is no account: an HMAC keyed with nothing is a signature anyone can make.
pub(crate) fn acl(base: &Base, users: &[User]) -> Acl {
    let mut accounts: HashMap<String, Account> = users
        .iter()
        .filter(|u| !u.password.is_empty())
        .map(|u| (u.username.clone(), account(&u.username, &u.password, u.is_super(), u.is_enabled())))
        .collect();
    for (name, secret) in base.init.iter().chain(base.inner.iter()) {
        accounts.insert(name.clone(), account(name, secret, true, true));
    }
    Acl { global_white: Vec::new(), accounts, open_codes: base.open_codes.clone(), wording: Wording::Users }
}

fn account(name: &str, secret: &str, admin: bool, enabled: bool) -> Account {
    Account {
        access_key: name.to_string(),
        secret_key: secret.as_bytes().to_vec(),
        key: signature::Key::new(secret.as_bytes()),
        white: None,
        admin,
        enabled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, password: &str, kind: &str, status: &str) -> User {
        User { username: name.into(), password: password.into(), user_type: kind.into(), user_status: status.into() }
    }

    #[test]
    fn a_brokers_list_as_it_answers_it() {
        let body = br#"[{"password":"pw-carol","userStatus":"enable","userType":"Normal","username":"carol"},
            {"password":"pw-root","userStatus":"enable","userType":"Super","username":"root"},
            {"password":"x","username":""}]"#;
        let users = parse_list(body).unwrap();
        assert_eq!(users, [user("carol", "pw-carol", "Normal", "enable"), user("root", "pw-root", "Super", "enable")]);
        assert!(users[1].is_super() && !users[0].is_super());
        assert!(matches!(parse_list(b"{\"users\":1}"), Err(UsersError::List(_))));
        assert_eq!(parse_list(b"[]").unwrap(), []);
    }

    #[test]
    fn brokers_that_disagree_give_the_narrowest_view() {
        let a = vec![
            user("same", "p", "Normal", "enable"),
            user("typed", "p", "Super", "enable"),
            user("status", "p", "Normal", "enable"),
            user("password", "p1", "Super", "enable"),
            user("only-a", "p", "Normal", "enable"),
        ];
        let b = vec![
            user("same", "p", "Normal", "enable"),
            user("typed", "p", "Normal", "enable"),
            user("status", "p", "Normal", "disable"),
            user("password", "p2", "Super", "enable"),
        ];
        let (merged, disagree) = merge(&[a, b]);
        let get = |n: &str| merged.iter().find(|u| u.username == n).unwrap().clone();
        assert_eq!(disagree, ["only-a", "password", "status", "typed"]);
        assert!(get("same").is_enabled());
        assert!(!get("typed").is_super() && get("typed").is_enabled());
        assert!(!get("status").is_enabled());
        assert!(!get("password").is_enabled(), "two passwords: neither is trusted");
        assert!(!merged.iter().any(|u| u.username == "only-a"), "absent from a broker that answered: absent");
    }

    /// One broker's answer among the real ones: it cannot add a user, enable a disabled one or make one Super.
    #[test]
    fn one_answer_cannot_add_enable_or_promote() {
        let real = vec![user("carol", "c", "Normal", "disable"), user("root", "r", "Super", "enable")];
        let rogue = vec![
            user("root", "r", "Super", "enable"),
            user("carol", "c", "Super", "enable"),
            user("mallory", "m", "Super", "enable"),
        ];
        for lists in [[real.clone(), rogue.clone(), real.clone()], [rogue.clone(), real.clone(), real.clone()]] {
            let (merged, _) = merge(&lists);
            assert_eq!(merged, [user("carol", "c", "Normal", "disable"), user("root", "r", "Super", "enable")]);
        }
        assert_eq!(merge(&[]), (vec![], vec![]));
        assert_eq!(merge(std::slice::from_ref(&real)).0, real);
    }

    #[test]
    fn an_empty_password_is_no_account() {
        let base = Base::default();
        let acl = acl(&base, &[user("eve", "", "Super", "enable"), user("carol", "c", "Normal", "enable")]);
        assert!(!acl.accounts.contains_key("eve"));
        assert!(acl.accounts.contains_key("carol"));
    }

    /// Brokers that disagree about every one of many users: each is named once, in the order found, and the merge
    /// stays linear (a search of the names so far took seconds here).
    #[test]
    fn many_disagreeing_users_are_named_once_quickly() {
        let n = 30_000;
        let a: Vec<User> = (0..n).map(|i| user(&format!("u{i}"), "p1", "Normal", "enable")).collect();
        let b: Vec<User> = (0..n).map(|i| user(&format!("u{i}"), "p2", "Normal", "enable")).collect();
        let started = std::time::Instant::now();
        let (merged, disagree) = merge(&[a, b.clone(), b]);
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        assert_eq!(merged.len(), n);
        assert_eq!(disagree.len(), n);
        assert_eq!(disagree[..2], ["u0", "u1"]);
    }

    #[test]
    fn credentials_keys_and_whitelist() {
        assert_eq!(
            inner_credentials(r#"{"accessKey":"rocketmq2","secretKey":"12345678"}"#),
            Ok(Some(("rocketmq2".into(), "12345678".into())))
        );
        assert_eq!(inner_credentials(" "), Ok(None));
        let e = inner_credentials(r#"{"accessKey":"a"}"#).unwrap_err();
        assert_eq!(e.to_string(), "innerClientAuthenticationCredentials is not JSON with accessKey and secretKey");
        assert!(init_user("{not json").is_err());
        assert_eq!(init_user(r#"{"username":"root","password":"pw"}"#), Ok(Some(("root".into(), "pw".into()))));
        assert_eq!(open_codes(" 105, 106,x,"), [105, 106]);
    }

    #[test]
    fn the_name_servers_own_credentials_win_and_are_super() {
        let base = Base {
            inner: Some(("inner".into(), "inner-secret".into())),
            init: Some(("root".into(), "root-pw".into())),
            open_codes: vec![105],
        };
        let acl = acl(&base, &[user("inner", "other", "Normal", "disable"), user("carol", "pw", "Normal", "disable")]);
        let inner = &acl.accounts["inner"];
        assert!(inner.admin && inner.enabled && inner.secret_key == b"inner-secret");
        assert!(acl.accounts["root"].admin);
        assert!(!acl.accounts["carol"].enabled && !acl.accounts["carol"].admin);
        assert_eq!(acl.open_codes, [105]);
    }
}
