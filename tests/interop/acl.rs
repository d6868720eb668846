//! AccessKey/Signature authentication (`aclEnable=true`, a 4.x `plain_acl.yml`) with real, unmodified RocketMQ
//! peers: a Java 5.5.0 broker (which never signs) registers from a white-listed address; Java clients 5.5.0 and
//! 4.9.8 with the stock `AclClientRPCHook`, mqadmin 5.5.0 with `conf/tools.yml` and the Go client with
//! `primitive.Credentials` sign what they send, and are let in or refused by their account. Needs Java 17+, Maven
//! and Go (the peers are fetched as for the other interop tests; see `docs/interop.md`).
//!
//! Everything runs on one machine, so the white list must tell the broker from the clients by address. Our server
//! listens dual-stack (`bindAddress=::`) and white-lists `127.0.0.1`:
//! * the broker is given `namesrvAddr=127.0.0.1:PORT`, so it connects over IPv4 and our server sees the IPv4-mapped
//!   peer `::ffff:127.0.0.1`, which it matches as `127.0.0.1`: white-listed, no keys needed;
//! * every client is given `[::1]:PORT` and so connects from `::1`, which the white list does not match: it needs a
//!   valid signature. The Java clients 4.9.8 and 5.5.0 and mqadmin 5.5.0 (the host part goes to
//!   `InetAddress.getByName`, which takes the bracketed literal) and the Go client (whose address check accepts
//!   IPv6) all take the bracketed IPv6 address as it is.
//!
//! Other loopback addresses are no way out: a connection to 127.0.0.2 still leaves from 127.0.0.1 (Linux picks the
//! route's source address), and none of these peers can be told which source address to bind. Nor may the broker
//! sign (5.x `innerClientAuthenticationCredentials`): 4.x brokers cannot, so the white list is what must work.
//!
//! The test's own raw probes connect to `127.0.0.1` (white-listed) to poll routes, and to `[::1]` unsigned to show
//! that the white list really is what let the broker in. Tests take a lock and run one after another, each with its
//! own server and broker. Ignored: run with `cargo test -- --ignored`.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::broker::{cluster_info, route, wait_for, wait_registered, Broker};
use support::client::Client;
use support::gopeer;
use support::interop::{kv_get, perms, serial, step};
use support::java::{JAVA_49, JAVA_5X};
use support::mqadmin::{expected_bodies, JavaClient, MqAdmin};
use support::ours::OurNamesrv;
use support::proc::{Output, RetryBudget};
use support::registration;

/// A plain account: may read (routes, cluster info, KV), may not change anything.
const READER: (&str, &str) = ("aclReader", "reader-Secret-4711");
/// An admin account: may also change state (KV, write permissions, registrations, ...).
const ADMIN: (&str, &str) = ("aclAdmin", "admin-Secret-0815");
/// An admin account that may only be used from 10.99.0.*, i.e. never by the peers here.
const FENCED: (&str, &str) = ("aclFenced", "fenced-Secret-2342");
const WRONG_SECRET: &str = "not-the-Secret-9999";
const SECRETS: [&str; 4] = [READER.1, ADMIN.1, FENCED.1, WRONG_SECRET];
/// ResponseCode.NO_PERMISSION.
const NO_PERMISSION: i32 = 16;

/// The account file, in the 4.x `plain_acl.yml` format.
fn plain_acl_yml() -> String {
    format!(
        "globalWhiteRemoteAddresses:\n  - 127.0.0.1\n\
         accounts:\n\
         \x20 - accessKey: {}\n    secretKey: {}\n    admin: false\n\
         \x20 - accessKey: {}\n    secretKey: {}\n    admin: true\n\
         \x20 - accessKey: {}\n    secretKey: {}\n    whiteRemoteAddress: 10.99.0.*\n    admin: true\n",
        READER.0, READER.1, ADMIN.0, ADMIN.1, FENCED.0, FENCED.1
    )
}

/// Our server with ACL on, and a Java 5.5.0 broker registered with it from the white-listed 127.0.0.1.
struct AclWorld {
    t0: Instant,
    /// Holds `plain_acl.yml`; lives as long as the server.
    _acl_dir: tempfile::TempDir,
    ns: OurNamesrv,
    broker: Broker,
}

