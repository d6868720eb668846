//! KV file interchange: `kvConfig.json` written by Java 5.5.0 is read by ours, and the file ours writes is read by
//! Java, through the same `kvConfigPath`. Proves the two files have one format (including an emptied namespace and
//! non-ASCII values).

use std::net::SocketAddr;
use std::path::Path;

use namesrv::protocol::json;
use namesrv::protocol::RemotingCommand;

use super::support::client::Client;
use super::support::java::{JavaNamesrv, JAVA_5X};
use super::support::normalize::{canon, Canon};
use super::support::ours::OurNamesrv;

fn kv_req(c: &mut Client, code: i32, pairs: &[(&str, &str)]) -> RemotingCommand {
    let mut cmd = c.cmd(code);
    for (k, v) in pairs {
        cmd = cmd.with_ext(k, *v);
    }
    c.request(cmd)
}

fn put(addr: SocketAddr, ns: &str, key: &str, value: &str) {
    let mut c = Client::connect(addr);
    let r = kv_req(&mut c, 100, &[("namespace", ns), ("key", key), ("value", value)]);
    assert_eq!(r.code, 0, "put {ns}/{key} on {addr}: {r:?}");
}

fn delete(addr: SocketAddr, ns: &str, key: &str) {
    let mut c = Client::connect(addr);
    let r = kv_req(&mut c, 102, &[("namespace", ns), ("key", key)]);
    assert_eq!(r.code, 0, "delete {ns}/{key} on {addr}: {r:?}");
}

/// The value of `ns`/`key`, or `None` when the server answers QUERY_NOT_FOUND.
fn get(addr: SocketAddr, ns: &str, key: &str) -> Option<String> {
    let mut c = Client::connect(addr);
    let r = kv_req(&mut c, 101, &[("namespace", ns), ("key", key)]);
    match r.code {
        0 => Some(r.ext("value").expect("value ext").to_string()),
        22 => None,
        _ => panic!("get {ns}/{key} on {addr}: {r:?}"),
    }
}

/// The 219 body of `ns` as canonical JSON, or `None` for QUERY_NOT_FOUND.
fn list(addr: SocketAddr, ns: &str) -> Option<Canon> {
    let mut c = Client::connect(addr);
    let r = kv_req(&mut c, 219, &[("namespace", ns)]);
    match r.code {
        0 => Some(canon(&json::parse(&r.body).expect("KVTable JSON"), None)),
        22 => None,
        _ => panic!("list {ns} on {addr}: {r:?}"),
    }
}

fn file_json(path: &Path) -> Canon {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    canon(&json::parse(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e:?}", path.display())), None)
}

fn parse(text: &str) -> Canon {
    canon(&json::parse(text.as_bytes()).expect("test JSON"), None)
}

#[test]
#[ignore = "real peer: Java 5.5.0 name server"]
fn kv_file_interchange_with_java_5x() {
    let dir = tempfile::Builder::new().prefix("kv-interchange-").tempdir().expect("temp dir");
    let path = dir.path().join("kv/kvConfig.json");
    let path_s = path.display().to_string();
    let kv_path = [("kvConfigPath", path_s.as_str())];

    // Java writes.
    {
        let java = JavaNamesrv::start_with(JAVA_5X, &kv_path);
        put(java.addr(), "NS_A", "k1", "v1");
        put(java.addr(), "NS_A", "k2", "zone-中/x \"q\" \\ end");
        put(java.addr(), "ORDER_TOPIC_CONFIG", "T", "broker-a:4;broker-b:4");
        put(java.addr(), "NS_E", "gone", "soon");
        delete(java.addr(), "NS_E", "gone");
    }
    let java_file = file_json(&path);
    let expected = parse(
        r#"{"configTable":{"NS_A":{"k1":"v1","k2":"zone-中/x \"q\" \\ end"},"NS_E":{},
            "ORDER_TOPIC_CONFIG":{"T":"broker-a:4;broker-b:4"}}}"#,
    );
    assert_eq!(java_file, expected, "Java's kvConfig.json");

    // Ours reads what Java wrote, then writes.
    {
        let ours = OurNamesrv::start_with(&kv_path);
        let a = ours.addr();
        assert_eq!(get(a, "NS_A", "k1").as_deref(), Some("v1"));
        assert_eq!(get(a, "NS_A", "k2").as_deref(), Some("zone-中/x \"q\" \\ end"));
        assert_eq!(get(a, "ORDER_TOPIC_CONFIG", "T").as_deref(), Some("broker-a:4;broker-b:4"));
        assert_eq!(list(a, "NS_E"), Some(parse(r#"{"table":{}}"#)), "emptied namespace survives the file");
        assert_eq!(list(a, "NS_X"), None);
        put(a, "NS_B", "k", "ü");
        delete(a, "NS_A", "k1");
        put(a, "NS_F", "x", "y");
        delete(a, "NS_F", "x");
    }
    let our_file = file_json(&path);
    let expected = parse(
        r#"{"configTable":{"NS_A":{"k2":"zone-中/x \"q\" \\ end"},"NS_B":{"k":"ü"},"NS_E":{},"NS_F":{},
            "ORDER_TOPIC_CONFIG":{"T":"broker-a:4;broker-b:4"}}}"#,
    );
    assert_eq!(our_file, expected, "our kvConfig.json");

    // Java reads what ours wrote.
    let java = JavaNamesrv::start_with(JAVA_5X, &kv_path);
    let a = java.addr();
    assert_eq!(get(a, "NS_A", "k1"), None, "deleted by ours\n{}", java.log());
    assert_eq!(get(a, "NS_A", "k2").as_deref(), Some("zone-中/x \"q\" \\ end"));
    assert_eq!(get(a, "NS_B", "k").as_deref(), Some("ü"));
    assert_eq!(get(a, "ORDER_TOPIC_CONFIG", "T").as_deref(), Some("broker-a:4;broker-b:4"));
    assert_eq!(list(a, "NS_F"), Some(parse(r#"{"table":{}}"#)));
    assert_eq!(list(a, "NS_E"), Some(parse(r#"{"table":{}}"#)));
}
