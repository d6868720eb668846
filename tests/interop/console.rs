//! The web console at `/` in a real headless browser: Debian's chromium driven by playwright-core
//! (`tests/peers/browser/console_test.mjs`), against our server with a real Java 5.5.0 broker registered. The page
//! must list the broker, show a topic's route as clients receive it, and show the broker leaving in the change feed
//! once it is killed. Screenshots go to `target/console-artifacts/`. Beside the browser, a plain SSE client follows
//! `/events` through the broker's life — registered, a topic added with mqadmin, killed, removed — and writes what
//! it saw to `feed.txt` there.
//!
//! The second test drives the page as an operator does (`tests/peers/browser/console_ops_test.mjs`) against fake
//! brokers registered over the wire (two clusters, a master and a slave in one group, ~670 topics): paging,
//! filters and search of topics, a shared `#topic=NAME` link, a health verdict within a second of a master's
//! connection closing, the phone layout, the server stopped and started again, and a full event feed.
//!
//! Ignored: run with `cargo test -- --ignored`; without node, npm or a chromium that starts, the tests fail (they
//! never skip).

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use support::broker::{route, wait_for, wait_registered, Broker};
use support::client::Client;
use support::inproc::InProc;
use support::interop::{serial, step};
use support::java::JAVA_5X;
use support::mqadmin::MqAdmin;
use support::native::playwright_core;
use support::proc::OurNode;
use support::registration;
use support::sse::{Sse, Stream};

const CLUSTER: &str = "ConsoleCluster";
/// Brokers register a topic named after themselves (`brokerTopicEnable`, on by default): the topic searched for.
const BROKER: &str = "console-broker";
/// Created with mqadmin while the broker runs: the broker re-registers with it.
const ADDED_TOPIC: &str = "ConsoleAddedTopic";
/// For each phase of the browser script; generous, as a JVM shares the two cores with the browser.
const PHASE_TIMEOUT: Duration = Duration::from_secs(180);

#[test]
#[ignore = "real peer: node, chromium and a Java 5.5.0 broker"]
fn console_shows_a_java_broker_its_route_and_its_leaving() {
    let _serial = serial();
    let t0 = Instant::now();
    // The tools first, so that a machine without them fails in seconds, not after a broker has booted.
    let chromium = chromium();
    let modules = playwright_core();
    let artifacts = artifact_dir();
    step(t0, &format!("chromium {}, playwright-core ready", chromium.display()));

    let ours = OurNode::start();
    let feed = follow_feed(&ours);
    let mut broker = Broker::start(JAVA_5X, CLUSTER, BROKER, &ours.addr_string());
    let took = wait_registered(ours.addr(), &broker, Duration::from_secs(60));
    wait_for(
        &format!("the route of topic {BROKER}"),
        Duration::from_secs(60),
        || route(ours.addr(), BROKER),
        || format!("{}\n{}", broker.log(), ours.log()),
    );
    step(t0, &format!("broker {} registered after {took:?}", broker.addr_string()));
    let out =
        MqAdmin::new(JAVA_5X).ok(&ours.addr_string(), &["updateTopic", "-b", &broker.addr_string(), "-t", ADDED_TOPIC]);
    assert!(out.contains("success"), "updateTopic:\n{out}");
    wait_for(
        &format!("the route of topic {ADDED_TOPIC}"),
        Duration::from_secs(60),
        || route(ours.addr(), ADDED_TOPIC),
        || format!("{}\n{}", broker.log(), ours.log()),
    );
    step(t0, &format!("mqadmin added topic {ADDED_TOPIC}"));

    let args = [
        format!("http://{}", ours.http_addr()),
        CLUSTER.to_string(),
        BROKER.to_string(),
        broker.addr_string(),
        BROKER.to_string(),
        artifacts.display().to_string(),
    ];
    let mut browser = Script::start(&modules, &chromium, "console_test.mjs", &args, &artifacts);
    let context = |b: &Broker| format!("{}\n{}", b.log(), ours.log());
    browser.expect_line("READY", || context(&broker));
    step(t0, "the page lists the broker and shows the route; killing the broker");

    // SIGKILL: no UNREGISTER_BROKER, our server learns of it from the closed connection.
    broker.kill();
    browser.say("STOPPED");
    browser.expect_line("OK", || context(&broker));
    browser.expect_success();
    step(t0, &format!("the feed showed the broker leave; screenshots in {}", artifacts.display()));

    let life = broker_life(&feed, &broker.addr_string(), &artifacts);
    step(t0, &format!("the feed followed the broker's life: {}", life.join(" → ")));
}

