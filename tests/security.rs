//! The write surface as an attacker on the network sees it (docs/security.md): UPDATE_NAMESRV_CONFIG may change
//! only runtime-safe keys, and rewriting the config file loses nothing an operator configured.

mod support;

use std::fs;
use std::path::Path;

use namesrv::config::Config;
use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use namesrv::server;
use support::client::Client;
use support::inproc::InProc;
use support::registration::new_cmd;

fn update_config(c: &mut Client, props: &str) -> RemotingCommand {
    c.request(new_cmd(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(props.as_bytes().to_vec()))
}

fn refused_remark(keys: &str) -> String {
    format!("Can not update config in black list. Not changeable at runtime: {keys}")
}

/// The attack of CVE-2023-37582's class: point a file-writing setting at a file of the attacker's choice.
#[test]
fn config_update_cannot_point_the_route_snapshot_at_another_file() {
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("authorized_keys");
    fs::write(&victim, "ssh-ed25519 AAAA operator\n").unwrap();
    let fx = InProc::start(|c| {
        c.route_snapshot_path = Path::new(&c.kv_config_path).with_file_name("routes.bin").to_string_lossy().into();
    });
    let mut c = fx.client();
    let r = update_config(&mut c, &format!("routeSnapshotPath={}\n", victim.display()));
    assert_eq!(r.code, ResponseCode::NO_PERMISSION, "{r:?}");
    assert_eq!(r.remark.as_deref(), Some(refused_remark("routeSnapshotPath").as_str()));
    assert!(!fx.dir.path().join("namesrv.properties").exists(), "nothing was persisted");
    // The route tables are saved at shutdown: to the configured file, not the victim.
    let InProc { server, dir, .. } = fx;
    server.shutdown();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "ssh-ed25519 AAAA operator\n");
    assert!(!victim.with_extension("bak").exists());
    assert!(dir.path().join("routes.bin").exists(), "the configured snapshot was written");
}

/// Files, listeners, limits and protections: each refused whole, with its name in the remark; a runtime key in the
/// same update is not applied either.
#[test]
fn config_update_cannot_move_files_listeners_or_limits() {
    let fx = InProc::start(|c| c.admin_allow_list = namesrv::allow_list::AllowList::parse("127.0.0.1").unwrap());
    let mut c = fx.client();
    let before = fx.server.snapshot().config.clone();
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
        assert_eq!(r.remark.as_deref(), Some(refused_remark(key).as_str()), "{key}");
    }
    let r = update_config(&mut c, "maxConnections=1\nlistenPort=2\n");
    assert_eq!(r.remark.as_deref(), Some(refused_remark("listenPort, maxConnections").as_str()));
    assert_eq!(fx.server.snapshot().config, before, "nothing applied");
    assert!(!fx.dir.path().join("namesrv.properties").exists(), "nothing persisted");
    // A runtime key alone goes through.
    assert_eq!(update_config(&mut c, "orderMessageEnable=true\n").code, ResponseCode::SUCCESS);
    assert!(fx.server.snapshot().config.order_message_enable);
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
