//! The binary's logs as an operator finds them: `logDir/namesrv.log` with Java's boot line and the writes that
//! changed something, rolled at `logMaxFileSize` keeping `logMaxFiles`; `logFormat=json` gives one JSON object a
//! line. Starts the real `mqnamesrv` (no Java peer).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use namesrv::protocol::ResponseCode;
use support::client::Client;
use support::ours::OurNamesrv;
use support::registration::Broker;

const BROKER: Broker = Broker { cluster: "LogCluster", name: "log-broker-a", addr: "127.0.0.1:10911", id: 0 };

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn log_file(ns: &OurNamesrv, suffix: &str) -> PathBuf {
    ns.dir().join(format!("logs/namesrv.log{suffix}"))
}

/// The boot line is written after the port accepts (as Java's is), so wait for it rather than assume it.
fn wait_for_boot_line(ns: &OurNamesrv) -> String {
    let line = format!("The Name Server boot success. serializeType=JSON, address 127.0.0.1:{}", ns.port());
    let found = support::eventually(Duration::from_secs(10), || read(&log_file(ns, "")).contains(&line));
    assert!(found, "no boot line in namesrv.log:\n{}\n{}", read(&log_file(ns, "")), ns.log());
    line
}

#[test]
fn the_log_file_has_the_boot_line_and_registrations_and_rolls_at_the_limit() {
    const LIMIT: u64 = 4096;
    let ns = OurNamesrv::start_with(&[("logDir", "logs"), ("logMaxFileSize", "4096"), ("logMaxFiles", "2")]);
    let boot = wait_for_boot_line(&ns);
    // stdout gets it too, word for word (start scripts grep it); the test's fixture sends stdout to mqnamesrv.log.
    assert!(read(&ns.dir().join("mqnamesrv.log")).lines().any(|l| l == boot), "{}", ns.log());

    let mut client = Client::connect(ns.addr());
    let resp = client.request(BROKER.register(&["LogTopic0", "TBW102"], 1, 513));
    assert_eq!(resp.code, ResponseCode::SUCCESS, "{:?}\n{}", resp.remark, read(&log_file(&ns, "")));
    // The audit line is written before the reply is sent.
    let text = read(&log_file(&ns, ""));
    let registered = text.lines().find(|l| l.contains("REGISTER_BROKER") && l.contains("brokerName=log-broker-a"));
    assert!(registered.is_some_and(|l| l.contains(" INFO ")), "no register line at INFO:\n{text}");

    // (Two topics each time: a one-topic registration cannot introduce a new broker, as in Java.)
    // Each registration with a new topic changes the routes, so each leaves an INFO line: enough of them roll twice.
    let mut n = 1;
    while !log_file(&ns, ".2").exists() {
        assert!(n < 1000, "namesrv.log never rolled twice after {n} registrations");
        let topic = format!("LogTopic{n}");
        assert_eq!(client.request(BROKER.register(&[&topic, "TBW102"], n + 1, 513)).code, ResponseCode::SUCCESS);
        n += 1;
    }
    // A few more, so that the oldest would have to go to .3 if it were kept.
    for k in n..n + 40 {
        let topic = format!("LogTopic{k}");
        assert_eq!(client.request(BROKER.register(&[&topic, "TBW102"], k + 1, 513)).code, ResponseCode::SUCCESS);
    }
    assert!(!log_file(&ns, ".3").exists(), "logMaxFiles=2 keeps two rolled files");
    for suffix in ["", ".1", ".2"] {
        let path = log_file(&ns, suffix);
        let text = read(&path);
        assert!(!text.is_empty(), "{} is empty", path.display());
        assert!(text.len() as u64 <= LIMIT, "{} has {} bytes, over the limit", path.display(), text.len());
        // Whole lines only: each starts with a timestamp and the file ends at a line break.
        assert!(text.ends_with('\n'), "{} ends mid-line", path.display());
        assert!(text.lines().all(|l| l.starts_with("20")), "{} has a cut line:\n{text}", path.display());
    }
    // The boot line rolled away with the oldest lines.
    assert!(!read(&log_file(&ns, "")).contains(&boot));
    let unregistered = client.request(BROKER.unregister());
    assert_eq!(unregistered.code, ResponseCode::SUCCESS);
    let text = read(&log_file(&ns, ""));
    assert!(text.contains("UNREGISTER_BROKER"), "no unregister line:\n{text}");
}

#[test]
fn json_format_is_one_object_a_line() {
    let ns = OurNamesrv::start_with(&[("logDir", "logs"), ("logFormat", "json")]);
    let boot = wait_for_boot_line(&ns);
    let mut client = Client::connect(ns.addr());
    assert_eq!(client.request(BROKER.register(&["JsonTopic", "TBW102"], 1, 513)).code, ResponseCode::SUCCESS);

    let text = read(&log_file(&ns, ""));
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    assert!(lines.iter().all(|v| v["level"].is_string() && v["timestamp"].is_string()), "{text}");
    assert!(lines.iter().any(|v| v["fields"]["message"] == boot.as_str()), "{text}");
    let register = lines.iter().find(|v| v["target"] == "audit" && v["fields"]["request"] == "REGISTER_BROKER");
    let register = register.unwrap_or_else(|| panic!("no audit line for the registration:\n{text}"));
    assert_eq!(register["level"], "INFO");
    assert!(register["fields"]["facts"].as_str().is_some_and(|f| f.contains("brokerName=log-broker-a")), "{register}");
}

#[test]
fn a_bad_log_format_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("namesrv.properties");
    std::fs::write(&props, "logFormat=xml\nlistenPort=0\nbindAddress=127.0.0.1\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&props)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("logFormat must be text or json"), "{err}");
}