/// The fake brokers of the operator test: (cluster, group, id, address, topics).
fn fleet() -> Vec<(&'static str, &'static str, i64, &'static str, Vec<String>)> {
    let ops: Vec<String> =
        (0..650).map(|i| format!("Ops_{i}")).chain(["%RETRY%ops-group".into(), "%DLQ%ops-group".into()]).collect();
    let bees: Vec<String> = (0..10).map(|i| format!("Bee_{i}")).collect();
    // Like real brokers, each also registers its cluster's name and its own as topics.
    let with = |t: &[String], own: [&str; 2]| t.iter().cloned().chain(own.map(String::from)).collect::<Vec<_>>();
    vec![
        ("OpsA", "ops-a1", 0, "127.0.0.1:20911", with(&ops, ["OpsA", "ops-a1"])),
        ("OpsA", "ops-a1", 1, "127.0.0.1:20921", with(&ops, ["OpsA", "ops-a1"])),
        ("OpsA", "ops-a2", 0, "127.0.0.1:20931", with(&ops[..100], ["OpsA", "ops-a2"])),
        ("OpsB", "ops-b1", 0, "127.0.0.1:20941", with(&bees, ["OpsB", "ops-b1"])),
    ]
}

/// Registers every broker of `fleet` on a connection of its own (closing one is that broker leaving); `extra`
/// topics go to the last one.
fn register_fleet(ours: &OurNode, extra: &[&str]) -> Vec<Client> {
    let brokers = fleet();
    let n = brokers.len();
    brokers
        .into_iter()
        .enumerate()
        .map(|(i, (cluster, name, id, addr, mut topics))| {
            if i == n - 1 {
                topics.extend(extra.iter().map(|t| t.to_string()));
            }
            let mut c = Client::connect(ours.addr());
            let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
            let b = registration::Broker { cluster, name, addr, id };
            let reply = c.request(b.register(&topics, 1 + extra.len() as i64, 513));
            assert_eq!(reply.code, 0, "registering {name}/{id}: {reply:?}");
            c
        })
        .collect()
}

