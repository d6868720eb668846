//! Authentication of RocketMQ peers (`aclEnable=true`; docs/security.md): the accounts of a 4.x `plain_acl.yml`
//! and the `AccessKey`/`Signature` ext fields that Java, Go, C++ and Node clients already send. Pure: parsing and
//! checking only. The check runs in [`crate::handlers::dispatch`]; `acl_reload.rs` reloads the file when it changes.
//!
//! Policy, in order:
//! 0. A request carrying the mark of one this name server signed itself (`outbound`) is refused unless it is the
//!    read the mark was made for: our own signature must never be replayed to us as the inner credential.
//! 1. A peer matching `globalWhiteRemoteAddresses` needs no signature (brokers on a trusted network: 4.x brokers
//!    never sign, 5.x ones only with extra settings).
//! 2. Anybody else needs `AccessKey` of a known account and a valid `Signature`, for every request, reads included.
//! 3. If the account has a `whiteRemoteAddress`, the peer must match it too. (Stricter than Java's broker, where a
//!    matching address skips the signature check: an address alone is not proof of an account.)
//! 4. State-changing requests need an account with `admin: true`.

pub mod address;
pub mod file;
pub mod outbound;
pub mod signature;
pub(crate) mod users;

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use address::AddressPattern;

use crate::protocol::RemotingCommand;

/// One account of the file.
#[derive(Clone)]
pub struct Account {
    pub access_key: String,
    pub secret_key: Vec<u8>,
    /// The HMAC keyed with `secret_key`, ready to clone.
    pub key: signature::Key,
    /// `None`: usable from any address.
    pub white: Option<AddressPattern>,
    pub admin: bool,
    /// An ACL 2.0 user may be disabled on the brokers: known, and refused by name. File accounts are always enabled.
    pub enabled: bool,
}

/// Accounts are equal when what the file says is equal (the keyed HMAC follows from the secret).
impl PartialEq for Account {
    fn eq(&self, o: &Account) -> bool {
        (&self.access_key, &self.secret_key, &self.white, self.admin, self.enabled)
            == (&o.access_key, &o.secret_key, &o.white, o.admin, o.enabled)
    }
}

impl Eq for Account {}

/// Never prints the secret key.
impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("white", &self.white)
            .field("admin", &self.admin)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// The accounts in force: the loaded account file (`aclEnable`), or the ACL 2.0 users (`authenticationEnabled`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acl {
    pub global_white: Vec<AddressPattern>,
    pub accounts: HashMap<String, Account>,
    /// Request codes that need no signature (`authenticationWhitelist`, ACL 2.0).
    pub open_codes: Vec<i32>,
    /// Whose words a refusal is told in.
    pub wording: Wording,
}

/// The remarks of refusals: ours for the account file, the 5.x broker's for ACL 2.0 users (what a 5.x client or
/// script already knows from the broker).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wording {
    #[default]
    File,
    Users,
}

/// Who a request was accepted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller<'a> {
    /// Authentication is off.
    Anyone,
    /// From a `globalWhiteRemoteAddresses` address: no signature needed.
    Trusted,
    /// Signed by this account.
    Account(&'a str),
}

impl Caller<'_> {
    /// The account, for the audit trail.
    pub(crate) fn account(&self) -> Option<&str> {
        match self {
            Caller::Account(a) => Some(a),
            _ => None,
        }
    }
}

/// Why a request was refused. The text is the remark the peer gets: it names the account, never a secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NoAccessKey,
    UnknownAccount(String),
    NotFromAllowedAddress(String),
    NoSignature(String),
    BadSignature(String),
    NotAdmin(String),
    /// An ACL 2.0 user disabled on the brokers.
    Disabled(String),
    /// A copy of a request this name server signed itself (`outbound`), sent back to it.
    Replayed(outbound::Replayed),
}

impl Refusal {
    /// A short name for the audit trail.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Refusal::NoAccessKey => "no_access_key",
            Refusal::UnknownAccount(_) => "unknown_account",
            Refusal::NotFromAllowedAddress(_) => "address",
            Refusal::NoSignature(_) | Refusal::BadSignature(_) => "signature",
            Refusal::NotAdmin(_) => "not_admin",
            Refusal::Disabled(_) => "disabled",
            Refusal::Replayed(_) => "replayed",
        }
    }

    /// The remark the peer gets, in `wording`'s words. For ACL 2.0 they are the 5.5 broker's
    /// (`DefaultAuthenticationHandler`), but for `NotAdmin`, which the broker has no words for: it authorizes by
    /// policy, the name server by user type.
    pub(crate) fn remark(&self, wording: Wording) -> String {
        use crate::clip::{clip, ACCESS_KEY_CHARS};
        if wording == Wording::File {
            return self.to_string();
        }
        match self {
            Refusal::NoAccessKey => "username cannot be null.".into(),
            Refusal::UnknownAccount(u) => format!("User:{} is not found.", clip(u, ACCESS_KEY_CHARS)),
            Refusal::Disabled(u) => format!("User:{} is disabled.", clip(u, ACCESS_KEY_CHARS)),
            Refusal::NoSignature(_) | Refusal::BadSignature(_) => "check signature failed.".into(),
            Refusal::NotFromAllowedAddress(u) => {
                format!("User:{} may not be used from this address.", clip(u, ACCESS_KEY_CHARS))
            }
            Refusal::NotAdmin(u) => format!(
                "User:{} is not a Super user: only Super users change a name server's state.",
                clip(u, ACCESS_KEY_CHARS)
            ),
            // No broker words for it: the broker has no such check.
            Refusal::Replayed(_) => self.to_string(),
        }
    }
}

