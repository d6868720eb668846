//! Durability of the KV store, end to end: the real `mqnamesrv` binary killed with SIGKILL at random moments while a
//! client streams PUT/DELETE must restart on the same file with every acknowledged write readable; bad files at
//! start fail loudly (naming the file and its `.bak`); a failed write answers SYSTEM_ERROR and changes nothing; the
//! file and its `.bak` are in Java's format.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use namesrv::test_support::persist;
use support::client::Client;
use support::inproc::InProc;

const START_TIMEOUT: Duration = Duration::from_secs(10);

/// One run of the real binary on `<dir>/namesrv.properties` with the KV file `kv`. Killed (SIGKILL) on drop.
struct Proc {
    child: Child,
    watchdog: Option<Child>,
    addr: SocketAddr,
    log: PathBuf,
}

/// Writes the properties file for a run: a fresh port, the given KV path, one small reactor set.
fn write_config(dir: &Path, kv: &Path) -> (PathBuf, u16) {
    let port = support::free_port();
    let props = dir.join("namesrv.properties");
    support::write_properties(
        &props,
        &[
            ("listenPort".into(), port.to_string()),
            ("bindAddress".into(), "127.0.0.1".into()),
            ("kvConfigPath".into(), kv.display().to_string()),
            ("reactorThreads".into(), "2".into()),
            ("pinThreads".into(), "false".into()),
        ],
    );
    (props, port)
}

fn spawn(dir: &Path, kv: &Path, run: usize) -> (Child, u16, PathBuf) {
    let (props, port) = write_config(dir, kv);
    let log = dir.join(format!("mqnamesrv-{run}.log"));
    let out = fs::File::create(&log).expect("create log");
    let err = out.try_clone().expect("clone log");
    let child = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&props)
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start mqnamesrv");
    (child, port, log)
}

impl Proc {
    /// Starts the binary and waits until it accepts; panics (with the log) if it exits instead.
    fn start(dir: &Path, kv: &Path, run: usize) -> Proc {
        let (mut child, port, log) = spawn(dir, kv, run);
        let watchdog = support::spawn_watchdog(child.id());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        support::wait_until_accepting("mqnamesrv", &mut child, addr, START_TIMEOUT, &log);
        Proc { child, watchdog, addr, log }
    }

    fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// The tail of this run's log, for failure messages.
    fn log_tail(&self) -> String {
        support::tail(&self.log, 40)
    }

    /// SIGKILL (std's `Child::kill` on Unix) and reap.
    fn kill9(&mut self) {
        support::kill_and_reap(&mut self.child);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        support::kill_and_reap(&mut self.child);
        if let Some(w) = self.watchdog.as_mut() {
            support::kill_and_reap(w);
        }
    }
}

/// Runs the binary expecting it to exit on its own; returns the status and its output.
fn run_to_exit(dir: &Path, kv: &Path) -> (ExitStatus, String) {
    let (mut child, _, log) = spawn(dir, kv, 0);
    let Some(status) = support::eventually_some(START_TIMEOUT, || child.try_wait().expect("try_wait")) else {
        support::kill_and_reap(&mut child);
        panic!("mqnamesrv kept running with a bad KV file\n{}", support::tail(&log, 40));
    };
    (status, fs::read_to_string(&log).unwrap_or_default())
}

/// A request with the given ext fields.
fn call(c: &mut Client, code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
    let mut cmd = c.cmd(code);
    for (k, v) in ext {
        cmd = cmd.with_ext(k, *v);
    }
    c.request(cmd)
}

fn put(c: &mut Client, ns: &str, key: &str, value: &str) -> RemotingCommand {
    let cmd = c.cmd(RequestCode::PUT_KV_CONFIG).with_ext("namespace", ns).with_ext("key", key).with_ext("value", value);
    c.request(cmd)
}

fn get(c: &mut Client, ns: &str, key: &str) -> RemotingCommand {
    let cmd = c.cmd(RequestCode::GET_KV_CONFIG).with_ext("namespace", ns).with_ext("key", key);
    c.request(cmd)
}

/// What GET says: `Some(value)` on SUCCESS, `None` on QUERY_NOT_FOUND; anything else fails the test.
fn read(c: &mut Client, ns: &str, key: &str) -> Option<String> {
    let r = get(c, ns, key);
    match r.code {
        ResponseCode::SUCCESS => Some(r.ext("value").expect("value ext").to_string()),
        ResponseCode::QUERY_NOT_FOUND => None,
        code => panic!("GET {ns}/{key} answered {code}: {r:?}"),
    }
}