#[test]
#[ignore = "real peer: node, chromium and a Java 5.5.0 broker"]
fn console_as_an_operator_uses_it() {
    let _serial = serial();
    let t0 = Instant::now();
    let chromium = chromium();
    let modules = playwright_core();
    let artifacts = artifact_dir_named("console-artifacts-ops");
    let mut ours = OurNode::start();
    let mut brokers = register_fleet(&ours, &[]);
    // A second server whose one event stream is taken: the page must say why it cannot follow the feed. It also
    // compares itself with ours (namesrvPeers) and holds a KV entry ours has not: the fleet view must name it.
    let full = InProc::start(|c| {
        c.http_address = "127.0.0.1:0".into();
        c.event_feed_streams = 1;
        c.namesrv_peers = ours.addr_string();
        c.fleet_check_seconds = 1;
    });
    let mut kv = Client::connect(full.local_addr());
    let put = kv
        .cmd(namesrv::protocol::RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "ops-ns")
        .with_ext("key", "only-on-the-second")
        .with_ext("value", "1");
    assert_eq!(kv.request(put).code, 0, "PUT_KV_CONFIG on the second server");
    let full_http = full.http_addr().expect("http");
    let _taken = Stream::open_with(full_http, "/events", None, Duration::from_secs(60));
    step(t0, "fake brokers registered; starting the browser");

    let mut browser = Script::start(
        &modules,
        &chromium,
        "console_ops_test.mjs",
        &[format!("http://{}", ours.http_addr()), format!("http://{full_http}"), artifacts.display().to_string()],
        &artifacts,
    );
    browser.expect_line("TOPICS", || ours.log());
    // A topic more: the page's count must follow without a reload.
    register_again(&mut brokers[3], 3, &["Ops_Late"]);
    browser.say("ADDED");
    browser.expect_line("READY_HEALTH", || ours.log());
    // The master of ops-a1 goes: its connection closes, the group is left with its slave.
    drop(brokers.remove(0));
    browser.say("CLOSED");
    browser.expect_line("HEALTH", || ours.log());
    step(t0, "topics, a shared link and the health verdict checked");
    browser.expect_line("PHONE", || ours.log());
    ours.kill();
    browser.say("KILLED");
    browser.expect_line("GREY", || ours.log());
    ours.restart();
    let _again = register_fleet(&ours, &["Ops_Late"]);
    browser.say("RESTARTED");
    browser.expect_line("RECOVERED", || ours.log());
    step(t0, "the page greyed while the server was down and cleared its errors after");
    browser.expect_line("OK", || ours.log());
    browser.expect_success();
    step(t0, &format!("screenshots in {}", artifacts.display()));
}

/// Registers broker `index` of `fleet` again on its connection `c`, with `extra` topics.
fn register_again(c: &mut Client, index: usize, extra: &[&str]) {
    let (cluster, name, id, addr, mut topics) = fleet().swap_remove(index);
    topics.extend(extra.iter().map(|t| t.to_string()));
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let reply = c.request(registration::Broker { cluster, name, addr, id }.register(&topics, 2, 513));
    assert_eq!(reply.code, 0, "registering {name}/{id} again: {reply:?}");
}

/// A plain SSE client on `/events` from before the broker starts, on a thread of its own: its events come through
/// the channel.
fn follow_feed(ours: &OurNode) -> Receiver<Sse> {
    let mut stream = Stream::open_with(ours.http_addr(), "/events", None, Duration::from_secs(60));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Some(e) = stream.try_next() {
            if tx.send(e).is_err() {
                break;
            }
        }
    });
    rx
}

/// The events about the broker at `addr` until it was removed, written to `feed.txt`; asserts the life Java's broker
/// had: first registered, re-registered with the added topic, removed when its connection closed (in that order,
/// whatever else came between). Returns the steps.
fn broker_life(feed: &Receiver<Sse>, addr: &str, artifacts: &Path) -> Vec<String> {
    let mut text = String::new();
    let mut life = Vec::new();
    loop {
        let e = feed.recv_timeout(PHASE_TIMEOUT).unwrap_or_else(|_| panic!("no brokerRemoved in the feed:\n{text}"));
        text.push_str(&format!("{} {} {}\n", e.id.as_deref().unwrap_or("-"), e.event, e.data));
        if e.data["addr"] != addr {
            continue;
        }
        let step = match e.event.as_str() {
            "brokerRegistered" if e.data["first"] == true => "registered".to_string(),
            "brokerRegistered" => {
                let added: Vec<&str> =
                    e.data["topicsAdded"].as_array().into_iter().flatten().filter_map(|t| t.as_str()).collect();
                format!("re-registered, topics added {added:?}")
            }
            "brokerRemoved" => format!("removed ({})", e.data["cause"].as_str().unwrap_or("?")),
            other => other.to_string(),
        };
        life.push(step);
        if e.event == "brokerRemoved" {
            break;
        }
    }
    std::fs::write(artifacts.join("feed.txt"), &text).expect("write feed.txt");
    // The broker may re-register with more topics while it boots; these three must be there, in this order.
    let added = life.iter().position(|s| s.starts_with("re-registered") && s.contains(&format!("{ADDED_TOPIC:?}")));
    assert_eq!(life.first().map(String::as_str), Some("registered"), "the broker's life in the feed:\n{text}");
    assert!(added.is_some(), "no re-registration adding {ADDED_TOPIC} in the feed:\n{text}");
    assert_eq!(life.last().map(String::as_str), Some("removed (connection_closed)"), "{text}");
    life
}

