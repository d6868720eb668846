//! Who may read the HTTP data when `aclEnable` or `authenticationEnabled` is on: the accounts of the account file or
//! the enabled ACL 2.0 users, by HTTP Basic (the access key or user name, and the secret key or password), with the
//! remoting port's policy — a `globalWhiteRemoteAddresses` address needs no credentials, an account with
//! `whiteRemoteAddress` only from there.
//! Basic, not a signature scheme: browsers speak it without any code in the console, and `curl -u` does too. It
//! sends the secret itself, so with `tls.server.mode=enforcing` the HTTP port speaks TLS (docs/security.md).

use std::net::IpAddr;

use base64::Engine;
use subtle::ConstantTimeEq;

use crate::acl::Acl;

/// Why a request was not let in; the name is the `reason` label of `namesrv_http_refused_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Denied {
    /// No `Authorization: Basic` header (or one that does not decode).
    NoCredentials,
    /// Unknown account, wrong secret, or an account not usable from this address: one answer for all three, so a
    /// prober learns nothing about which accounts exist.
    BadCredentials,
}

impl Denied {
    pub(super) fn reason(self) -> &'static str {
        match self {
            Denied::NoCredentials => "no_credentials",
            Denied::BadCredentials => "bad_credentials",
        }
    }
}

/// Checks the `Authorization` header's value (if any) of a request from `peer`.
pub(super) fn check(acl: &Acl, peer: IpAddr, authorization: Option<&[u8]>) -> Result<(), Denied> {
    if acl.global_white.iter().any(|p| p.matches(peer)) {
        return Ok(());
    }
    let (user, password) = authorization.and_then(basic).ok_or(Denied::NoCredentials)?;
    let account = acl.accounts.get(&user).ok_or(Denied::BadCredentials)?;
    if !account.enabled || account.white.as_ref().is_some_and(|w| !w.matches(peer)) {
        return Err(Denied::BadCredentials);
    }
    // Constant time: the comparison must not tell how much of a guessed secret was right.
    match bool::from(account.secret_key.as_slice().ct_eq(password.as_bytes())) {
        true => Ok(()),
        false => Err(Denied::BadCredentials),
    }
}

/// `Basic <base64(user:password)>` → (user, password). The scheme name is case-insensitive (RFC 7617).
fn basic(value: &[u8]) -> Option<(String, String)> {
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "globalWhiteRemoteAddresses: [10.0.0.*]\naccounts:\n  \
        - {accessKey: reader01, secretKey: readsecret}\n  \
        - {accessKey: fenced01, secretKey: fencesecret, whiteRemoteAddress: 192.168.1.*}\n";

    fn header(user: &str, password: &str) -> Vec<u8> {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {token}").into_bytes()
    }

    #[test]
    fn only_a_known_account_with_its_secret_gets_in() {
        let acl = crate::acl::file::parse(FILE).unwrap();
        let outsider: IpAddr = "172.16.0.9".parse().unwrap();
        assert_eq!(check(&acl, outsider, None), Err(Denied::NoCredentials));
        assert_eq!(check(&acl, outsider, Some(b"Bearer x")), Err(Denied::NoCredentials));
        assert_eq!(check(&acl, outsider, Some(b"Basic !!!")), Err(Denied::NoCredentials));
        assert_eq!(check(&acl, outsider, Some(&header("reader01", "readsecret"))), Ok(()));
        assert_eq!(check(&acl, outsider, Some(b"basic cmVhZGVyMDE6cmVhZHNlY3JldA==")), Ok(()));
        assert_eq!(check(&acl, outsider, Some(&header("reader01", "readsecreT"))), Err(Denied::BadCredentials));
        assert_eq!(check(&acl, outsider, Some(&header("reader01", "readsecret2"))), Err(Denied::BadCredentials));
        assert_eq!(check(&acl, outsider, Some(&header("nobody", "readsecret"))), Err(Denied::BadCredentials));
        // An account fenced to an address is refused elsewhere, and let in from there.
        assert_eq!(check(&acl, outsider, Some(&header("fenced01", "fencesecret"))), Err(Denied::BadCredentials));
        let inside: IpAddr = "192.168.1.7".parse().unwrap();
        assert_eq!(check(&acl, inside, Some(&header("fenced01", "fencesecret"))), Ok(()));
        // A trusted address needs nothing, as on the remoting port.
        assert_eq!(check(&acl, "10.0.0.3".parse().unwrap(), None), Ok(()));
    }

    #[test]
    fn acl2_users_sign_in_with_their_password_and_a_disabled_one_does_not() {
        use crate::acl::users;
        let list = users::parse_list(
            br#"[{"username":"alice","password":"alice-pw","userType":"Normal","userStatus":"enable"},
                 {"username":"bob","password":"bob-pw","userType":"Super","userStatus":"disable"}]"#,
        )
        .unwrap();
        let acl = users::acl(&users::Base::default(), &list);
        let peer: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(check(&acl, peer, Some(&header("alice", "alice-pw"))), Ok(()));
        assert_eq!(check(&acl, peer, Some(&header("bob", "bob-pw"))), Err(Denied::BadCredentials));
        assert_eq!(check(&acl, peer, None), Err(Denied::NoCredentials));
    }
}