impl AclWorld {
    fn start(tag: &str) -> AclWorld {
        let t0 = Instant::now();
        let acl_dir = tempfile::Builder::new().prefix("interop-acl-").tempdir().expect("temp dir");
        let acl_file = acl_dir.path().join("plain_acl.yml");
        std::fs::write(&acl_file, plain_acl_yml()).expect("write plain_acl.yml");
        let acl_path = acl_file.display().to_string();
        // `bindAddress` comes after the helper's own `127.0.0.1`; the later key wins.
        let ns = OurNamesrv::start_with(&[("aclEnable", "true"), ("aclFile", &acl_path), ("bindAddress", "::")]);
        step(t0, &format!("our server up on [::]:{} with aclEnable=true", ns.port()));
        let broker = Broker::start(
            JAVA_5X,
            &format!("AclCluster{tag}"),
            &format!("acl-broker-{tag}"),
            &format!("127.0.0.1:{}", ns.port()),
        );
        let took = wait_registered(ns.addr(), &broker, Duration::from_secs(60));
        step(t0, &format!("broker {JAVA_5X} registered from 127.0.0.1 without keys ({took:?} after boot)"));
        AclWorld { t0, _acl_dir: acl_dir, ns, broker }
    }

    /// The address every client is given: IPv6 loopback, not white-listed.
    fn client_ns(&self) -> String {
        format!("[::1]:{}", self.ns.port())
    }

    fn v6(&self) -> SocketAddr {
        SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], self.ns.port()))
    }

    fn step(&self, what: &str) {
        step(self.t0, what);
    }

    /// Our log and the broker's, for failure messages.
    fn logs(&self) -> String {
        format!("{}\n{}", self.ns.log(), self.broker.log())
    }

    /// Waits until our server has `topic`'s route (asked from the white-listed 127.0.0.1).
    fn wait_route(&self, topic: &str) -> String {
        wait_for(
            &format!("the route of {topic}"),
            Duration::from_secs(30),
            || route(self.ns.addr(), topic),
            || self.logs(),
        )
        .0
    }
}

/// Asserts an ACL refusal: NO_PERMISSION with a remark starting with `[ACL]` that echoes no secret.
fn assert_refusal(code: i32, remark: &str, what: &str) {
    assert_eq!(code, NO_PERMISSION, "{what}: expected NO_PERMISSION (16), got {code} {remark:?}");
    assert!(remark.starts_with("[ACL]"), "{what}: the remark should start with [ACL]: {remark:?}");
    for secret in SECRETS {
        assert!(!remark.contains(secret), "{what}: the remark echoes a secret: {remark:?}");
    }
    eprintln!("         refused as expected: {what}: {code} {remark}");
}

/// An unsigned request from `::1` (not white-listed).
fn unsigned_from_v6(
    world: &AclWorld,
    cmd: impl FnOnce(&mut Client) -> namesrv::protocol::RemotingCommand,
) -> (i32, String) {
    let mut c = Client::connect(world.v6());
    let req = cmd(&mut c);
    let r = c.request(req);
    (r.code, r.remark.unwrap_or_default())
}

/// `AclInteropClient route` with these credentials: `Ok(queues)` or `Err((code, remark))` when the name server
/// refused the lookup. Panics on any other failure.
fn java_route(
    client: &JavaClient,
    ns: &str,
    topic: &str,
    (ak, sk): (&str, &str),
) -> Result<Vec<String>, (i32, String)> {
    let out = client.run(&["route", ns, topic, ak, sk], Duration::from_secs(120));
    if let Some(line) = out.stdout.lines().find_map(|l| l.strip_prefix("REFUSED ")) {
        assert_eq!(out.status.code(), Some(3), "Java {} route: {out:?}", client.version);
        let (code, remark) = line.split_once(' ').unwrap_or((line, ""));
        return Err((code.parse().expect("code"), remark.to_string()));
    }
    out.expect_ok(&format!("Java {} route lookup as {ak}", client.version));
    Ok(out.stdout.lines().filter(|l| l.starts_with("QUEUE ")).map(str::to_string).collect())
}

/// `AclInteropClient produce`: `count` messages `PREFIX-i`, each sent once.
fn java_produce(client: &JavaClient, ns: &str, topic: &str, count: usize, prefix: &str, creds: (&str, &str)) -> Output {
    client.run(&["produce", ns, topic, &count.to_string(), prefix, creds.0, creds.1], Duration::from_secs(120))
}

