//! The write surface as an attacker on the network sees it (docs/security.md): UPDATE_NAMESRV_CONFIG may change
//! only runtime-safe keys, and rewriting the config file loses nothing an operator configured.

use crate::support;

use std::fs;
use std::path::Path;

use namesrv::acl::signature;
use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use namesrv::test_support::server;
use support::client::Client;
use support::inproc::InProc;
use support::registration::new_cmd;

fn update_config(c: &mut Client, props: &str) -> RemotingCommand {
    c.request(new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(props.as_bytes().to_vec()))
}

/// Java's remark for a key of its black list (`DefaultRequestProcessor.updateConfig`).
const JAVA_REMARK: &str = "Can not update config in black list.";

fn refused_remark(keys: &str) -> String {
    format!("Can not update config in black list. Not changeable at runtime: {keys}")
}

/// The attack of CVE-2023-37582's class: point a file-writing setting at a file of the attacker's choice.
#[test]
fn config_update_cannot_point_the_route_snapshot_at_another_file() {
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("authorized_keys");
    fs::write(&victim, "ssh-ed25519 AAAA operator\n").unwrap();
    let mut fx = InProc::start(|c| {
        c.route_snapshot_path = Path::new(&c.kv_config_path).with_file_name("routes.bin").to_string_lossy().into();
    });
    let mut c = fx.client();
    let r = update_config(&mut c, &format!("routeSnapshotPath={}\n", victim.display()));
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{r:?}");
    assert_eq!(r.remark.as_deref(), Some(refused_remark("routeSnapshotPath").as_str()));
    assert!(!fx.dir.path().join("namesrv.properties").exists(), "nothing was persisted");
    // The route tables are saved at shutdown: to the configured file, not the victim.
    fx.stop();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "ssh-ed25519 AAAA operator\n");
    assert!(!victim.with_extension("bak").exists());
    assert!(fx.path("routes.bin").exists(), "the configured snapshot was written");
}

/// Files, listeners, limits and protections: each refused whole, with its name in the remark; a runtime key in the
/// same update is not applied either.
#[test]
fn config_update_cannot_move_files_listeners_or_limits() {
    let fx = InProc::start(|c| {
        c.admin_allow_list = namesrv::test_support::allow_list::AllowList::parse("127.0.0.1").unwrap()
    });
    let mut c = fx.client();
    let before = fx.snapshot().config.clone();
    for (key, value) in [
        ("kvConfigPath", "/tmp/elsewhere.json"),
        ("configStorePath", "/etc/cron.d/x"),
        ("rocketmqHome", "/"),
        ("routeSnapshotPath", "/tmp/x"),
        ("auditLogPath", "/tmp/x"),
        ("aclFile", "/tmp/x.yml"),
        ("tls.server.certPath", "/tmp/cert.pem"),
        ("tls.config.file", "/tmp/tls.properties"),
        ("listenPort", "1"),
        ("bindAddress", "0.0.0.0"),
        ("httpAddress", "0.0.0.0:8080"),
        ("adminAllowList", "0.0.0.0/0"),
        ("aclEnable", "false"),
        ("tls.server.mode", "disabled"),
        ("maxInflatedBody", "9999999999"),
        ("maxTopicsPerRegistration", "0"),
        ("maxConnections", "0"),
        ("maxFrameLength", "2147483647"),
        ("maxPendingWriteBytes", "0"),
        ("serverChannelMaxIdleTimeSeconds", "0"),
        ("writerQueueCapacity", "100000000"),
    ] {
        let r = update_config(&mut c, &format!("orderMessageEnable=true\n{key}={value}\n"));
        assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{key}: {r:?}");
        // Java refuses its own black list too, and gets its remark byte for byte; ours names the keys.
        let java_black_listed = ["kvConfigPath", "configStorePath", "rocketmqHome"].contains(&key);
        let remark = if java_black_listed { JAVA_REMARK.to_string() } else { refused_remark(key) };
        assert_eq!(r.remark.as_deref(), Some(remark.as_str()), "{key}");
    }
    let r = update_config(&mut c, "maxConnections=1\nlistenPort=2\n");
    assert_eq!(r.remark.as_deref(), Some(refused_remark("listenPort, maxConnections").as_str()));
    assert_eq!(fx.snapshot().config, before, "nothing applied");
    assert!(!fx.dir.path().join("namesrv.properties").exists(), "nothing persisted");
    // A runtime key alone goes through.
    assert_eq!(update_config(&mut c, "orderMessageEnable=true\n").code, ResponseCode::SUCCESS);
    assert!(fx.snapshot().config.order_message_enable);
}

