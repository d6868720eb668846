//! TLS on the shared port (`tls.server.mode`, §8.1 of the reference): the first byte of a connection decides
//! between TLS and plain remoting, and the mode closes what it does not allow — as Java's `TlsModeHandler` does.
//! In-process servers with a rustls client; with `-- --ignored`, also real Java peers (`mqadmin`, a Java
//! client) with `-Dtls.enable=true` against a server in enforcing mode.

use crate::support;

use std::time::Duration;

use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};

use support::client::Client;
use support::inproc::InProc;
use support::registration::{new_cmd, Broker};
use support::tls::{trust_anything, trust_only, write_identity, TlsClient};

const BROKER: Broker = Broker { cluster: "TlsCluster", name: "broker-tls", addr: "127.0.0.1:10911", id: 0 };

/// An in-process server (the fixture's `tls.config.file` points nowhere, so a file on this machine cannot change
/// the test).
fn start(tweak: impl FnOnce(&mut Config)) -> InProc {
    InProc::start(tweak)
}

/// A TLS client that trusts any certificate.
fn tls(f: &InProc) -> TlsClient {
    TlsClient::connect(f.addr(), trust_anything()).expect("TLS handshake")
}

fn route(topic: &str) -> RemotingCommand {
    new_cmd(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

fn body_text(r: &RemotingCommand) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn permissive_is_the_default_and_serves_tls_and_plain_clients() {
    let f = start(|_| {});
    let mut plain = Client::connect(f.addr());
    let r = plain.request(BROKER.register(&["TopicTls", "TopicTls2"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");

    let mut tls = tls(&f);
    let reply = tls.request(&route("TopicTls")).expect("route over TLS");
    assert_eq!(reply.code, ResponseCode::SUCCESS, "{reply:?}");
    assert!(body_text(&reply).contains("broker-tls"), "{}", body_text(&reply));
    // The same connection keeps working, and plain clients are still served.
    assert_eq!(tls.request(&route("NoSuchTopic")).unwrap().code, ResponseCode::TOPIC_NOT_EXIST);
    assert_eq!(plain.request(route("TopicTls")).code, ResponseCode::SUCCESS);
}

#[test]
fn enforcing_closes_plain_clients_and_serves_tls() {
    let f = start(|c| c.tls_server_mode = "enforcing".into());
    let mut plain = Client::connect(f.addr());
    let mut frame = bytes::BytesMut::new();
    namesrv::protocol::frame::encode(&route("TopicTls"), &mut frame);
    plain.send_raw(&frame);
    plain.expect_closed(Duration::from_secs(5));

    let mut tls = tls(&f);
    assert_eq!(tls.request(&BROKER.register(&["TopicTls", "TopicTls2"], 1, 513)).unwrap().code, ResponseCode::SUCCESS);
    let reply = tls.request(&route("TopicTls")).unwrap();
    assert_eq!(reply.code, ResponseCode::SUCCESS);
    assert!(body_text(&reply).contains("broker-tls"));
}

#[test]
fn disabled_closes_tls_clients_and_serves_plain() {
    let f = start(|c| c.tls_server_mode = "disabled".into());
    let err = TlsClient::connect(f.addr(), trust_anything()).err().expect("the handshake must fail");
    assert!(!err.contains("Resource temporarily unavailable") && !err.contains("timed out"), "not closed: {err}");
    let mut plain = Client::connect(f.addr());
    assert_eq!(plain.request(route("NoSuchTopic")).code, ResponseCode::TOPIC_NOT_EXIST);
}

/// Certificate and key from PEM files, verified by the client; frames far larger than one TLS record (16 KiB) and
/// than rustls's send buffer (64 KiB) in both directions.
#[test]
fn pem_certificate_is_verified_and_large_frames_cross_intact() {
    let certs = tempfile::tempdir().unwrap();
    let id = write_identity(certs.path());
    std::fs::create_dir(certs.path().join("other")).unwrap();
    let other = write_identity(&certs.path().join("other"));
    let f = start(|c| {
        c.tls_server_mode = "enforcing".into();
        c.tls_test_mode_enable = false;
        c.tls_server_cert_path = id.cert_path.to_string_lossy().into_owned();
        c.tls_server_key_path = id.key_path.to_string_lossy().into_owned();
    });
    // A client trusting another certificate is refused: the server really serves the configured one.
    assert!(TlsClient::connect(f.addr(), trust_only(other.cert, None)).is_err());

    let mut tls = TlsClient::connect(f.addr(), trust_only(id.cert, None)).expect("verified handshake");
    let topics: Vec<String> = (0..5000).map(|i| format!("tls-large-frame-topic-{i:05}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let register = BROKER.register(&names, 1, 513);
    assert!(register.body.len() > 256 * 1024, "request body is only {} bytes", register.body.len());
    assert_eq!(tls.request(&register).unwrap().code, ResponseCode::SUCCESS);

    let all = tls.request(&new_cmd(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).unwrap();
    assert_eq!(all.code, ResponseCode::SUCCESS);
    assert!(all.body.len() > 64 * 1024, "reply body is only {} bytes", all.body.len());
    let text = body_text(&all);
    assert!(topics.iter().all(|t| text.contains(&format!("\"{t}\""))), "a topic is missing from the reply");
}

/// `tls.server.need.client.auth=require` with `tls.server.authClient=true`: only a client whose certificate is in
/// `tls.server.trustCertPath` is served.
#[test]
fn required_client_certificates_are_checked_against_the_trusted_ones() {
    let certs = tempfile::tempdir().unwrap();
    let (server_dir, client_dir, stranger_dir) =
        (certs.path().join("server"), certs.path().join("client"), certs.path().join("stranger"));
    for d in [&server_dir, &client_dir, &stranger_dir] {
        std::fs::create_dir(d).unwrap();
    }
    let (server_id, client_id, stranger) =
        (write_identity(&server_dir), write_identity(&client_dir), write_identity(&stranger_dir));
    let f = start(|c| {
        c.tls_server_mode = "enforcing".into();
        c.tls_test_mode_enable = false;
        c.tls_server_cert_path = server_id.cert_path.to_string_lossy().into_owned();
        c.tls_server_key_path = server_id.key_path.to_string_lossy().into_owned();
        c.tls_server_need_client_auth = "require".into();
        c.tls_server_auth_client = true;
        c.tls_server_trust_cert_path = client_id.cert_path.to_string_lossy().into_owned();
    });
    let ask = |client: Option<&support::tls::PemIdentity>| {
        TlsClient::connect(f.addr(), trust_only(server_id.cert.clone(), client))
            .and_then(|mut c| c.request(&route("NoSuchTopic")))
    };
    assert_eq!(ask(Some(&client_id)).expect("trusted client").code, ResponseCode::TOPIC_NOT_EXIST);
    // In TLS 1.3 the client finishes first; the server's refusal shows as a closed connection or an alert.
    assert!(ask(None).is_err(), "a client without a certificate was served");
    assert!(ask(Some(&stranger)).is_err(), "a client with an untrusted certificate was served");
}

/// The binary takes the TLS keys as Java takes them, as system properties (`-Dtls.server.mode=…`), and does not
/// start in enforcing mode without a usable certificate (Java would start and close every client).
#[test]
fn binary_reads_tls_system_properties_and_refuses_a_broken_enforcing_setup() {
    let bin = env!("CARGO_BIN_EXE_mqnamesrv");
    let out = std::process::Command::new(bin).args(["-Dtls.server.mode=enforcing", "-p"]).output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.lines().any(|l| l == "tls.server.mode=enforcing"), "{printed}");
    assert!(printed.lines().any(|l| l == "tls.test.mode.enable=true"), "{printed}");

    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("namesrv.properties");
    let kv = dir.path().join("kvConfig.json");
    support::write_properties(
        &props,
        &[
            ("listenPort".into(), support::free_port().to_string()),
            ("bindAddress".into(), "127.0.0.1".into()),
            ("kvConfigPath".into(), kv.to_string_lossy().into_owned()),
            ("tls.test.mode.enable".into(), "false".into()),
            ("tls.server.certPath".into(), "/nonexistent/cert.pem".into()),
            ("tls.server.keyPath".into(), "/nonexistent/key.pem".into()),
            ("tls.config.file".into(), dir.path().join("none").to_string_lossy().into_owned()),
        ],
    );
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("-c").arg(&props).arg("-Dtls.server.mode=enforcing");
    let out = support::proc::run("mqnamesrv", cmd, dir.path(), Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("/nonexistent/cert.pem"), "{}", out.stderr);
}

/// Needs Java 17+ and Maven: ignored, run with `cargo test -- --ignored`.
mod java_peers {
    use super::*;
    use support::java::{JAVA_49, JAVA_5X};
    use support::mqadmin::{JavaClient, MqAdmin};

    /// Real Java peers over TLS: `mqadmin` 5.5.0 and 4.9.8 and a Java 5.5.0 client with `-Dtls.enable=true` (client
    /// test mode, the default, trusts the generated certificate) against a server in enforcing mode; without it,
    /// `mqadmin` is shut out.
    #[test]
    #[ignore = "real peer: Java 5.5.0 and 4.9.8 mqadmin and client"]
    fn java_mqadmin_and_client_over_tls_in_enforcing_mode() {
        let f = start(|c| c.tls_server_mode = "enforcing".into());
        let mut tls = tls(&f);
        assert_eq!(
            tls.request(&BROKER.register(&["TopicTls", "TopicTls2"], 1, 513)).unwrap().code,
            ResponseCode::SUCCESS
        );
        let namesrv = f.addr().to_string();
        let tls_on = vec!["-Dtls.enable=true".to_string()];

        let mut admin = MqAdmin::new(JAVA_5X);
        admin.jvm_props = tls_on.clone();
        let clusters = admin.ok(&namesrv, &["clusterList"]);
        assert!(clusters.contains("TlsCluster") && clusters.contains("broker-tls"), "clusterList:\n{clusters}");
        let config = admin.ok(&namesrv, &["getNamesrvConfig"]);
        assert!(config.contains("kvConfigPath"), "getNamesrvConfig:\n{config}");

        let mut client = JavaClient::new(JAVA_5X);
        client.jvm_props = tls_on;
        let queues = client.route(&namesrv, "TopicTls");
        assert_eq!(queues.len(), 4, "{queues:?}");
        assert!(queues.iter().all(|(b, _)| b == "broker-tls"), "{queues:?}");

        // 4.9.x clients have the same switch.
        let mut admin49 = MqAdmin::new(JAVA_49);
        admin49.jvm_props = vec!["-Dtls.enable=true".to_string()];
        let clusters = admin49.ok(&namesrv, &["clusterList"]);
        assert!(clusters.contains("broker-tls"), "4.9 clusterList:\n{clusters}");

        admin.jvm_props.clear();
        let refused = admin.run(&namesrv, &["clusterList"]);
        assert!(!refused.stdout.contains("broker-tls"), "a plain mqadmin was served:\n{}", refused.stdout);
    }
}

/// The HTTP endpoint follows `tls.server.mode` with the same certificate: enforcing serves HTTPS only (the Basic
/// credentials of `aclEnable` never cross the network in clear), permissive serves both on one port.
#[test]
fn the_http_endpoint_speaks_tls_as_the_mode_says() {
    for (mode, plain_served) in [("enforcing", false), ("permissive", true)] {
        let f = start(|c| {
            c.tls_server_mode = mode.into();
            c.http_address = "127.0.0.1:0".into();
        });
        let http = f.http_addr().expect("HTTP on");
        let mut client = TlsClient::connect(http, trust_anything()).unwrap_or_else(|e| panic!("{mode}: {e}"));
        let answer = client.exchange_raw(b"GET /health HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        assert!(answer.starts_with("HTTP/1.0 200 OK\r\n") && answer.ends_with("ok\n"), "{mode}: {answer:?}");
        let plain = support::observe::http_response(http, "/health");
        assert_eq!(plain.is_ok(), plain_served, "{mode}: plain HTTP gave {plain:?}");
    }
}
