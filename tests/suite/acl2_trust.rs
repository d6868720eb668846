//! ACL 2.0 (`authenticationEnabled=true`) as an attacker who holds one user's password sees it (docs/security.md,
//! "ACL 2.0"): registering "brokers" that answer AUTH_LIST_USER with users of its choosing, crowding the real
//! brokers out, making the name server dial addresses of its choosing, replaying the name server's own signed
//! request, and signing as a user whose password is empty.

use crate::support;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use namesrv::acl::signature;
use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use support::auth_broker::{user, AuthBroker};
use support::client::Client;
use support::inproc::InProc;
use support::registration::new_cmd;

const INNER: (&str, &str) = ("inner-ak", "inner-sk-123");
/// `initAuthenticationUser`: the Super user whose password the attacker holds.
const ROOT: (&str, &str) = ("root", "root-pw");
const WAIT: Duration = Duration::from_secs(10);

/// An in-process server with ACL 2.0 on, refreshing its users every second.
fn server(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(|c| {
        c.authentication_enabled = true;
        c.inner_client_authentication_credentials =
            format!(r#"{{"accessKey":"{}","secretKey":"{}"}}"#, INNER.0, INNER.1);
        c.init_authentication_user = format!(r#"{{"username":"{}","password":"{}"}}"#, ROOT.0, ROOT.1);
        c.auth_users_refresh_seconds = 1;
        c.auth_users_path = c.kv_config_path.replace("kvConfig.json", "authUsers.json");
        tweak(c);
    })
}

fn signed(cmd: RemotingCommand, (access_key, secret): (&str, &str)) -> RemotingCommand {
    let cmd = cmd.with_ext(signature::ACCESS_KEY, access_key);
    let sig = signature::sign(cmd.ext_fields.as_ref().expect("has AccessKey"), &cmd.body, secret.as_bytes());
    cmd.with_ext(signature::SIGNATURE, sig)
}

/// Registers broker `name` at `addr`, signed as `signer`; it must be accepted.
fn register(c: &mut Client, name: &str, addr: &str, signer: (&str, &str)) {
    let addr: &'static str = Box::leak(addr.to_string().into_boxed_str());
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let b = support::registration::Broker { cluster: "AuthCluster", name, addr, id: 0 };
    let r = c.request(signed(b.register(&["AuthTopic", "AuthTopic2"], 1, 479), signer));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{:?}", r.remark);
}

fn route(who: (&str, &str)) -> RemotingCommand {
    signed(new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "AuthTopic"), who)
}

fn remark(r: &RemotingCommand) -> &str {
    r.remark.as_deref().unwrap_or("")
}

fn listed(b: &AuthBroker) -> usize {
    b.listed.load(Relaxed) + b.refused.load(Relaxed)
}

/// What a rogue answers: root disabled, carol made Super, mallory added as Super.
fn rogue_users() -> Vec<String> {
    vec![
        user("root", "root-pw", "Super", "disable"),
        user("carol", "carol-pw", "Super", "enable"),
        user("mallory", "mallory-pw", "Super", "enable"),
    ]
}

fn real_users() -> Vec<String> {
    vec![user("root", "root-pw", "Super", "enable"), user("carol", "carol-pw", "Normal", "enable")]
}

/// Three "brokers" registered signed as a user (root), named to sort before the real one, answering with users
/// of the attacker's choosing: none of them is ever asked, the real broker is, and neither mallory nor a Super
/// carol appears — not in the accounts, not in the saved list.
#[test]
fn brokers_registered_as_a_user_are_never_asked_and_cannot_crowd_the_real_ones_out() {
    let real = AuthBroker::start(INNER, &real_users());
    let rogues: Vec<AuthBroker> = (0..3).map(|_| AuthBroker::start(INNER, &rogue_users())).collect();
    let srv = server(|_| {});
    let mut c = Client::connect(srv.local_addr());
    for (i, r) in rogues.iter().enumerate() {
        register(&mut c, &format!("a-rogue-{i}"), &r.addr.to_string(), ROOT);
    }
    register(&mut c, "z-real", &real.addr.to_string(), INNER);
    assert!(support::eventually(WAIT, || real.listed.load(Relaxed) >= 2), "the real broker was never asked");
    for r in &rogues {
        assert_eq!(listed(r), 0, "a broker registered by a user was asked");
    }
    let r = c.request(route(("mallory", "mallory-pw")));
    assert_eq!((r.code, remark(&r)), (ResponseCode::NO_PERMISSION, "User:mallory is not found."));
    let kv = new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k");
    let r = c.request(signed(kv.with_ext("value", "v"), ("carol", "carol-pw")));
    assert!(remark(&r).starts_with("User:carol is not a Super user"), "{}", remark(&r));
    let saved = std::fs::read_to_string(&srv.config.auth_users_path).unwrap();
    assert!(saved.contains("carol") && !saved.contains("mallory"), "{saved}");
}

/// More eligible brokers than one refresh asks: they are taken in turn, so every one of them is asked in time (not
/// the first few by name, every time).
#[test]
fn every_eligible_broker_is_asked_in_turn() {
    let brokers: Vec<AuthBroker> = (0..5).map(|_| AuthBroker::start(INNER, &real_users())).collect();
    let srv = server(|_| {});
    let mut c = Client::connect(srv.local_addr());
    for (i, b) in brokers.iter().enumerate() {
        register(&mut c, &format!("broker-{i}"), &b.addr.to_string(), INNER);
    }
    let all_asked = || brokers.iter().all(|b| b.listed.load(Relaxed) >= 1);
    let counts = || brokers.iter().map(|b| b.listed.load(Relaxed)).collect::<Vec<_>>();
    assert!(support::eventually(WAIT, all_asked), "asked per broker: {:?}", counts());
}

/// Our AUTH_LIST_USER, captured by the broker that received it, replayed to us under other codes: refused, and
/// each refresh signs a request of its own (no constant signature to capture).
#[test]
fn our_own_signed_request_cannot_be_replayed_to_us() {
    let broker = AuthBroker::start(INNER, &real_users());
    let srv = server(|_| {});
    let mut c = Client::connect(srv.local_addr());
    register(&mut c, "real", &broker.addr.to_string(), INNER);
    assert!(support::eventually(WAIT, || broker.listed.load(Relaxed) >= 1));
    let first = broker.last.lock().unwrap().clone().expect("a request");
    let ext = first.ext_fields.clone().unwrap();
    assert_eq!(ext.get(signature::ACCESS_KEY), Some(INNER.0));
    for code in [RequestCode::GET_NAMESRV_CONFIG, 106, RequestCode::UPDATE_NAMESRV_CONFIG, 32_047] {
        let mut replay = RemotingCommand::request(code, 7).with_body(first.body.to_vec());
        replay.ext_fields = Some(ext.clone());
        let r = c.request(replay);
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "code {code}: {}", remark(&r));
        assert!(remark(&r).contains("carries the mark of a request this name server signed"), "{}", remark(&r));
    }
    let fresh = || broker.last.lock().unwrap().as_ref().is_some_and(|r| r.ext_fields != first.ext_fields);
    assert!(support::eventually(WAIT, fresh), "every refresh signs a request of its own");
}