/// The browser to drive: `$CHROMIUM`, else Debian's `/usr/bin/chromium`. Panics unless it starts.
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let out = Command::new(&path).arg("--version").output();
    match out {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Chromium") => path,
        Ok(o) => panic!(
            "{} --version failed ({}): {}{}\nThe console test needs Debian's chromium (apt-get install chromium) or \
             $CHROMIUM",
            path.display(),
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "cannot run {}: {e}\nThe console test needs Debian's chromium (apt-get install chromium) or $CHROMIUM",
            path.display()
        ),
    }
}

/// `console-artifacts/` beside the build's `debug/` directory (`target/` unless the target dir was moved),
/// emptied so that no screenshot of an earlier run passes for this one's.
fn artifact_dir() -> PathBuf {
    artifact_dir_named("console-artifacts")
}

/// `name/` beside the build's `debug/` directory, emptied (each test keeps its own, so both can be looked at).
fn artifact_dir_named(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/debug/deps/interop-<hash>
    let target = exe.ancestors().nth(3).expect("target directory").to_path_buf();
    let dir = target.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    dir
}

/// A script of `tests/peers/browser` running in node, spoken to in lines: its stdout comes through a channel so
/// that every wait has a deadline; its stderr (progress and failures) goes to `<script>.log` among the artifacts.
struct Script {
    child: Child,
    lines: Receiver<String>,
    log: PathBuf,
    // Holds the copy of the script and the `node_modules` link while node runs.
    _dir: tempfile::TempDir,
}

impl Script {
    fn start(modules: &Path, chromium: &Path, name: &str, args: &[String], artifacts: &Path) -> Script {
        // ES modules ignore NODE_PATH: the script runs from a directory whose node_modules is the installed one.
        let dir = tempfile::Builder::new().prefix("interop-console-").tempdir().expect("temp dir");
        let script = dir.path().join(name);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/browser").join(name);
        std::fs::copy(&src, &script).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        std::os::unix::fs::symlink(modules, dir.path().join("node_modules")).expect("link node_modules");
        let log = artifacts.join(name.replace(".mjs", ".log"));
        let err = std::fs::File::create(&log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
        let mut child = Command::new("node")
            .arg(&script)
            .args(args)
            .env("CHROMIUM", chromium)
            .env("HOME", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node (the console test needs Node.js 20+): {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Script { child, lines, log, _dir: dir }
    }

    /// Waits for the line `want`; panics with the script's log and `context()` if it exits or times out first.
    fn expect_line(&mut self, want: &str, context: impl Fn() -> String) {
        loop {
            match self.lines.recv_timeout(PHASE_TIMEOUT) {
                Ok(line) if line == want => return,
                Ok(line) => eprintln!("         console_test: {line}"),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {want} from the browser script within {PHASE_TIMEOUT:?}\n{}\n{}", self.log(), context())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    panic!("the browser script exited ({status}) before {want}\n{}\n{}", self.log(), context())
                }
            }
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").and_then(|_| stdin.flush()).expect("write to console_test");
    }

    /// Waits for the script to exit, which it does right after OK, and requires status 0.
    fn expect_success(&mut self) {
        let child = &mut self.child;
        let status = support::eventually_some(Duration::from_secs(60), || child.try_wait().expect("try_wait"));
        let status = status.unwrap_or_else(|| panic!("the browser script did not exit after OK\n{}", self.log()));
        assert!(status.success(), "the browser script exited with {status}\n{}", self.log());
    }

    fn log(&self) -> String {
        format!("--- {} ---\n{}", self.log.display(), support::tail(&self.log, 60))
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