/// `AclInteropClient consume` in a new group: all of `PREFIX-0 … PREFIX-(count−1)` must arrive within 90 s.
fn java_consume_all(client: &JavaClient, ns: &str, topic: &str, group: &str, count: usize, prefix: &str) {
    let out = client.run(
        &["consume", ns, topic, group, &count.to_string(), prefix, "90", READER.0, READER.1],
        Duration::from_secs(150),
    );
    out.expect_ok(&format!("Java {} push consumer as {}", client.version, READER.0));
    let mut got: Vec<String> = out.stdout.lines().filter_map(|l| l.strip_prefix("RECV ")).map(str::to_string).collect();
    got.sort();
    assert_eq!(got, expected_bodies(prefix, count), "Java {} consumer:\n{}", client.version, out.stdout);
}

/// The broker gets in through the white list, unsigned (and unregisters the same way), while unsigned requests from
/// `::1` are refused; signed Java clients 5.5.0 and 4.9.8 of a plain account read routes, send and consume; a wrong
/// secret, an unknown key, and a right secret from outside the account's own white list are refused with
/// NO_PERMISSION.
#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients, Go client"]
fn java_broker_white_listed_java_clients_signed() {
    const N: usize = 10;
    let _serial = serial();
    let mut world = AclWorld::start("J");
    let ns = world.client_ns();
    let topic = "AclJavaTopic";
    let broker_addr = world.broker.addr_string();

    // The broker's registration really went through the white list: from ::1, the same requests unsigned are
    // refused, and an unsigned REGISTER_BROKER from there changes nothing.
    let info = cluster_info(world.ns.addr()).expect("cluster info from 127.0.0.1");
    assert!(info.contains(&broker_addr), "cluster info lacks the broker: {info}");
    let (code, remark) = unsigned_from_v6(&world, |c| c.cmd(106));
    assert_refusal(code, &remark, "unsigned GET_BROKER_CLUSTER_INFO from ::1");
    let (code, remark) = unsigned_from_v6(&world, |c| c.cmd(105).with_ext("topic", "TBW102"));
    assert_refusal(code, &remark, "unsigned GET_ROUTEINFO_BY_TOPIC from ::1");
    let intruder = registration::Broker { cluster: "AclClusterJ", name: "intruder", addr: "127.0.0.1:10911", id: 0 };
    let (code, remark) = unsigned_from_v6(&world, |_| intruder.register(&["IntruderTopic"], 1, 513));
    assert_refusal(code, &remark, "unsigned REGISTER_BROKER from ::1");
    let info = cluster_info(world.ns.addr()).expect("cluster info");
    assert!(!info.contains("intruder"), "a refused registration was applied: {info}");
    assert_eq!(route(world.ns.addr(), "IntruderTopic"), None, "a refused registration was applied");
    world.step("unsigned requests from ::1 refused (NO_PERMISSION, [ACL] remark), nothing applied");

    // Java 5.5.0, plain (non-admin) account. The topic is created by the broker on the first send (the producer's
    // signed lookup of the topic finds nothing, its signed lookup of TBW102 does).
    let java5 = JavaClient::acl(JAVA_5X);
    let out = java_produce(&java5, &ns, topic, N, "j5", READER);
    out.expect_sent_within(&format!("Java {JAVA_5X} producer as {}", READER.0), RetryBudget::NONE);
    assert_eq!(out.stdout.lines().filter(|l| l.starts_with("SENT ")).count(), N, "producer:\n{}", out.stdout);
    world.wait_route(topic);
    world.step(&format!("Java {JAVA_5X} producer ({}) sent {N}; the broker registered the topic", READER.0));
    let queues = java_route(&java5, &ns, topic, READER)
        .unwrap_or_else(|(code, remark)| panic!("signed route lookup refused: {code} {remark}\n{}", world.logs()));
    let broker_name = world.broker.name.clone();
    assert!(!queues.is_empty(), "no queues in the route");
    assert!(queues.iter().all(|q| q.starts_with(&format!("QUEUE {broker_name} "))), "route: {queues:?}");
    java_consume_all(&java5, &ns, topic, "acl_j5_cg", N, "j5");
    world.step(&format!(
        "Java {JAVA_5X}: signed route lookup ({} queues), push consumer received all {N}",
        queues.len()
    ));

    // Wrong secret: the route lookup is refused, and so the first send finds no route.
    let (code, remark) = java_route(&java5, &ns, topic, (READER.0, WRONG_SECRET)).expect_err("wrong secret accepted");
    assert_refusal(code, &remark, "route lookup with a wrong secret");
    let out = java_produce(&java5, &ns, topic, 1, "j5bad", (READER.0, WRONG_SECRET));
    assert!(
        !out.success() && out.stdout.contains("No route info"),
        "a producer with a wrong secret should fail with \"No route info\": {out:?}"
    );
    // Unknown access key; and a right secret from outside the account's own white list.
    let (code, remark) = java_route(&java5, &ns, topic, ("noSuchKey", READER.1)).expect_err("unknown key accepted");
    assert_refusal(code, &remark, "route lookup with an unknown access key");
    let (code, remark) = java_route(&java5, &ns, topic, FENCED).expect_err("fenced account accepted from ::1");
    assert_refusal(code, &remark, "route lookup of an account white-listed for 10.99.0.* only");
    world.step("wrong secret, unknown key, account from outside its white list: refused; producer: No route info");

    // Java 4.9.8 (AclClientRPCHook from rocketmq-acl 4.9.8), same account.
    let java49 = JavaClient::acl(JAVA_49);
    let queues49 = java_route(&java49, &ns, topic, READER).unwrap_or_else(|(code, remark)| {
        panic!("4.9.8 signed route lookup refused: {code} {remark}\n{}", world.logs())
    });
    assert_eq!(queues49, queues, "4.9.8 and 5.5.0 clients see different routes");
    let out = java_produce(&java49, &ns, topic, N, "j49", READER);
    out.expect_sent_within(&format!("Java {JAVA_49} producer as {}", READER.0), RetryBudget::NONE);
    java_consume_all(&java49, &ns, topic, "acl_j49_cg", N, "j49");
    let (code, remark) = java_route(&java49, &ns, topic, (READER.0, WRONG_SECRET)).expect_err("wrong secret accepted");
    assert_refusal(code, &remark, "4.9.8 route lookup with a wrong secret");
    world.step(&format!("Java {JAVA_49}: signed route, sent and received {N}; wrong secret refused"));

    // The broker's UNREGISTER_BROKER (SIGTERM), unsigned from the white list, is applied.
    world.broker.shutdown();
    wait_for(
        "the broker's unregistration",
        Duration::from_secs(15),
        || cluster_info(world.ns.addr()).filter(|i| !i.contains(&broker_addr)),
        || world.ns.log(),
    );
    world.step("broker shut down: its unsigned UNREGISTER_BROKER from 127.0.0.1 was applied");
}

