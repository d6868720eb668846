//! The container image (`docs/deploy/image/build.sh`) run as a user would: built from this test build's binary,
//! started with podman (runc) on a read-only root with a volume, a real Java 5.5.0 broker registering to it
//! through the published port, a Java producer and consumer using it, `/health` and `/ready` from outside,
//! `podman stop` draining with clients connected, and the KV store surviving a new container on the same volume.
//! Needs podman and runc (`.ci/run` installs them as root) besides Java and Maven. Ignored: run with
//! `cargo test -- --ignored`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support;

use support::broker::{route, wait_for, wait_registered, Broker};
use support::client::Client;
use support::interop::{kv_get, serial, squash, step};
use support::java::JAVA_5X;
use support::mqadmin::{expected_bodies, JavaClient, MqAdmin};
use support::observe::{http_response, metric};
use support::podman::Podman;

/// The image's `shutdownWaitTimeSeconds` (docs/deploy/image/namesrv.properties): how long SIGTERM drains.
const DRAIN: Duration = Duration::from_secs(5);
/// What `podman stop` is given before SIGKILL; the drain must end well inside it.
const GRACE: Duration = Duration::from_secs(30);
/// A request version of the 5.x clients (> 475 = V4_9_4): the ones told GO_AWAY.
const VERSION_5X: i32 = 513;

/// Status and body of GET `path`, or the failure as text.
fn get(http: SocketAddr, path: &str) -> Result<(u16, String), String> {
    http_response(http, path).map(|(status, _, body)| (status, body))
}