/// Issue #45: a runtime value with escaped line breaks would have been written as lines of their own, turning ACL
/// off and moving the KV file at the next start. Refused, nothing applied; a value with every other hard character
/// is accepted and reads back from the rewritten file unchanged.
#[test]
fn config_update_cannot_add_lines_to_the_config_file() {
    let fx = InProc::start(|_| {});
    let mut c = fx.client();
    let before = fx.snapshot().config.clone();
    let attack = "productEnvName=center\\naclEnable=false\\nadminAllowList=\\nkvConfigPath=/elsewhere/kv.json";
    let r = update_config(&mut c, attack);
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{r:?}");
    let remark = "A line break or other control character in the key or value of: productEnvName";
    assert_eq!(r.remark.as_deref(), Some(remark));
    assert_eq!(fx.snapshot().config, before, "nothing applied");
    assert!(!fx.path("namesrv.properties").exists(), "nothing persisted");

    let r = update_config(&mut c, "productEnvName=\\ a=b:c#d!\\\\e \\u00e9\\uD83D\\uDE00\n");
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    let value = "a=b:c#d!\\e \u{e9}\u{1F600}";
    assert_eq!(fx.snapshot().config.product_env_name, value);
    let (read, _) = Config::from_file(&fx.path("namesrv.properties")).unwrap();
    assert_eq!(read.product_env_name, value);
    // Our own keys are written only when the `-c` file had them (this server has no `-c` file).
    assert_eq!(read.java_entries(), fx.snapshot().config.java_entries());
}

/// A `-c` file with our own keys, Java's keys and keys nobody knows; after an accepted update and a restart, the
/// effective configuration is the old one plus the change.
#[test]
fn config_file_keeps_every_key_across_an_update_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.properties");
    let kv = dir.path().join("kvConfig.json");
    let original = format!(
        "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\nreactorThreads=2\npinThreads=false\n\
         adminAllowList=127.0.0.0/8, ::1\nmaxConnections=500\nmaxInflatedBody=1048576\ntls.server.mode=permissive\n\
         routeSnapshotPath={}\nrouteSnapshotIntervalSeconds=60\nhttpAddress=\nsomeoneElsesKey=kept\n",
        kv.display(),
        dir.path().join("routes.bin").display()
    );
    fs::write(&file, &original).unwrap();
    let (before, _) = Config::from_file(&file).unwrap();
    let running = server::start(before.clone()).expect("starts");
    let mut c = Client::connect(running.local_addr());
    assert_eq!(update_config(&mut c, "orderMessageEnable=true\nsomeoneElsesKey=changed\n").code, ResponseCode::SUCCESS);
    running.shutdown();

    let (after, warnings) = Config::from_file(&file).unwrap();
    let mut expected = before.clone();
    expected.order_message_enable = true;
    expected.extra.insert("someoneElsesKey".into(), "changed".into());
    assert_eq!(after.all_entries(), expected.all_entries(), "file now:\n{}", fs::read_to_string(&file).unwrap());
    assert_eq!(after.get("adminAllowList").as_deref(), Some("127.0.0.0/8,::1/128"));
    assert_eq!(after.max_connections, 500);
    assert!(warnings.iter().all(|w| w.contains("someoneElsesKey")), "{warnings:?}");
    assert_eq!(fs::read_to_string(file.with_extension("properties.bak")).unwrap(), original);
}

// ---- aclEnable: AccessKey/Signature authentication ----