/// mqadmin 5.5.0 signs with `$ROCKETMQ_HOME/conf/tools.yml`. The admin account writes KV config and wipes
/// and adds write permission; the plain account reads but is refused both writes, which change nothing.
#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients, Go client"]
fn mqadmin_admin_account_writes_plain_account_refused() {
    let _serial = serial();
    let world = AclWorld::start("A");
    let ns = world.client_ns();
    let broker_name = world.broker.name.clone();
    let admin = MqAdmin::new(JAVA_5X);
    let has_write = |json: &str| perms(json).iter().all(|p| p & 2 != 0);
    let no_write = |json: &str| perms(json).iter().all(|p| p & 2 == 0);
    let tbw = || route(world.ns.addr(), "TBW102").expect("TBW102 route");
    assert!(!perms(&tbw()).is_empty() && has_write(&tbw()), "TBW102 route before: {}", tbw());

    admin.set_credentials(Some(ADMIN));
    let out = admin.ok(&ns, &["updateKvConfig", "-s", "AclNS", "-k", "owner", "-v", "admin"]);
    assert!(out.contains("success"), "updateKvConfig:\n{out}");
    assert_eq!(kv_get(world.ns.addr(), "AclNS", "owner").as_deref(), Some("admin"));
    world.step("mqadmin as the admin account: updateKvConfig applied");

    admin.set_credentials(Some(READER));
    let out = admin.run(&ns, &["updateKvConfig", "-s", "AclNS", "-k", "owner", "-v", "reader"]);
    assert_mqadmin_refused(&out, "updateKvConfig as the plain account");
    assert_eq!(kv_get(world.ns.addr(), "AclNS", "owner").as_deref(), Some("admin"), "a refused write was applied");
    let out = admin.run(&ns, &["wipeWritePerm", "-b", &broker_name]);
    assert!(out.stdout.contains("Failed"), "wipeWritePerm as the plain account should fail: {out:?}");
    assert_mqadmin_refused(&out, "wipeWritePerm as the plain account");
    assert!(has_write(&tbw()), "a refused wipeWritePerm was applied: {}", tbw());
    // Reads are fine for the plain account.
    let out = admin.ok(&ns, &["topicRoute", "-t", "TBW102"]);
    assert!(out.contains(&broker_name), "topicRoute as the plain account:\n{out}");
    world.step("mqadmin as the plain account: updateKvConfig and wipeWritePerm refused, topicRoute works");

    admin.set_credentials(None);
    let out = admin.run(&ns, &["updateKvConfig", "-s", "AclNS", "-k", "owner", "-v", "nobody"]);
    assert_mqadmin_refused(&out, "updateKvConfig without tools.yml");
    assert_eq!(kv_get(world.ns.addr(), "AclNS", "owner").as_deref(), Some("admin"), "a refused write was applied");
    world.step("mqadmin without credentials: updateKvConfig refused");

    admin.set_credentials(Some(ADMIN));
    let out = admin.ok(&ns, &["wipeWritePerm", "-b", &broker_name]);
    assert!(out.contains("] OK, "), "wipeWritePerm as the admin account:\n{out}");
    assert!(no_write(&tbw()), "wipeWritePerm not applied: {}", tbw());
    let out = admin.ok(&ns, &["addWritePerm", "-b", &broker_name]);
    assert!(out.contains("] OK, "), "addWritePerm as the admin account:\n{out}");
    assert!(has_write(&tbw()), "addWritePerm not applied: {}", tbw());
    world.step("mqadmin as the admin account: wipeWritePerm, addWritePerm applied");
}