/// The account is the peer's claim: a long one is cut ([`crate::clip::ACCESS_KEY_CHARS`]), so that a refusal never
/// echoes more than a line's worth of whatever the peer sent.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::clip::{clip, ACCESS_KEY_CHARS};
        match self {
            Refusal::NoAccessKey => f.write_str("[ACL] no AccessKey: this name server requires signed requests"),
            Refusal::UnknownAccount(ak) => write!(f, "[ACL] no account {:?}", clip(ak, ACCESS_KEY_CHARS)),
            Refusal::NotFromAllowedAddress(ak) => {
                write!(f, "[ACL] account {:?} may not be used from this address", clip(ak, ACCESS_KEY_CHARS))
            }
            Refusal::NoSignature(ak) => {
                write!(f, "[ACL] request of account {:?} is not signed", clip(ak, ACCESS_KEY_CHARS))
            }
            Refusal::BadSignature(ak) => {
                write!(f, "[ACL] signature check failed for account {:?}", clip(ak, ACCESS_KEY_CHARS))
            }
            Refusal::NotAdmin(ak) => {
                write!(f, "[ACL] account {:?} is not an admin account", clip(ak, ACCESS_KEY_CHARS))
            }
            Refusal::Disabled(ak) => write!(f, "[ACL] account {:?} is disabled", clip(ak, ACCESS_KEY_CHARS)),
            Refusal::Replayed(why) => write!(f, "[ACL] {why}"),
        }
    }
}

impl Acl {
    /// The policy above. `write`: the request changes state ([`crate::handlers::is_write`]).
    pub fn check<'r>(&self, peer: IpAddr, req: &'r RemotingCommand, write: bool) -> Result<Caller<'r>, Refusal> {
        // First, whatever the address or the code: a replay of our own signature is refused even where no
        // signature is needed, so that it is never taken for the inner credential.
        outbound::admit(req, write).map_err(Refusal::Replayed)?;
        if self.global_white.iter().any(|p| p.matches(peer)) || self.open_codes.contains(&req.code) {
            return Ok(Caller::Trusted);
        }
        let ext = req.ext_fields.as_ref().ok_or(Refusal::NoAccessKey)?;
        let access_key = last(ext, signature::ACCESS_KEY).ok_or(Refusal::NoAccessKey)?;
        let Some(account) = self.accounts.get(access_key) else {
            return Err(Refusal::UnknownAccount(access_key.into()));
        };
        // The broker's order: a disabled user is told so before its signature is looked at.
        if !account.enabled {
            return Err(Refusal::Disabled(access_key.into()));
        }
        if account.white.as_ref().is_some_and(|w| !w.matches(peer)) {
            return Err(Refusal::NotFromAllowedAddress(access_key.into()));
        }
        let given = last(ext, signature::SIGNATURE).ok_or_else(|| Refusal::NoSignature(access_key.into()))?;
        if !account.key.verify(ext, &req.body, given) {
            return Err(Refusal::BadSignature(access_key.into()));
        }
        if write && !account.admin {
            return Err(Refusal::NotAdmin(access_key.into()));
        }
        Ok(Caller::Account(access_key))
    }
}