const ACCOUNTS: &str = "globalWhiteRemoteAddresses:\n  - 10.10.103.*\naccounts:\n  \
    - accessKey: reader01\n    secretKey: reader-secret\n    admin: false\n  \
    - accessKey: admin001\n    secretKey: admin-secret\n    admin: true\n  \
    - accessKey: faraway1\n    secretKey: faraway-secret\n    admin: true\n    whiteRemoteAddress: 192.168.1.*\n";

/// `cmd` signed as `AclClientRPCHook` signs it.
fn signed(cmd: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    let cmd = cmd.with_ext(signature::ACCESS_KEY, access_key);
    let sig = signature::sign(cmd.ext_fields.as_ref().expect("has AccessKey"), &cmd.body, secret.as_bytes());
    cmd.with_ext(signature::SIGNATURE, sig)
}

/// An in-process server with `aclEnable=true`; its account file lives in a directory of its own.
struct AclServer {
    fx: InProc,
    file: std::path::PathBuf,
    _accounts: tempfile::TempDir,
}

fn with_acl(accounts: &str) -> AclServer {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain_acl.yml");
    fs::write(&file, accounts).unwrap();
    let fx = InProc::start(|c| {
        c.acl_enable = true;
        c.acl_file = file.to_string_lossy().into_owned();
    });
    AclServer { fx, file, _accounts: dir }
}