/// A user the brokers list with an empty password is no account: a signature keyed with nothing proves nothing.
#[test]
fn a_user_with_an_empty_password_cannot_sign() {
    let mut users = real_users();
    users.push(user("eve", "", "Normal", "enable"));
    let broker = AuthBroker::start(INNER, &users);
    let srv = server(|_| {});
    let mut c = Client::connect(srv.local_addr());
    register(&mut c, "real", &broker.addr.to_string(), INNER);
    assert!(support::eventually(WAIT, || c.request(route(("carol", "carol-pw"))).code == ResponseCode::SUCCESS));
    let r = c.request(route(("eve", "")));
    assert_eq!((r.code, remark(&r)), (ResponseCode::NO_PERMISSION, "User:eve is not found."));
}

/// A broker address that is not the IP its registration came from, or a host name, is never dialed — unless the
/// operator allows the address (`authUsersBrokerAllowList`); a host name not even then.
#[test]
fn only_the_registering_peers_address_or_an_allowed_one_is_dialed() {
    let control = AuthBroker::start(INNER, &real_users());
    let elsewhere = AuthBroker::start_on("127.0.0.2", INNER, &real_users());
    let named = AuthBroker::start(INNER, &real_users());
    let by_name = format!("localhost:{}", named.addr.port());
    let srv = server(|_| {});
    let mut c = Client::connect(srv.local_addr());
    register(&mut c, "control", &control.addr.to_string(), INNER);
    register(&mut c, "elsewhere", &elsewhere.addr.to_string(), INNER);
    register(&mut c, "named", &by_name, INNER);
    assert!(support::eventually(WAIT, || control.listed.load(Relaxed) >= 2));
    assert_eq!((listed(&elsewhere), listed(&named)), (0, 0), "dialed an address the registration did not come from");
    drop(c);
    drop(srv);
    // Allowed by the operator: 127.0.0.2 is asked; the host name still is not, even inside an allowed network.
    let allow = namesrv::test_support::allow_list::AllowList::parse("127.0.0.0/8").unwrap();
    let srv = server(|c| c.auth_users_broker_allow_list = allow);
    let mut c = Client::connect(srv.local_addr());
    register(&mut c, "elsewhere", &elsewhere.addr.to_string(), INNER);
    register(&mut c, "named", &by_name, INNER);
    assert!(support::eventually(WAIT, || elsewhere.listed.load(Relaxed) >= 2), "an allowed address is asked");
    assert_eq!(listed(&named), 0);
}