#[test]
#[ignore = "real peer: podman (runc), Java 5.5.0 broker, mqadmin and clients"]
fn container_image_serves_java_5_peers_drains_on_stop_and_keeps_kv_on_its_volume() {
    const N: usize = 10;
    let _serial = serial();
    let t0 = Instant::now();
    let mut pod = Podman::build(Path::new(env!("CARGO_BIN_EXE_mqnamesrv")));
    let size: u64 = pod.image_field("{{.Size}}").parse().expect("image size");
    step(t0, &format!("image {} built: {:.1} MB", pod.image, size as f64 / 1e6));
    assert_eq!(pod.image_field("{{.Config.User}}"), "10001:10001", "the image runs as the fixed non-root user");
    assert_eq!(pod.image_field("{{.Config.StopSignal}}"), "SIGTERM");
    assert_eq!(pod.image_field(r#"{{index .Config.Labels "org.opencontainers.image.revision"}}"#), "test");

    let (port, http_port) = (support::free_port(), support::free_port());
    let ns = SocketAddr::from(([127, 0, 0, 1], port));
    let http = SocketAddr::from(([127, 0, 0, 1], http_port));
    let nsaddr = ns.to_string();
    let first = pod.run("namesrv-a", port, http_port);
    let up = support::eventually(Duration::from_secs(30), || matches!(get(http, "/health"), Ok((200, _))));
    assert!(up, "/health did not answer 200 through the published port:\n{}", pod.logs(&first));
    let (status, body) = get(http, "/ready").expect("/ready");
    assert_eq!(status, 200, "/ready: {body}");
    assert!(body.contains("\"ready\":true"), "/ready: {body}");
    step(t0, "container up: /health and /ready answer 200 from outside");

    let admin = MqAdmin::new(JAVA_5X);
    let client = JavaClient::new(JAVA_5X);
    let mut broker = Broker::start(JAVA_5X, "ContainerCluster", "container-broker", &nsaddr);
    let took = wait_registered(ns, &broker, Duration::from_secs(60));
    step(t0, &format!("Java {JAVA_5X} broker registered through the published port ({took:?} after boot)"));
    let topic = "ContainerTopic";
    let out = admin.ok(&nsaddr, &["updateTopic", "-c", "ContainerCluster", "-t", topic, "-r", "2", "-w", "2"]);
    assert!(out.contains("success"), "updateTopic output:\n{out}");
    wait_for("the topic's route", Duration::from_secs(25), || route(ns, topic), || pod.logs(&first));
    let brokers = client.produce(&nsaddr, topic, N, "box");
    assert!(brokers.iter().all(|b| b == "container-broker"), "messages went to {brokers:?}");
    let got = client.consume(&nsaddr, topic, "container_cg", N, "box", Duration::from_secs(90));
    assert_eq!(got, expected_bodies("box", N), "consumer received the wrong set");
    step(t0, &format!("Java producer sent {N} messages, the push consumer received all {N}"));

    let mut c = Client::connect(ns);
    let put = c.cmd(100).with_ext("namespace", "ContainerNS").with_ext("key", "kept").with_ext("value", "on-volume");
    assert_eq!(c.request(put).code, 0, "PUT_KV_CONFIG");

    // Stop with clients connected: a Java push consumer that would wait for more, the broker, and a raw 5.x
    // client asking all along. Each asker's GO_AWAY replies are counted.
    let before = metric(http, "namesrv_connections_open");
    let log = client.user_home().join("container-consumer.out");
    let mut consumer = client.spawn_consumer(&nsaddr, topic, "container_cg_stop", (N + 1, "box", 120), &log);
    let connected = support::eventually(Duration::from_secs(60), || {
        metric(http, "namesrv_connections_open") > before || consumer.wait_exit(Duration::ZERO).is_some()
    });
    assert!(connected, "the background consumer never connected\n{}", support::tail(&log, 40));
    consumer.assert_running();
    let asking = Arc::new(AtomicBool::new(true));
    let asker = {
        let asking = asking.clone();
        std::thread::spawn(move || {
            let (mut go_away, mut served, mut remark) = (0, 0, None);
            while asking.load(Ordering::Relaxed) {
                let mut cmd = c.cmd(106);
                cmd.version = VERSION_5X;
                match c.try_request(cmd, Duration::from_secs(2)) {
                    Ok(r) if r.code == 0 => served += 1,
                    Ok(r) => {
                        assert_eq!(r.code, 1500, "only SUCCESS or GO_AWAY while draining: {:?}", r.remark);
                        go_away += 1;
                        remark = r.remark;
                    }
                    Err(_) => break,
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            (served, go_away, remark)
        })
    };
    let (stop_took, code) = pod.stop(&first, GRACE);
    asking.store(false, Ordering::Relaxed);
    let (served, go_away, remark) = asker.join().expect("asker");
    let logs = pod.logs(&first);
    step(t0, &format!("podman stop took {stop_took:?} (drain {DRAIN:?}, grace {GRACE:?}); exit code {code}"));
    eprintln!("         raw 5.x client: {served} answered, {go_away} GO_AWAY ({remark:?}), then the connection closed");
    eprintln!("--- container log ---\n{logs}");
    assert_eq!(code, 0, "the container's exit code after SIGTERM:\n{logs}");
    assert!(stop_took >= DRAIN, "stopped after {stop_took:?}, before the {DRAIN:?} drain:\n{logs}");
    assert!(stop_took < GRACE - Duration::from_secs(5), "the drain ran into the grace period: {stop_took:?}");
    assert!(go_away > 0, "the 5.x client was never told GO_AWAY while draining:\n{logs}");
    assert_eq!(remark.as_deref(), Some("please go away"));
    assert!(logs.contains("stopped complete=true"), "the server did not finish its drain cleanly:\n{logs}");
    let client_log = client.user_home().join("logs/rocketmqlogs/rocketmq_client.log");
    let saw: Vec<String> = support::tail(&client_log, 100_000)
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("go away") || l.contains("GO_AWAY"))
        .map(|l| l.chars().take(200).collect())
        .collect();
    eprintln!("         Java consumer's client log on GO_AWAY: {saw:#?}");
    consumer.kill();
    broker.kill();

    // A new container on the same volume: the KV pair written through the first one is there.
    pod.remove(&first);
    let second = pod.run("namesrv-b", port, http_port);
    let up = support::eventually(Duration::from_secs(30), || matches!(get(http, "/health"), Ok((200, _))));
    assert!(up, "the second container did not come up:\n{}", pod.logs(&second));
    assert_eq!(kv_get(ns, "ContainerNS", "kept").as_deref(), Some("on-volume"), "{}", pod.logs(&second));
    let (status, body) = get(http, "/cluster").unwrap_or((0, String::new()));
    step(t0, &format!("KV pair survived a new container on the volume; /cluster {status} {}", squash(&body)));
}
