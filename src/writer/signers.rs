//! ACL 2.0: which account signed each broker's last registration, as far as `auth_sync` needs it — the brokers
//! that registered signed with the inner credential (`innerClientAuthenticationCredentials`, what 5.x brokers sign
//! their registrations with), and the IP each registration came from. A registration signed by anyone else (a
//! user, even a Super one) or by nobody takes its address out: whoever holds a user's password may register a
//! broker, but never one the name server learns users from.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use crate::config::Config;
use crate::write_command::Origin;

/// The inner credential's account, and the brokers last registered signed with it.
#[derive(Debug, Default)]
pub(super) struct Signers {
    /// `None` unless `authenticationEnabled` with an inner credential: then nothing is recorded.
    inner: Option<String>,
    pub(super) by_addr: Arc<BTreeMap<String, IpAddr>>,
}

impl Signers {
    pub(super) fn new(config: &Config) -> Signers {
        let inner = config
            .authentication_enabled
            .then(|| crate::acl::users::inner_credentials(&config.inner_client_authentication_credentials).ok())
            .flatten()
            .flatten()
            .map(|(access_key, _)| access_key);
        Signers { inner, by_addr: Arc::default() }
    }

    /// Notes who signed a registration of `addr`; true when the set changed (a publish is due).
    pub(super) fn registered(&mut self, addr: &str, origin: &Origin) -> bool {
        let Some(inner) = &self.inner else { return false };
        let by_inner = origin.account.as_deref() == Some(inner.as_str());
        match (by_inner, self.by_addr.get(addr)) {
            (true, Some(from)) if *from == origin.peer => false,
            (true, _) => {
                Arc::make_mut(&mut self.by_addr).insert(addr.to_string(), origin.peer);
                true
            }
            (false, None) => false,
            (false, Some(_)) => {
                Arc::make_mut(&mut self.by_addr).remove(addr);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RemotingCommand;
    use crate::state::ConnId;

    fn origin(account: Option<&str>, peer: &str) -> Origin {
        let conn = ConnId { reactor: 0, token: 1, gen: 1 };
        Origin::new(conn, &RemotingCommand::request(103, 1), peer.parse().unwrap(), account.map(String::from))
    }

    #[test]
    fn only_the_inner_credential_makes_a_broker_a_source_of_users() {
        let config = Config {
            authentication_enabled: true,
            inner_client_authentication_credentials: r#"{"accessKey":"inner","secretKey":"s"}"#.into(),
            ..Config::default()
        };
        let mut s = Signers::new(&config);
        assert!(!s.registered("10.0.0.1:10911", &origin(Some("root"), "10.0.0.1")), "a user: not recorded");
        assert!(s.registered("10.0.0.1:10911", &origin(Some("inner"), "10.0.0.1")));
        assert!(!s.registered("10.0.0.1:10911", &origin(Some("inner"), "10.0.0.1")), "unchanged");
        assert_eq!(s.by_addr.get("10.0.0.1:10911"), Some(&"10.0.0.1".parse().unwrap()));
        // The same address registered by a user (or unsigned) afterwards: no longer a source.
        assert!(s.registered("10.0.0.1:10911", &origin(Some("root"), "10.0.0.9")));
        assert!(s.by_addr.is_empty());
        assert!(s.registered("10.0.0.1:10911", &origin(Some("inner"), "10.0.0.1")));
        assert!(s.registered("10.0.0.1:10911", &origin(None, "10.0.0.1")));
        assert!(s.by_addr.is_empty());
        // Authentication off: nothing is recorded.
        let mut off = Signers::new(&Config::default());
        assert!(!off.registered("10.0.0.1:10911", &origin(Some("inner"), "10.0.0.1")));
    }
}