/// A field's value as Java sees it: ext fields decode into a `HashMap`, so of a repeated key the last one counts.
fn last<'r>(ext: &'r crate::protocol::ExtFields, key: &str) -> Option<&'r str> {
    ext.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RequestCode;

    const FILE: &str = "globalWhiteRemoteAddresses: [10.0.0.*]\naccounts:\n  \
        - {accessKey: reader01, secretKey: readsecret}\n  \
        - {accessKey: admin001, secretKey: adminsecret, admin: true}\n  \
        - {accessKey: pinned01, secretKey: pinsecret, admin: true, whiteRemoteAddress: 192.168.1.*}\n";

    fn acl() -> Acl {
        file::parse(FILE).unwrap()
    }

    fn signed(ak: &str, secret: &str) -> RemotingCommand {
        let mut req = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1)
            .with_ext("topic", "T")
            .with_ext(signature::ACCESS_KEY, ak)
            .with_body(b"b".to_vec());
        let sig = signature::sign(req.ext_fields.as_ref().unwrap(), &req.body, secret.as_bytes());
        req = req.with_ext(signature::SIGNATURE, sig);
        req
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_policy() {
        let acl = acl();
        let outsider = ip("203.0.113.7");
        // Trusted network: nothing needed, writes included.
        let bare = RemotingCommand::request(RequestCode::REGISTER_BROKER, 1);
        assert_eq!(acl.check(ip("10.0.0.9"), &bare, true), Ok(Caller::Trusted));
        assert_eq!(acl.check(ip("::ffff:10.0.0.9"), &bare, true), Ok(Caller::Trusted));
        // Everybody else signs, reads included.
        assert_eq!(acl.check(outsider, &bare, false), Err(Refusal::NoAccessKey));
        assert_eq!(acl.check(outsider, &signed("reader01", "readsecret"), false), Ok(Caller::Account("reader01")));
        assert_eq!(
            acl.check(outsider, &signed("reader01", "wrong"), false),
            Err(Refusal::BadSignature("reader01".into()))
        );
        assert_eq!(
            acl.check(outsider, &signed("nobody01", "x"), false),
            Err(Refusal::UnknownAccount("nobody01".into()))
        );
        let unsigned = RemotingCommand::request(1, 1).with_ext(signature::ACCESS_KEY, "reader01");
        assert_eq!(acl.check(outsider, &unsigned, false), Err(Refusal::NoSignature("reader01".into())));
        // Writes need an admin account.
        assert_eq!(
            acl.check(outsider, &signed("reader01", "readsecret"), true),
            Err(Refusal::NotAdmin("reader01".into()))
        );
        assert_eq!(acl.check(outsider, &signed("admin001", "adminsecret"), true), Ok(Caller::Account("admin001")));
        // An account's own address restriction comes on top of its signature.
        let pinned = signed("pinned01", "pinsecret");
        assert_eq!(acl.check(outsider, &pinned, true), Err(Refusal::NotFromAllowedAddress("pinned01".into())));
        assert_eq!(acl.check(ip("192.168.1.4"), &pinned, true), Ok(Caller::Account("pinned01")));
        assert_eq!(
            acl.check(ip("192.168.1.4"), &signed("pinned01", "nope"), true),
            Err(Refusal::BadSignature("pinned01".into()))
        );
    }

    #[test]
    fn tampering_breaks_the_signature() {
        let acl = acl();
        let mut req = signed("reader01", "readsecret");
        req.body = bytes::Bytes::from_static(b"other");
        assert!(acl.check(ip("203.0.113.7"), &req, false).is_err());
        let req = signed("reader01", "readsecret").with_ext("topic", "Other");
        assert!(acl.check(ip("203.0.113.7"), &req, false).is_err());
    }

    #[test]
    fn remarks_and_debug_never_show_secrets() {
        let acl = acl();
        let shown = format!("{acl:?}");
        assert!(!shown.contains("readsecret") && !shown.contains("adminsecret"), "{shown}");
        let e = acl.check(ip("203.0.113.7"), &signed("reader01", "readsecret"), true).unwrap_err();
        assert_eq!(e.to_string(), "[ACL] account \"reader01\" is not an admin account");
    }

    #[test]
    fn a_long_claimed_account_is_cut_in_the_remark() {
        let key = format!("{}{}", "a".repeat(64), "b".repeat(960));
        let e = acl().check(ip("203.0.113.7"), &signed(&key, "x"), false).unwrap_err();
        let shown = e.to_string();
        assert_eq!(shown, format!("[ACL] no account \"{}…(+960 chars)\"", "a".repeat(64)));
        assert!(!shown.contains('b'), "{shown}");
    }

    #[test]
    fn acl2_users_whitelisted_codes_and_the_brokers_words() {
        let base =
            users::Base { inner: Some(("inner".into(), "inner-secret".into())), init: None, open_codes: vec![106] };
        let list = users::parse_list(
            br#"[{"username":"carol","password":"carol-pw","userType":"Normal","userStatus":"disable"},
                 {"username":"dan","password":"dan-pw","userType":"Normal","userStatus":"enable"}]"#,
        )
        .unwrap();
        let acl = users::acl(&base, &list);
        let outsider = ip("203.0.113.7");
        let words = |r: Refusal| r.remark(acl.wording);
        // A whitelisted code needs no signature; any other does.
        let cluster_info = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, 1);
        assert_eq!(acl.check(outsider, &cluster_info, false), Ok(Caller::Trusted));
        let bare = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1);
        assert_eq!(words(acl.check(outsider, &bare, false).unwrap_err()), "username cannot be null.");
        // Disabled: refused by name, even with the right password.
        let e = acl.check(outsider, &signed("carol", "carol-pw"), false).unwrap_err();
        assert_eq!((e.reason(), words(e.clone())), ("disabled", "User:carol is disabled.".to_string()));
        assert_eq!(words(acl.check(outsider, &signed("nobody", "x"), false).unwrap_err()), "User:nobody is not found.");
        assert_eq!(words(acl.check(outsider, &signed("dan", "wrong"), false).unwrap_err()), "check signature failed.");
        assert_eq!(acl.check(outsider, &signed("dan", "dan-pw"), false), Ok(Caller::Account("dan")));
        let e = acl.check(outsider, &signed("dan", "dan-pw"), true).unwrap_err();
        assert!(words(e).starts_with("User:dan is not a Super user"));
        assert_eq!(acl.check(outsider, &signed("inner", "inner-secret"), true), Ok(Caller::Account("inner")));
    }
}