fn route_req(topic: &str) -> RemotingCommand {
    new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

fn put_kv(value: &str) -> RemotingCommand {
    new_cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k").with_ext("value", value)
}

fn get_kv(c: &mut Client) -> Option<String> {
    let r = c.request(signed(
        new_cmd(RequestCode::GET_KV_CONFIG).with_ext("namespace", "NS").with_ext("key", "k"),
        "reader01",
        "reader-secret",
    ));
    r.ext("value").map(String::from)
}

#[test]
fn acl_requires_signatures_for_reads_and_admin_accounts_for_writes() {
    let AclServer { fx, _accounts: _keep, .. } = with_acl(ACCOUNTS);
    let mut c = fx.client();
    let acl_hits = || fx.metrics().limit_hits(namesrv::test_support::limit::Limit::Acl);

    // 127.0.0.1 is not on the trusted network: an unsigned read is refused.
    let r = c.request(route_req("T"));
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{r:?}");
    assert_eq!(r.remark.as_deref(), Some("[ACL] no AccessKey: this name server requires signed requests"));
    // Signed by a known account: served (the topic does not exist, which is the handler's own answer).
    let r = c.request(signed(route_req("T"), "reader01", "reader-secret"));
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST, "{r:?}");
    // A wrong secret, an unknown account, a tampered request.
    let r = c.request(signed(route_req("T"), "reader01", "guessed-secret"));
    assert_eq!((r.code, r.remark.as_deref()), (16, Some("[ACL] signature check failed for account \"reader01\"")));
    let r = c.request(signed(route_req("T"), "nobody01", "reader-secret"));
    assert_eq!((r.code, r.remark.as_deref()), (16, Some("[ACL] no account \"nobody01\"")));
    let r = c.request(signed(route_req("T"), "reader01", "reader-secret").with_ext("topic", "Other"));
    assert_eq!(r.code, 16, "a field changed after signing: {r:?}");
    let r = c.request(signed(put_kv("v"), "reader01", "reader-secret").with_body(b"extra".to_vec()));
    assert_eq!(r.code, 16, "a body added after signing: {r:?}");

    // Writes: a reader may not, an admin may; nothing of a refused write is applied.
    let r = c.request(signed(put_kv("by-reader"), "reader01", "reader-secret"));
    assert_eq!((r.code, r.remark.as_deref()), (16, Some("[ACL] account \"reader01\" is not an admin account")));
    assert_eq!(get_kv(&mut c), None);
    assert_eq!(c.request(signed(put_kv("by-admin"), "admin001", "admin-secret")).code, ResponseCode::SUCCESS);
    assert_eq!(get_kv(&mut c).as_deref(), Some("by-admin"));
    let wipe = new_cmd(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", "b");
    assert_eq!(c.request(signed(wipe.clone(), "reader01", "reader-secret")).code, 16);
    assert_eq!(c.request(signed(wipe, "admin001", "admin-secret")).code, ResponseCode::SUCCESS);
    // An admin account tied to another network is refused here even with the right secret.
    let r = c.request(signed(put_kv("far"), "faraway1", "faraway-secret"));
    assert_eq!(r.remark.as_deref(), Some("[ACL] account \"faraway1\" may not be used from this address"));
    // The config update path is a write like the others.
    let update = new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(b"orderMessageEnable=true\n".to_vec());
    assert_eq!(c.request(update).code, 16);
    assert!(!fx.snapshot().config.order_message_enable);
    assert_eq!(acl_hits(), 9, "every refusal counted");
}

#[test]
fn acl_trusts_the_global_white_list_without_signatures() {
    let AclServer { fx, _accounts: _keep, .. } = with_acl(&ACCOUNTS.replace("10.10.103.*", "127.0.0.*"));
    let mut c = fx.client();
    let broker = support::registration::Broker { cluster: "C", name: "b", addr: "127.0.0.1:10911", id: 0 };
    let r = c.request(broker.register(&["T1", "T2"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    assert_eq!(c.request(route_req("T1")).code, ResponseCode::SUCCESS);
    assert_eq!(c.request(put_kv("trusted")).code, ResponseCode::SUCCESS);
}

/// Waits for a counter to move: the reload thread looks at the file every half second.
fn wait_for_counter(what: &str, counter: impl Fn() -> u64, past: u64) {
    assert!(
        support::eventually(std::time::Duration::from_secs(10), || counter() > past),
        "{what} did not happen within 10 s"
    );
}

#[test]
fn a_changed_account_file_takes_effect_and_a_broken_one_keeps_the_last_good_accounts() {
    let AclServer { fx, file, _accounts: _keep } = with_acl(ACCOUNTS);
    let mut c = fx.client();
    let acl = fx.metrics().acl.clone();
    let newcomer = || signed(route_req("T"), "newcomer", "newcomer-secret");
    assert_eq!(c.request(newcomer()).code, 16);

    let reloads = acl.reloads.load(std::sync::atomic::Ordering::Relaxed);
    let added = format!("{ACCOUNTS}  - accessKey: newcomer\n    secretKey: newcomer-secret\n");
    fs::write(&file, &added).unwrap();
    wait_for_counter("reload", || acl.reloads.load(std::sync::atomic::Ordering::Relaxed), reloads);
    assert_eq!(c.request(newcomer()).code, ResponseCode::TOPIC_NOT_EXIST);

    let failures = acl.reload_failures.load(std::sync::atomic::Ordering::Relaxed);
    fs::write(&file, "accounts:\n  - accessKey: short\n").unwrap();
    wait_for_counter("refused reload", || acl.reload_failures.load(std::sync::atomic::Ordering::Relaxed), failures);
    assert_eq!(c.request(newcomer()).code, ResponseCode::TOPIC_NOT_EXIST, "last good accounts kept");
    let metrics = fx.metrics().render(&fx.snapshot(), 0);
    assert!(metrics.contains("namesrv_acl_reload_failures_total 1"), "{metrics}");
    assert!(metrics.contains("namesrv_acl_accounts 4"), "{metrics}");
}

#[test]
fn acl_without_a_usable_account_file_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yml");
    let mut config = support::inproc::loopback_config(dir.path());
    config.acl_enable = true;
    config.acl_file = missing.to_string_lossy().into_owned();
    let e = server::start(config.clone()).err().expect("no account file, no start").to_string();
    assert!(e.contains("cannot read ACL file") && e.contains("missing.yml"), "{e}");
    fs::write(&missing, "accounts:\n  - accessKey: rocketmq2\n    secretKey: short\n").unwrap();
    let e = server::start(config.clone()).err().expect("broken file, no start").to_string();
    assert!(e.contains("invalid ACL file") && e.contains("longer than six"), "{e}");
    config.acl_file = String::new();
    config.rocketmq_home = None;
    let e = server::start(config).err().expect("no place to look").to_string();
    assert!(e.contains("rocketmqHome"), "{e}");
}

// ---- no silent half-life ----

/// A clock that panics when the writer thread reads it: a stand-in for any bug that panics the writer.
#[derive(Debug)]
struct WriterPanics;

impl namesrv::clock::Clock for WriterPanics {
    fn now_ms(&self) -> i64 {
        if std::thread::current().name() == Some("namesrv-writer") {
            panic!("injected writer panic");
        }
        support::registration::T0
    }
}

const CHILD: &str = "NAMESRV_SECURITY_TEST_CHILD";

/// If the writer panics, the process exits (code 70) instead of serving a frozen snapshot while /health says ok.
///
/// The test re-runs its own binary with only itself selected (`--exact`) and `NAMESRV_SECURITY_TEST_CHILD` set; in
/// that child the same function starts a server whose writer panics at its first expiry scan, then waits. The child
/// must exit by itself, non-zero; if it is still there after 30 s it exits 0 and the parent fails.
#[test]
fn a_panicking_writer_ends_the_process() {
    if std::env::var_os(CHILD).is_some() {
        let dir = tempfile::tempdir().unwrap();
        let config = support::inproc::loopback_config(dir.path());
        let _server = server::start_with_clock(config, std::sync::Arc::new(WriterPanics)).expect("starts");
        std::thread::sleep(std::time::Duration::from_secs(30));
        std::process::exit(0);
    }
    // This test's name as the harness knows it: the module path without the crate.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let me = format!("{module}::a_panicking_writer_ends_the_process");
    let started = std::time::Instant::now();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &me, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(server::EXIT_THREAD_PANICKED), "child stderr:\n{stderr}");
    assert!(stderr.contains("injected writer panic"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "it exited at once, not at the child's timeout");
}

// ---- the audit trail ----

/// The real binary with `auditLogPath`: one line per write, accepted or refused, with peer, account, request,
/// facts and outcome, in a file of its own and not in the main log.
#[test]
fn audit_trail_in_its_own_file() {
    let side = tempfile::tempdir().unwrap();
    let audit = side.path().join("audit.log");
    let accounts = side.path().join("plain_acl.yml");
    fs::write(&accounts, ACCOUNTS).unwrap();
    let ns = support::ours::OurNamesrv::start_with(&[
        ("auditLogPath", &audit.to_string_lossy()),
        ("aclEnable", "true"),
        ("aclFile", &accounts.to_string_lossy()),
    ]);
    let mut c = Client::connect(ns.addr());
    assert_eq!(c.request(signed(put_kv("v1"), "admin001", "admin-secret")).code, ResponseCode::SUCCESS);
    let bad = new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(b"kvConfigPath=/tmp/x\n".to_vec());
    assert_eq!(c.request(signed(bad, "admin001", "admin-secret")).code, ResponseCode::NO_PERMISSION);
    assert_eq!(c.request(signed(put_kv("v2"), "reader01", "reader-secret")).code, ResponseCode::NO_PERMISSION);
    let wipe = new_cmd(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", "broker-a");
    assert_eq!(c.request(signed(wipe, "admin001", "admin-secret")).code, ResponseCode::SUCCESS);

    let text = fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "one line per write:\n{text}");
    let expect = [
        ["account=\"admin001\"", "request=\"PUT_KV_CONFIG\"", "facts=\"namespace=NS key=k\"", "outcome=0"],
        ["account=\"admin001\"", "request=\"UPDATE_NAMESRV_CONFIG\"", "facts=\"keys=kvConfigPath\"", "outcome=16"],
        [
            "account=\"-\"",
            "request=\"PUT_KV_CONFIG\"",
            "facts=\"namespace=NS key=k claimedAccount=reader01\"",
            "outcome=16",
        ],
        ["account=\"admin001\"", "request=\"WIPE_WRITE_PERM_OF_BROKER\"", "facts=\"brokerName=broker-a\"", "outcome=0"],
    ];
    for (line, parts) in lines.iter().zip(expect) {
        assert!(line.contains("audit:") && line.contains("peer=127.0.0.1"), "{line}");
        for p in parts {
            assert!(line.contains(p), "{p} missing in:\n{line}");
        }
    }
    assert!(!text.contains("v1") && !text.contains("admin-secret") && !text.contains("Signature"), "{text}");
    assert!(!ns.log().contains("audit:"), "audit lines go to their own file only:\n{}", ns.log());
}

// ---- authenticationEnabled: ACL 2.0 users learned from the brokers ----

use support::auth_broker::{user, AuthBroker};

const INNER: (&str, &str) = ("inner-ak", "inner-sk-123");

/// An in-process server with ACL 2.0 on, refreshing its users every second.
fn with_users(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(|c| {
        c.authentication_enabled = true;
        c.inner_client_authentication_credentials =
            format!(r#"{{"accessKey":"{}","secretKey":"{}"}}"#, INNER.0, INNER.1);
        c.auth_users_refresh_seconds = 1;
        c.auth_users_path = c.kv_config_path.replace("kvConfig.json", "authUsers.json");
        tweak(c);
    })
}

/// A broker registration from `addr` (so that the name server knows where to ask), signed as `signer`.
fn register_from(addr: SocketAddr, signer: (&str, &str)) -> RemotingCommand {
    let addr: &'static str = Box::leak(addr.to_string().into_boxed_str());
    let b = support::registration::Broker { cluster: "AuthCluster", name: "auth-broker", addr, id: 0 };
    signed(b.register(&["AuthTopic", "AuthTopic2"], 1, 479), signer.0, signer.1)
}

fn remark(r: &RemotingCommand) -> &str {
    r.remark.as_deref().unwrap_or("")
}

/// Asks `req` (built fresh each time) until it is answered `code`, bounded by a few refresh intervals (the users
/// change on a timer of the server's); the last answer either way, for the caller to assert on.
fn until_answered(c: &mut Client, code: i32, mut req: impl FnMut() -> RemotingCommand) -> RemotingCommand {
    let mut last = c.request(req());
    support::eventually(std::time::Duration::from_secs(10), || {
        last.code == code || {
            last = c.request(req());
            last.code == code
        }
    });
    last
}

use std::net::SocketAddr;

#[test]
fn acl2_users_learned_from_the_brokers_sign_reads_and_only_super_users_write() {
    let broker = AuthBroker::start(
        INNER,
        &[user("carol", "carol-pw", "Normal", "enable"), user("root", "root-pw", "Super", "enable")],
    );
    let srv = with_users(|_| {});
    let mut c = Client::connect(srv.local_addr());
    // Nobody signs: refused in the broker's words. The inner credential registers before any user is known.
    let r = c.request(route_req("AuthTopic"));
    assert_eq!((r.code, remark(&r)), (ResponseCode::NO_PERMISSION, "username cannot be null."));
    let r = c.request(register_from(broker.addr, INNER));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{}", remark(&r));
    // Within a refresh, carol reads; a Normal user may not write, a Super user may.
    let r = until_answered(&mut c, ResponseCode::SUCCESS, || signed(route_req("AuthTopic"), "carol", "carol-pw"));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{}", remark(&r));
    let r = c.request(signed(route_req("AuthTopic"), "carol", "wrong-pw"));
    assert_eq!((r.code, remark(&r)), (ResponseCode::NO_PERMISSION, "check signature failed."));
    let r = c.request(signed(put_kv("v1"), "carol", "carol-pw"));
    assert_eq!(r.code, ResponseCode::NO_PERMISSION);
    assert!(remark(&r).starts_with("User:carol is not a Super user"), "{}", remark(&r));
    assert_eq!(c.request(signed(put_kv("v1"), "root", "root-pw")).code, ResponseCode::SUCCESS);
    // Disabled on the brokers: refused by name within a refresh; deleted: not found.
    broker.set_users(&[user("carol", "carol-pw", "Normal", "disable"), user("root", "root-pw", "Super", "enable")]);
    let r = until_answered(&mut c, ResponseCode::NO_PERMISSION, || signed(route_req("AuthTopic"), "carol", "carol-pw"));
    assert_eq!(remark(&r), "User:carol is disabled.");
    broker.set_users(&[user("root", "root-pw", "Super", "enable")]);
    let r = until_remark(&mut c, "User:carol is not found.", || signed(route_req("AuthTopic"), "carol", "carol-pw"));
    assert_eq!(remark(&r), "User:carol is not found.");
    // The list is kept on disk, the owner's alone, and never served: not in 319, not over HTTP.
    use std::os::unix::fs::PermissionsExt;
    let saved = Path::new(&srv.config.auth_users_path);
    assert_eq!(fs::metadata(saved).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(fs::read_to_string(saved).unwrap().contains("root-pw"));
    let config = c.request(signed(new_cmd(RequestCode::GET_NAMESRV_CONFIG), "root", "root-pw"));
    let text = String::from_utf8_lossy(&config.body);
    assert!(!text.contains("inner-sk-123") && !text.contains("root-pw"), "{text}");
    assert!(srv.metrics().acl.user_refreshes.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    // Every refusal counted by its reason.
    let refused = |reason: &str| {
        let i = namesrv::test_support::metrics::REFUSAL_REASONS.iter().position(|r| *r == reason).unwrap();
        srv.metrics().acl.refusals[i].load(std::sync::atomic::Ordering::Relaxed)
    };
    for reason in ["no_access_key", "signature", "not_admin", "disabled", "unknown_account"] {
        assert!(refused(reason) >= 1, "{reason}: {}", refused(reason));
    }
    assert_eq!(refused("address"), 0);
}

/// Like `until_answered`, for a remark.
fn until_remark(c: &mut Client, want: &str, mut req: impl FnMut() -> RemotingCommand) -> RemotingCommand {
    let mut last = c.request(req());
    support::eventually(std::time::Duration::from_secs(10), || {
        remark(&last) == want || {
            last = c.request(req());
            remark(&last) == want
        }
    });
    last
}

#[test]
fn acl2_keeps_the_last_good_users_when_brokers_fail_and_across_a_restart() {
    let mut broker = AuthBroker::start(INNER, &[user("root", "root-pw", "Super", "enable")]);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("authUsers.json");
    let path = saved.display().to_string();
    let srv = with_users(|c| c.auth_users_path = path.clone());
    let mut c = Client::connect(srv.local_addr());
    let r = c.request(register_from(broker.addr, INNER));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{}", remark(&r));
    let read = || signed(route_req("AuthTopic"), "root", "root-pw");
    assert_eq!(until_answered(&mut c, ResponseCode::SUCCESS, read).code, ResponseCode::SUCCESS);
    // The broker goes away: refreshes fail, counted, and root stays known.
    let failures = || srv.metrics().acl.user_refresh_failures.load(std::sync::atomic::Ordering::Relaxed);
    broker.stop();
    assert!(support::eventually(std::time::Duration::from_secs(10), || failures() >= 2), "failures {}", failures());
    assert_eq!(c.request(read()).code, ResponseCode::SUCCESS, "the last good list stays");
    drop(c);
    drop(srv);
    // A restart with no broker up still knows every user.
    let srv = with_users(|c| c.auth_users_path = path.clone());
    let mut c = Client::connect(srv.local_addr());
    // The routes are gone with the process; the users are not.
    let cluster = || signed(new_cmd(RequestCode::GET_BROKER_CLUSTER_INFO), "root", "root-pw");
    assert_eq!(c.request(cluster()).code, ResponseCode::SUCCESS, "root, from {path}");
    let r = c.request(signed(route_req("AuthTopic"), "carol", "x"));
    assert_eq!(remark(&r), "User:carol is not found.");
}

#[test]
fn acl2_a_wrong_inner_credential_locks_nobody_out_and_brokers_that_disagree_give_the_narrowest_view() {
    // B1 accepts only another credential: it refuses us. B2 and B3 answer, and disagree about two users.
    let b1 = AuthBroker::start(("someone-else", "other-secret"), &[user("root", "root-pw", "Super", "enable")]);
    let b2 = AuthBroker::start(
        INNER,
        &[
            user("root", "root-pw", "Super", "enable"),
            user("dave", "d1", "Normal", "enable"),
            user("erin", "e", "Super", "enable"),
        ],
    );
    let b3 = AuthBroker::start(
        INNER,
        &[
            user("root", "root-pw", "Super", "enable"),
            user("dave", "d2", "Normal", "enable"),
            user("erin", "e", "Normal", "enable"),
        ],
    );
    let srv = with_users(|_| {});
    let mut c = Client::connect(srv.local_addr());
    for (i, b) in [&b1, &b2, &b3].iter().enumerate() {
        let addr: &'static str = Box::leak(b.addr.to_string().into_boxed_str());
        let name: &'static str = Box::leak(format!("auth-broker-{i}").into_boxed_str());
        let reg = support::registration::Broker { cluster: "AuthCluster", name, addr, id: 0 };
        assert_eq!(
            c.request(signed(reg.register(&["AuthTopic", "AuthTopic2"], 1, 479), INNER.0, INNER.1)).code,
            ResponseCode::SUCCESS
        );
    }
    let read = |who: &str, pw: &str| signed(route_req("AuthTopic"), who, pw);
    assert_eq!(until_answered(&mut c, ResponseCode::SUCCESS, || read("root", "root-pw")).code, ResponseCode::SUCCESS);
    assert!(support::eventually(std::time::Duration::from_secs(10), || b1
        .refused
        .load(std::sync::atomic::Ordering::Relaxed)
        >= 1));
    // Two passwords for dave: neither is trusted. erin is Super on one broker and Normal on the other: Normal.
    assert_eq!(remark(&c.request(read("dave", "d1"))), "User:dave is disabled.");
    assert_eq!(remark(&c.request(read("dave", "d2"))), "User:dave is disabled.");
    assert_eq!(c.request(read("erin", "e")).code, ResponseCode::SUCCESS);
    let r = c.request(signed(put_kv("x"), "erin", "e"));
    assert!(remark(&r).starts_with("User:erin is not a Super user"), "{}", remark(&r));
    assert_eq!(srv.metrics().acl.user_disagreements.load(std::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn acl2_and_acl1_together_or_without_an_inner_credential_do_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut both = Config { authentication_enabled: true, acl_enable: true, ..Config::default() };
    both.kv_config_path = dir.path().join("kv.json").display().to_string();
    let e = server::start(both.clone()).err().expect("refused").to_string();
    assert!(e.contains("choose one"), "{e}");
    let no_inner = Config { acl_enable: false, ..both.clone() };
    let e = server::start(no_inner).err().expect("refused").to_string();
    assert!(e.contains("innerClientAuthenticationCredentials"), "{e}");
    let bad = Config { acl_enable: false, inner_client_authentication_credentials: "{oops".into(), ..both };
    let e = server::start(bad).err().expect("refused").to_string();
    assert!(e.contains("innerClientAuthenticationCredentials is not JSON"), "{e}");
}

/// A secret a `-c` file holds (a broker's `secretKey`, an ACL 2.0 credential) is not served by
/// GET_NAMESRV_CONFIG, where Java would list every key of the file; the other keys of the file still are.
#[test]
fn get_namesrv_config_never_serves_a_secret() {
    let srv = InProc::start(|c| {
        c.extra.insert("secretKey".into(), "s3cret-value".into());
        c.extra.insert("brokerPassword".into(), "pw-value".into());
        c.extra.insert("someoneElsesKey".into(), "kept".into());
    });
    let mut c = Client::connect(srv.local_addr());
    let r = c.request(new_cmd(RequestCode::GET_NAMESRV_CONFIG));
    assert_eq!(r.code, ResponseCode::SUCCESS);
    let text = String::from_utf8_lossy(&r.body);
    assert!(!text.contains("s3cret-value") && !text.contains("secretKey"), "{text}");
    assert!(!text.contains("pw-value"), "{text}");
    assert!(text.contains("someoneElsesKey=kept\n"), "{text}");
}