/// mqadmin printed the name server's NO_PERMISSION refusal (`CODE: 16  DESC: [ACL]…` in the exception it prints).
fn assert_mqadmin_refused(out: &Output, what: &str) {
    let text = format!("{}\n{}", out.stdout, out.stderr);
    assert!(
        text.contains("CODE: 16") && text.contains("DESC: [ACL]"),
        "{what}: no NO_PERMISSION [ACL] refusal:\n{out:?}"
    );
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what}: a secret was echoed:\n{out:?}");
    }
}

/// The Go client (rocketmq-client-go/v2 v2.1.2) with `primitive.Credentials`: a producer and a push consumer
/// of the plain account look routes up signed, send and receive; a producer with a wrong secret is refused.
#[test]
#[ignore = "real peer: Java 5.5.0 broker, mqadmin and clients, Go client"]
fn go_client_signed_routes() {
    const N: usize = 10;
    let _serial = serial();
    let bin = gopeer::binary();
    let world = AclWorld::start("G");
    world.step(&format!("Go peer built: {}", bin.display()));
    let ns = world.client_ns();
    let topic = "AclGoTopic";
    let creds = ["-ak", READER.0, "-sk", READER.1];
    let n = N.to_string();

    // A new topic: the producer's signed lookups (topic, then TBW102) lead it to the broker, which creates it.
    let mut args = vec!["-t", topic, "-count", &n, "-prefix", "go", "-attempts", "1"];
    args.extend(creds);
    let out = gopeer::ok("produce", &ns, &args, Duration::from_secs(60));
    assert_eq!(out.lines().filter(|l| l.starts_with("SENT ")).count(), N, "Go producer:\n{out}");
    world.wait_route(topic);
    world.step(&format!("Go producer ({}) sent {N}; the broker registered the topic", READER.0));

    let mut args = vec!["-t", topic, "-g", "acl_go_cg", "-count", &n, "-prefix", "go", "-timeout", "90s"];
    args.extend(creds);
    let out = gopeer::ok("consume", &ns, &args, Duration::from_secs(90));
    let mut got: Vec<String> = out.lines().filter_map(|l| l.strip_prefix("RECV ")).map(str::to_string).collect();
    got.sort();
    assert_eq!(got, expected_bodies("go", N), "Go push consumer:\n{out}");
    world.step(&format!("Go push consumer ({}) received all {N}", READER.0));

    // Wrong secret: one attempt; the client logs the name server's answer and finds no route.
    let args = ["-t", topic, "-count", "1", "-prefix", "gobad", "-attempts", "1", "-ak", READER.0, "-sk", WRONG_SECRET];
    let out = gopeer::run_peer("produce", &ns, &args, Duration::from_secs(30));
    let text = format!("{}\n{}", out.stdout, out.stderr);
    assert!(!out.success() && out.stdout.contains("route info not found"), "Go producer with a wrong secret: {out:?}");
    assert!(text.contains("CODE: 16") && text.contains("DESC: [ACL]"), "no NO_PERMISSION [ACL] answer logged: {out:?}");
    assert!(!text.contains(READER.1), "the secret was echoed: {out:?}");
    world.step("Go producer with a wrong secret: route lookups refused (CODE: 16 [ACL]), send failed");
}