/// xorshift64*: reproducible from the printed seed, no extra dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMESPACES: [&str; 3] = ["ORDER_TOPIC_CONFIG", "NS_A", "NS_B"];
const KEYS_PER_NS: u64 = 8;

type Key = (&'static str, String);

/// One write on the wire: a put of a value or a delete.
#[derive(Clone, Debug)]
struct Op {
    key: Key,
    value: Option<String>,
}

/// What one streaming client learned before the server died: its acknowledged writes in order, and the one write
/// that was sent but not answered (it may or may not have become durable).
struct Streamed {
    acked: Vec<Op>,
    in_flight: Option<Op>,
}

/// Streams random PUT/DELETE requests on the keys of namespace `ns`, one at a time, until the connection dies.
fn stream_writes(mut c: Client, ns: &'static str, tag: String, seed: u64) -> Streamed {
    let mut rng = Rng(seed | 1);
    let mut acked = Vec::new();
    for n in 0.. {
        let key = (ns, format!("k{}", rng.below(KEYS_PER_NS)));
        let value = (rng.below(4) != 0).then(|| format!("{tag}-{n}-{}", "x".repeat(rng.below(64) as usize)));
        let op = Op { key, value };
        let cmd = match &op.value {
            Some(v) => c
                .cmd(RequestCode::PUT_KV_CONFIG)
                .with_ext("namespace", ns)
                .with_ext("key", &op.key.1)
                .with_ext("value", v),
            None => c.cmd(RequestCode::DELETE_KV_CONFIG).with_ext("namespace", ns).with_ext("key", &op.key.1),
        };
        match c.try_request(cmd, Duration::from_secs(5)) {
            Ok(r) => {
                assert_eq!(r.code, ResponseCode::SUCCESS, "write {op:?}: {r:?}");
                acked.push(op);
            }
            // The kill: the request may have been applied (and made durable) or not.
            Err(_) => return Streamed { acked, in_flight: Some(op) },
        }
    }
    unreachable!()
}

fn apply(model: &mut BTreeMap<Key, String>, key: &Key, value: Option<&String>) {
    match value {
        Some(v) => model.insert(key.clone(), v.clone()),
        None => model.remove(key),
    };
}

#[test]
fn sigkill_at_random_moments_never_loses_an_acknowledged_write() {
    let _turn = crate::heavy();
    let started = Instant::now();
    let seed = std::env::var("KV_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("KV_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("store").join("kvConfig.json");
    let mut model: BTreeMap<Key, String> = BTreeMap::new();
    let mut total_acked = 0;
    const ITERATIONS: usize = 15;
    for run in 0..ITERATIONS {
        let mut proc = Proc::start(dir.path(), &kv, run);
        // Everything acknowledged before the previous kill is there (the in-flight writes were settled below).
        let mut c = proc.client();
        for ((ns, key), want) in all_keys(&model) {
            let got = read(&mut c, ns, &key);
            assert_eq!(got, want, "run {run}: {ns}/{key} after restart (KV_SEED={seed})\n{}", proc.log_tail());
        }
        drop(c);

        // One client per namespace, concurrently (so the writer batches), each on its own keys. Connected before
        // the clock starts, so even a kill right away meets open connections.
        let writers: Vec<_> = NAMESPACES
            .iter()
            .enumerate()
            .map(|(i, ns)| {
                let conn = proc.client();
                let stream_seed = rng.next();
                std::thread::spawn(move || stream_writes(conn, ns, format!("r{run}c{i}"), stream_seed))
            })
            .collect();
        // Vary the moment: right after start up to ~300 ms into the stream, with sub-millisecond jitter.
        let delay = Duration::from_micros(rng.below(6) * 50_000 + rng.below(50_000));
        std::thread::sleep(delay);
        proc.kill9();
        let streams: Vec<Streamed> = writers.into_iter().map(|w| w.join().expect("writer thread")).collect();
        for s in &streams {
            total_acked += s.acked.len();
            for op in &s.acked {
                apply(&mut model, &op.key, op.value.as_ref());
            }
        }

        // The file on disk always loads (a complete old or new version).
        let on_disk = persist::load_kv(&kv)
            .unwrap_or_else(|e| panic!("run {run}: file does not load after SIGKILL: {e} (KV_SEED={seed})"));
        // Each unanswered write either reached the file or not; settle the model from the file for that key only.
        for op in streams.iter().filter_map(|s| s.in_flight.as_ref()) {
            let now = on_disk.get(op.key.0, &op.key.1).map(str::to_string);
            let before = model.get(&op.key).cloned();
            assert!(
                now == before || now == op.value,
                "run {run}: in-flight {op:?} left {now:?}, neither acknowledged {before:?} nor its own value"
            );
            apply(&mut model, &op.key, now.as_ref());
        }
        for ((ns, key), want) in all_keys(&model) {
            assert_eq!(on_disk.get(ns, &key).map(str::to_string), want, "run {run}: file after kill at {delay:?}");
        }
        drop(proc);
    }
    // A last restart reads everything back through the server.
    let proc = Proc::start(dir.path(), &kv, ITERATIONS);
    let mut c = proc.client();
    for ((ns, key), want) in all_keys(&model) {
        assert_eq!(read(&mut c, ns, &key), want, "final: {ns}/{key} (KV_SEED={seed})");
    }
    assert!(total_acked > ITERATIONS, "too few acknowledged writes to mean anything: {total_acked}");
    eprintln!("{ITERATIONS} kills, {total_acked} acknowledged writes, {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(60), "kill loop too slow: {:?}", started.elapsed());
}

/// Every key of the pool with its expected value (`None` = never written or deleted).
fn all_keys(model: &BTreeMap<Key, String>) -> Vec<(Key, Option<String>)> {
    let mut out = Vec::new();
    for ns in NAMESPACES {
        for k in 0..KEYS_PER_NS {
            let key = (ns, format!("k{k}"));
            let want = model.get(&key).cloned();
            out.push((key, want));
        }
    }
    out
}

#[test]
fn corrupt_or_unreadable_file_stops_start_naming_the_file_and_its_bak() {
    let _turn = crate::heavy();
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kvConfig.json");
    let bak = dir.path().join("kvConfig.json.bak");
    for (what, content) in [
        ("truncated", &b"{\"configTable\":{\"NS\":{\"k\":\"v"[..]),
        ("garbage", b"\x00\x01not json"),
        ("array", b"[1,2]"),
    ] {
        fs::write(&kv, content).unwrap();
        let (status, out) = run_to_exit(dir.path(), &kv);
        assert!(!status.success(), "{what}: exited with {status}\n{out}");
        assert!(out.contains(&kv.display().to_string()), "{what}: message does not name the file:\n{out}");
        assert!(out.contains(&bak.display().to_string()), "{what}: message does not name the .bak:\n{out}");
        // The bad file is left for the operator, untouched.
        assert_eq!(fs::read(&kv).unwrap(), content, "{what}");
    }
    // Unreadable even for root: the path is a directory.
    fs::remove_file(&kv).unwrap();
    fs::create_dir(&kv).unwrap();
    let (status, out) = run_to_exit(dir.path(), &kv);
    assert!(!status.success(), "directory: exited with {status}\n{out}");
    assert!(out.contains(&kv.display().to_string()) && out.contains(&bak.display().to_string()), "{out}");
}

#[test]
fn missing_or_empty_file_starts_empty() {
    let _turn = crate::heavy();
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kvConfig.json");
    for (run, content) in [None, Some(&b""[..]), Some(b" \n\t\n")].into_iter().enumerate() {
        if let Some(content) = content {
            fs::write(&kv, content).unwrap();
        }
        let proc = Proc::start(dir.path(), &kv, run);
        let mut c = proc.client();
        assert_eq!(read(&mut c, "NS", "k"), None, "{content:?}");
        let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
        assert_eq!(r.code, ResponseCode::QUERY_NOT_FOUND, "{content:?}");
        // And it is a working store on that file.
        assert_eq!(put(&mut c, "NS", "k", "v").code, ResponseCode::SUCCESS);
        assert_eq!(fs::read_to_string(&kv).unwrap(), r#"{"configTable":{"NS":{"k":"v"}}}"#);
        drop(proc);
        fs::remove_file(&kv).unwrap();
    }
}

/// The in-process fixture with its KV file at `kv_path` and its config file in `dir` (time is irrelevant here).
fn start_in_process(dir: &Path, kv_path: &Path) -> InProc {
    InProc::start(|c| {
        c.kv_config_path = kv_path.display().to_string();
        c.config_store_path = dir.join("namesrv.properties").display().to_string();
    })
}

#[test]
fn failed_write_answers_system_error_and_applies_nothing() {
    let _turn = crate::heavy();
    let dir = tempfile::tempdir().unwrap();
    // A parent that is a regular file: no process, root included, can create the KV file below it.
    let blocker = dir.path().join("blocker");
    fs::write(&blocker, b"a regular file").unwrap();
    let kv = blocker.join("kvConfig.json");
    let srv = start_in_process(dir.path(), &kv);
    let mut c = Client::connect(srv.local_addr());

    let r = put(&mut c, "NS", "k", "v1");
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR, "{r:?}");
    let remark = r.remark.clone().unwrap_or_default();
    assert!(remark.contains("persist KV config") && remark.contains(&kv.display().to_string()), "remark: {remark}");
    assert_eq!(read(&mut c, "NS", "k"), None, "a refused PUT must not be visible");
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
    assert_eq!(r.code, ResponseCode::QUERY_NOT_FOUND, "not even the namespace may appear: {r:?}");
    let r = call(&mut c, RequestCode::DELETE_KV_CONFIG, &[("namespace", "NS"), ("key", "k")]);
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR, "DELETE persists too: {r:?}");

    // Pipelined writes in one batch all fail together.
    let mut bytes = bytes::BytesMut::new();
    let mut opaques = Vec::new();
    for i in 0..10 {
        let cmd = c
            .cmd(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "NS")
            .with_ext("key", format!("p{i}"))
            .with_ext("value", "x");
        opaques.push(cmd.opaque);
        namesrv::protocol::frame::encode(&cmd, &mut bytes);
    }
    c.send_raw(&bytes);
    for _ in &opaques {
        let r = c.recv(Duration::from_secs(5)).expect("reply");
        assert!(opaques.contains(&r.opaque));
        assert_eq!(r.code, ResponseCode::SYSTEM_ERROR, "{r:?}");
    }

    // The server keeps serving reads and non-KV writes.
    assert_eq!(call(&mut c, RequestCode::GET_BROKER_CLUSTER_INFO, &[]).code, ResponseCode::SUCCESS);
    let r = call(&mut c, RequestCode::WIPE_WRITE_PERM_OF_BROKER, &[("brokerName", "none")]);
    assert_eq!((r.code, r.ext("wipeTopicCount")), (ResponseCode::SUCCESS, Some("0")));

    // Once the obstacle is gone, writes succeed, and the refused ones were really rolled back (not persisted later).
    fs::remove_file(&blocker).unwrap();
    assert_eq!(put(&mut c, "NS", "k2", "v2").code, ResponseCode::SUCCESS);
    assert_eq!(read(&mut c, "NS", "k"), None);
    assert_eq!(read(&mut c, "NS", "p0"), None);
    assert_eq!(read(&mut c, "NS", "k2").as_deref(), Some("v2"));
    assert_eq!(fs::read_to_string(&kv).unwrap(), r#"{"configTable":{"NS":{"k2":"v2"}}}"#);
}

#[test]
fn file_is_java_format_and_bak_holds_the_previous_content() {
    let _turn = crate::heavy();
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kvConfig.json");
    let bak = dir.path().join("kvConfig.json.bak");
    let srv = start_in_process(dir.path(), &kv);
    let mut c = Client::connect(srv.local_addr());

    assert_eq!(put(&mut c, "ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4").code, ResponseCode::SUCCESS);
    let first = fs::read_to_string(&kv).unwrap();
    assert_eq!(first, r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}"#);
    assert!(!bak.exists(), "no .bak before a second write");

    assert_eq!(put(&mut c, "NS", "k", "v").code, ResponseCode::SUCCESS);
    assert_eq!(fs::read_to_string(&bak).unwrap(), first, ".bak = content before the second write");
    let second = fs::read_to_string(&kv).unwrap();
    assert_eq!(second, r#"{"configTable":{"NS":{"k":"v"},"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}"#);

    // A delete that empties a namespace keeps it (as Java does), and rotates the .bak again.
    let r = call(&mut c, RequestCode::DELETE_KV_CONFIG, &[("namespace", "NS"), ("key", "k")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
    assert_eq!(fs::read_to_string(&bak).unwrap(), second);
    assert_eq!(
        fs::read_to_string(&kv).unwrap(),
        r#"{"configTable":{"NS":{},"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}"#
    );
    // Non-ASCII and JSON specials survive the file round trip.
    let odd = "q\"uote\\ back/slash \u{e9}t\u{e9} \u{4e2d} \t";
    assert_eq!(put(&mut c, "NS", "odd", odd).code, ResponseCode::SUCCESS);
    let temps: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(temps.is_empty(), "temp files left behind: {temps:?}");
    drop(c);
    drop(srv);
    let srv = start_in_process(dir.path(), &kv);
    let mut c = Client::connect(srv.local_addr());
    assert_eq!(read(&mut c, "NS", "odd").as_deref(), Some(odd));
    assert_eq!(read(&mut c, "ORDER_TOPIC_CONFIG", "TopicTest").as_deref(), Some("broker-a:4"));
    let r = call(&mut c, RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "NS")]);
    assert_eq!(r.code, ResponseCode::SUCCESS);
}
