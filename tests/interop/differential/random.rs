//! Seeded random sequences against the real Java name server (5.5.0) and ours: registrations of broker groups
//! (ids 0–2, topic subsets with random perms, queue counts and sys flags, acting master on/off, zones, filter
//! servers, 4.9 and 5.x bodies, compressed or not, JSON or ROCKETMQ headers, same or new DataVersion),
//! unregistrations, dropped broker connections, expiry, heartbeats, QUERY_DATA_VERSION, write-permission changes,
//! topic deletion and registration (217), KV writes and runtime config changes; after every write the cluster
//! info and the route of every topic are compared, plus one random other read (topic lists, member groups, KV,
//! config). Every reply goes through the harness's comparison (`support::differ`).
//!
//! The suite runs a few fixed seeds. By hand, longer:
//!
//! ```sh
//! NAMESRV_DIFF_SEEDS=1-200 NAMESRV_DIFF_STEPS=300 cargo test --test differential random -- --nocapture
//! ```
//!
//! (`NAMESRV_DIFF_SEEDS` also takes a list: `7,19,23`.) A failing seed stops the run and prints its operations.
//!
//! The sequences keep to what real brokers do where Java and ours deliberately differ (docs/compatibility.md): each
//! broker address belongs to one group and one id and registers on a connection of its own, so no connection is
//! shared and no address is displaced from its group. Seeds share one pair of servers; each seed uses names of
//! its own and removes its brokers, KV entries and topics at the end.

use std::time::{Duration, Instant};

use namesrv::model::{DataVersion, RegisterBrokerBody, TopicConfig};
use namesrv::protocol::body::encode_register_broker_body;
use namesrv::protocol::{RemotingCommand, SerializeType};

use super::crc32;
use super::support::differ::{code, exact, run_script, Check, Run};
use super::support::normalize::{normalize, Body, Canon, Normalized};
use super::support::rng::Rng;

const DEFAULT_SEEDS: &[u64] = &[1, 2, 3];
const DEFAULT_STEPS: usize = 100;
/// Groups per seed, ids per group, topics per seed.
const GROUPS: usize = 5;
const IDS: i64 = 3;
const TOPICS: usize = 8;
/// `scanNotActiveBrokerInterval` of both servers, and the heartbeat timeout of brokers made to expire.
const SCAN_MS: u64 = 1000;
const SHORT_TIMEOUT_MS: i64 = 1000;
/// How long an expiry may take (Java's first scan runs 5 s after its start).
const EXPIRY_WAIT: Duration = Duration::from_secs(15);

#[test]
#[ignore = "real peer: Java 5.5.0 name server"]
fn random_sequences_match_java_5x() {
    let seeds = env_seeds();
    let steps = std::env::var("NAMESRV_DIFF_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_STEPS);
    let home = std::env::temp_dir().to_string_lossy().into_owned();
    let scan = SCAN_MS.to_string();
    run_script("random", &[("scanNotActiveBrokerInterval", &scan)], &[("rocketmqHome", &home)], |run| {
        for seed in seeds {
            let t0 = Instant::now();
            let before = run.steps;
            let mut w = World::new(seed);
            if let Err(log) = w.run(run, steps) {
                run.failures.push(format!("seed {seed} (NAMESRV_DIFF_SEEDS={seed}) failed; its operations:\n{log}"));
                return;
            }
            eprintln!("random seed {seed}: {} steps in {:?}", run.steps - before, t0.elapsed());
        }
    });
}

/// `NAMESRV_DIFF_SEEDS`: `a-b` or `a,b,c`.
fn env_seeds() -> Vec<u64> {
    let Ok(s) = std::env::var("NAMESRV_DIFF_SEEDS") else {
        return DEFAULT_SEEDS.to_vec();
    };
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (u64, u64) = (a.trim().parse().expect("seed"), b.trim().parse().expect("seed"));
        return (a..=b).collect();
    }
    s.split(',').map(|x| x.trim().parse().expect("seed")).collect()
}

/// One broker: a group member at a fixed id and address.
struct Member {
    cluster: String,
    group: String,
    id: i64,
    addr: String,
    /// Connections are named `addr#gen`; a new generation after each close.
    conn_gen: u32,
    /// The DataVersion it last registered with.
    dv: DataVersion,
}

impl Member {
    fn conn(&self) -> String {
        format!("{}#{}", self.addr, self.conn_gen)
    }

    /// `c` naming this broker as 104, 322 and 904 do: cluster, address, group and id.
    fn named(&self, c: RemotingCommand) -> RemotingCommand {
        c.with_ext("clusterName", self.cluster.as_str())
            .with_ext("brokerAddr", self.addr.as_str())
            .with_ext("brokerName", self.group.as_str())
            .with_ext("brokerId", self.id.to_string())
    }
}

struct World {
    seed: u64,
    rng: Rng,
    prefix: String,
    clusters: Vec<String>,
    groups: Vec<String>,
    topics: Vec<String>,
    members: Vec<Member>,
    namespaces: Vec<String>,
    /// What was done, for the failure report.
    log: Vec<String>,
    /// Step of the sequence.
    step: usize,
    expired_once: bool,
}

const ORDER_NS: &str = "ORDER_TOPIC_CONFIG";
const ZONES: [&str; 2] = ["z1", "z2"];
const CONFIG_KEYS: [&str; 6] = [
    "orderMessageEnable",
    "returnOrderTopicConfigToBroker",
    "supportActingMaster",
    "enableAllTopicList",
    "enableTopicList",
    "deleteTopicWithBrokerRegistration",
];
const CONFIG_DEFAULTS: &str = "orderMessageEnable=false\nreturnOrderTopicConfigToBroker=true\n\
    supportActingMaster=false\nenableAllTopicList=true\nenableTopicList=true\n\
    deleteTopicWithBrokerRegistration=false\n";

impl World {
    fn new(seed: u64) -> World {
        let prefix = format!("r{seed}");
        let clusters = vec![format!("{prefix}C0"), format!("{prefix}C1")];
        let groups: Vec<String> = (0..GROUPS).map(|g| format!("{prefix}-g{g}")).collect();
        let mut members = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            for id in 0..IDS {
                let port = 20_000 + (seed % 400) * 100 + g as u64 * 10 + id as u64;
                members.push(Member {
                    cluster: clusters[g % 2].clone(),
                    group: group.clone(),
                    id,
                    addr: format!("127.0.0.1:{port}"),
                    conn_gen: 0,
                    dv: DataVersion { counter: 0, state_version: 0, timestamp: 1_700_000_000_000 },
                });
            }
        }
        World {
            seed,
            rng: Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5EED),
            topics: (0..TOPICS).map(|t| format!("{prefix}T{t}")).collect(),
            namespaces: vec![format!("{prefix}NS0"), format!("{prefix}NS1"), ORDER_NS.to_string()],
            prefix,
            clusters,
            groups,
            members,
            log: Vec::new(),
            step: 0,
            expired_once: false,
        }
    }

    fn note(&mut self, what: String) {
        self.log.push(format!("#{} {what}", self.step));
    }

    fn name(&self, what: &str) -> String {
        format!("[seed {} #{}] {what}", self.seed, self.step)
    }

    /// Runs `steps` operations; `Err` carries the operation log when a comparison failed.
    fn run(&mut self, run: &mut Run, steps: usize) -> Result<(), String> {
        update_config(run, &self.name("reset config"), CONFIG_DEFAULTS);
        let expiry_at = self.rng.below(steps.max(1));
        for step in 0..steps {
            self.step = step;
            let failures = run.failures.len();
            if step == expiry_at && !self.expired_once {
                self.expire(run);
            } else {
                self.one_op(run);
            }
            if run.failures.len() > failures {
                return Err(self.log.join("\n"));
            }
        }
        self.step = steps;
        let failures = run.failures.len();
        self.clean_up(run);
        if run.failures.len() > failures {
            return Err(self.log.join("\n"));
        }
        Ok(())
    }

    fn one_op(&mut self, run: &mut Run) {
        let roll = self.rng.below(100);
        match roll {
            0..=34 => {
                let m = self.pick_member();
                self.register(run, m, None)
            }
            35..=42 => self.unregister(run),
            43..=47 => self.drop_connection(run),
            48..=50 => self.heartbeat(run),
            51..=54 => self.query_data_version(run),
            55..=59 => self.perm(run),
            60..=63 => self.delete_topic(run),
            64..=68 => self.register_topic(run),
            69..=75 => self.kv_write(run),
            76..=79 => self.config_write(run),
            _ => {
                self.random_read(run);
                return;
            }
        }
        self.compare_state(run);
    }

    // ----------------------------------------------------------------------------------------------- writes

    /// REGISTER_BROKER from member `m`; `timeout` sets `heartbeatTimeoutMillis` (and at least two topics, so that
    /// a new member is never refused).
    fn register(&mut self, run: &mut Run, m: usize, timeout: Option<i64>) {
        let five = self.rng.chance(80);
        let acting = if five { Some(self.rng.chance(40)) } else { None };
        let mut topics = Vec::new();
        let n = if timeout.is_some() { 2 + self.rng.below(3) } else { self.rng.pick(&[0, 1, 2, 2, 3, 3, 4, 5]) };
        let mut pool: Vec<usize> = (0..TOPICS).collect();
        for _ in 0..n {
            let t = self.topics[pool.swap_remove(self.rng.below(pool.len()))].clone();
            let q = 1 + self.rng.below(8) as i32;
            topics.push(TopicConfig {
                topic_name: t.into(),
                read_queue_nums: q,
                write_queue_nums: if self.rng.chance(80) { q } else { 1 + self.rng.below(8) as i32 },
                perm: self.rng.pick(&[6, 6, 6, 4, 7, 2]),
                topic_sys_flag: self.rng.pick(&[0, 0, 0, 1, 2, 3]),
            });
        }
        let member_dv = self.members[m].dv;
        let dv = if member_dv.counter == 0 || self.rng.chance(70) {
            DataVersion { counter: member_dv.counter + 1, ..member_dv }
        } else {
            member_dv
        };
        self.members[m].dv = dv;
        let filters = match self.rng.below(10) {
            0..=5 => None,
            6..=8 => Some(Vec::new()),
            _ => Some(vec![format!("127.0.0.1:{}", 50_000 + self.rng.below(1000))]),
        };
        let body = RegisterBrokerBody {
            data_version: dv,
            topic_configs: topics,
            mapping_infos: Vec::new(),
            filter_server_list: filters,
        };
        let compressed = self.rng.chance(20);
        let zone = if self.rng.chance(50) { Some(self.rng.pick(&ZONES)) } else { None };
        let encoding = if self.rng.chance(20) { SerializeType::RocketMq } else { SerializeType::Json };
        let version = if five { 513 } else { 409 };
        let mut bytes = encode_register_broker_body(&body, compressed, version);
        // Sometimes no filterServerList key at all (Java: an empty list) instead of null.
        let keyless = !compressed && body.filter_server_list.is_none() && self.rng.chance(50);
        if keyless {
            let json = String::from_utf8(bytes).expect("JSON body");
            bytes = json.replacen("\"filterServerList\":null,", "", 1).into_bytes();
        }
        let mm = &self.members[m];
        let mut c = run
            .req(103)
            .with_ext("brokerName", mm.group.as_str())
            .with_ext("brokerAddr", mm.addr.as_str())
            .with_ext("clusterName", mm.cluster.as_str())
            .with_ext("haServerAddr", mm.addr.replace("127.0.0.1", "127.0.0.2"))
            .with_ext("brokerId", mm.id.to_string())
            .with_ext("compressed", compressed.to_string())
            .with_ext("bodyCrc32", crc32(&bytes).to_string());
        if let Some(a) = acting {
            c = c.with_ext("enableActingMaster", a.to_string());
        }
        if let Some(z) = zone {
            c = c.with_ext("__ZONE_NAME", z);
        }
        if let Some(t) = timeout {
            c = c.with_ext("heartbeatTimeoutMillis", t.to_string());
        }
        c.version = version;
        c.serialize_type = encoding;
        let c = c.with_body(bytes);
        let what = format!(
            "register {} id {} at {} ({}, acting {acting:?}, zone {zone:?}, timeout {timeout:?}, dv {}, {}{}{}): {:?}",
            mm.group,
            mm.id,
            mm.addr,
            if five { "5.x" } else { "4.9" },
            dv.counter,
            if compressed { "zlib, " } else { "" },
            encoding.name(),
            match (&body.filter_server_list, keyless) {
                (Some(f), _) => format!(", filters {f:?}"),
                (None, true) => ", no filter key".to_string(),
                (None, false) => String::new(),
            },
            body.topic_configs
                .iter()
                .map(|t| format!(
                    "{}:{}/{}/p{}/f{}",
                    t.topic_name, t.read_queue_nums, t.write_queue_nums, t.perm, t.topic_sys_flag
                ))
                .collect::<Vec<_>>(),
        );
        let conn = mm.conn();
        self.note(what.clone());
        run.exchange(&self.name(&what), &conn, c, Check::default());
    }

    fn pick_member(&mut self) -> usize {
        // Masters more often than slaves.
        let g = self.rng.below(GROUPS);
        let id = self.rng.pick(&[0, 0, 0, 1, 1, 2]);
        g * IDS as usize + id as usize
    }

    /// UNREGISTER_BROKER of a member (sometimes naming another id: Java removes by address), or of nobody.
    fn unregister(&mut self, run: &mut Run) {
        if self.rng.chance(10) {
            let c = run
                .req(104)
                .with_ext("brokerName", format!("{}-nobody", self.prefix))
                .with_ext("brokerAddr", "127.0.0.1:1")
                .with_ext("clusterName", self.clusters[0].as_str())
                .with_ext("brokerId", "0");
            self.note("unregister nobody".into());
            run.exchange(&self.name("unregister nobody"), "admin", c, exact(0));
            return;
        }
        let m = self.pick_member();
        let id = if self.rng.chance(10) { self.members[m].id + 7 } else { self.members[m].id };
        let mm = &self.members[m];
        let c = run
            .req(104)
            .with_ext("brokerName", mm.group.as_str())
            .with_ext("brokerAddr", mm.addr.as_str())
            .with_ext("clusterName", mm.cluster.as_str())
            .with_ext("brokerId", id.to_string());
        let what = format!("unregister {} id {id} at {}", mm.group, mm.addr);
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
        self.settle_gone(run, m);
    }

    /// Closes a member's connection on both servers: the broker registered on it is evicted.
    fn drop_connection(&mut self, run: &mut Run) {
        let m = self.pick_member();
        let conn = self.members[m].conn();
        if !run.java.conns.contains_key(&conn) {
            return self.register(run, m, None);
        }
        let what = format!("drop the connection of {} id {}", self.members[m].group, self.members[m].id);
        self.note(what.clone());
        let live = self.query_live(run, m, &what);
        run.close(&conn);
        self.members[m].conn_gen += 1;
        if live {
            self.settle_gone(run, m);
        }
    }

    /// One member registers with a short heartbeat timeout and nothing refreshes it: both servers evict it (and
    /// close its connection).
    fn expire(&mut self, run: &mut Run) {
        self.expired_once = true;
        let m = self.pick_member();
        self.register(run, m, Some(SHORT_TIMEOUT_MS));
        let what = format!("wait for {} id {} to expire", self.members[m].group, self.members[m].id);
        self.note(what);
        let (group, addr) = (self.members[m].group.clone(), self.members[m].addr.clone());
        for side in [&mut run.java, &mut run.ours] {
            super::support::eventually(EXPIRY_WAIT, || {
                let c = RemotingCommand::request(106, side.conn("ctl").opaque());
                !group_holds(&normalize(&side.conn("ctl").request(c)), &group, &addr)
            });
        }
        self.serialize(run);
        // The servers closed its connection.
        let conn = self.members[m].conn();
        for side in [&mut run.java, &mut run.ours] {
            side.conns.remove(&conn);
        }
        self.members[m].conn_gen += 1;
        self.compare_state(run);
    }

    fn heartbeat(&mut self, run: &mut Run) {
        let m = self.pick_member();
        let mm = &self.members[m];
        let c = mm.named(run.req(904));
        let what = format!("heartbeat of {} id {}", mm.group, mm.id);
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn query_data_version(&mut self, run: &mut Run) {
        let m = self.pick_member();
        let dv = match self.rng.below(3) {
            0 => Some(self.members[m].dv),
            1 => Some(DataVersion { counter: self.rng.below(5) as i64, ..self.members[m].dv }),
            _ => None,
        };
        let mm = &self.members[m];
        let mut c = mm.named(run.req(322));
        if let Some(dv) = dv {
            c = c.with_body(super::data_version_json(&dv));
        }
        let what = format!("query data version of {} id {} with {:?}", mm.group, mm.id, dv.map(|d| d.counter));
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn perm(&mut self, run: &mut Run) {
        let code = if self.rng.chance(50) { 205 } else { 327 };
        let name = if self.rng.chance(90) {
            self.groups[self.rng.below(GROUPS)].clone()
        } else {
            format!("{}-nobody", self.prefix)
        };
        let c = run.req(code).with_ext("brokerName", name.as_str());
        let what = format!("{} write perm of {name}", if code == 205 { "wipe" } else { "add" });
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn delete_topic(&mut self, run: &mut Run) {
        let t = self.topics[self.rng.below(TOPICS)].clone();
        let cluster = match self.rng.below(5) {
            0 => None,
            1 => Some(String::new()),
            2 => Some(format!("{}-nowhere", self.prefix)),
            n => Some(self.clusters[n - 3].clone()),
        };
        let mut c = run.req(216).with_ext("topic", t.as_str());
        if let Some(cl) = &cluster {
            c = c.with_ext("clusterName", cl.as_str());
        }
        let what = format!("delete topic {t} in {cluster:?}");
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn register_topic(&mut self, run: &mut Run) {
        let t = if self.rng.chance(80) {
            self.topics[self.rng.below(TOPICS)].clone()
        } else {
            format!("{}T-new{}", self.prefix, self.rng.below(3))
        };
        let mut entries = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let entry = match self.rng.below(10) {
                0 => "{\"perm\":6,\"readQueueNums\":2,\"writeQueueNums\":2}".to_string(),
                1 => format!(
                    "{{\"brokerName\":\"{}-ghost\",\"perm\":6,\"readQueueNums\":2,\"writeQueueNums\":2}}",
                    self.prefix
                ),
                _ => {
                    let q = 1 + self.rng.below(8);
                    format!(
                        "{{\"brokerName\":\"{}\",\"perm\":{},\"readQueueNums\":{q},\"topicSysFlag\":{},\"writeQueueNums\":{q}}}",
                        self.groups[self.rng.below(GROUPS)],
                        self.rng.pick(&[6, 4, 7, 2]),
                        self.rng.pick(&[0, 1, 2, 3]),
                    )
                }
            };
            entries.push(entry);
        }
        let body = format!("{{\"queueDatas\":[{}]}}", entries.join(","));
        let what = format!("register topic {t}: {body}");
        let c = run.req(217).with_ext("topic", t.as_str()).with_body(body.into_bytes());
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn kv_write(&mut self, run: &mut Run) {
        let ns = self.namespaces[self.rng.below(self.namespaces.len())].clone();
        let key = if ns == ORDER_NS {
            self.topics[self.rng.below(TOPICS)].clone()
        } else {
            format!("k{}", self.rng.below(4))
        };
        let (c, what) = if self.rng.chance(70) {
            let value = format!("{}:{}", self.groups[self.rng.below(GROUPS)], 1 + self.rng.below(8));
            let c = run.req(100).with_ext("namespace", ns.as_str()).with_ext("key", key.as_str());
            (c.with_ext("value", value.as_str()), format!("put kv {ns}/{key}={value}"))
        } else {
            let c = run.req(102).with_ext("namespace", ns.as_str()).with_ext("key", key.as_str());
            (c, format!("delete kv {ns}/{key}"))
        };
        self.note(what.clone());
        run.exchange(&self.name(&what), "admin", c, exact(0));
    }

    fn config_write(&mut self, run: &mut Run) {
        let key = self.rng.pick(&CONFIG_KEYS);
        let value = self.rng.chance(50);
        let what = format!("update config {key}={value}");
        self.note(what.clone());
        update_config(run, &self.name(&what), &format!("{key}={value}\n"));
    }

    // ----------------------------------------------------------------------------------------------- reads

    /// Cluster info and every topic's route.
    fn compare_state(&mut self, run: &mut Run) {
        let c = run.req(106);
        run.exchange(&self.name("cluster info"), "client", c, code(0));
        for i in 0..TOPICS {
            let t = self.topics[i].clone();
            let version = self.rng.pick(&[513, 513, 317]);
            let mut c = run.req(105).with_ext("topic", t.as_str());
            c.version = version;
            run.exchange(&self.name(&format!("route {t} v{version}")), "client", c, Check::default());
        }
    }

    fn random_read(&mut self, run: &mut Run) {
        let (name, c) = match self.rng.below(12) {
            0 => {
                let t = self.topics[self.rng.below(TOPICS)].clone();
                let zone = self.rng.pick(&["z1", "Z2", "z3", " "]);
                let c = run.req(105).with_ext("topic", t.as_str()).with_ext("__ZONE_MODE", "true");
                (format!("route {t} in zone {zone:?}"), c.with_ext("__ZONE_NAME", zone))
            }
            1 => {
                let t = self.topics[self.rng.below(TOPICS)].clone();
                let mut c = run.req(105).with_ext("topic", t.as_str());
                c.serialize_type = SerializeType::RocketMq;
                c.version = 317;
                (format!("route {t}, ROCKETMQ header v317"), c)
            }
            2 => ("all topics".into(), run.req(206)),
            3 => {
                let cl = self.clusters[self.rng.below(2)].clone();
                (format!("topics of {cl}"), run.req(224).with_ext("cluster", cl.as_str()))
            }
            4 => ("system topics".into(), run.req(304)),
            5..=7 => {
                let n = 311 + self.rng.below(3) as i32;
                (format!("unit topic list {n}"), run.req(n))
            }
            8 => {
                let g = self.groups[self.rng.below(GROUPS)].clone();
                let c =
                    run.req(901).with_ext("clusterName", self.clusters[0].as_str()).with_ext("brokerName", g.as_str());
                (format!("member group of {g}"), c)
            }
            9 => {
                let ns = self.namespaces[self.rng.below(self.namespaces.len())].clone();
                (format!("kv list of {ns}"), run.req(219).with_ext("namespace", ns.as_str()))
            }
            10 => {
                let ns = self.namespaces[self.rng.below(self.namespaces.len())].clone();
                let key = if ns == ORDER_NS { self.topics[0].clone() } else { format!("k{}", self.rng.below(4)) };
                let c = run.req(101).with_ext("namespace", ns.as_str()).with_ext("key", key.as_str());
                (format!("get kv {ns}/{key}"), c)
            }
            _ => {
                let c = run.req(319);
                self.note("get config".into());
                run.exchange_props(&self.name("get config"), "admin", c, code(0));
                return;
            }
        };
        self.note(format!("read: {name}"));
        run.exchange(&self.name(&name), "client", c, Check::default());
    }

    // ----------------------------------------------------------------------------------------------- settling

    /// Compared QUERY_DATA_VERSION without a body: true when Java holds a live entry for the member.
    fn query_live(&mut self, run: &mut Run, m: usize, what: &str) -> bool {
        let mm = &self.members[m];
        let c = mm.named(run.req(322));
        let j = run.exchange(&self.name(&format!("{what}: live before")), "admin", c, exact(0));
        !matches!(j.body, Body::Empty)
    }

    /// Waits until each server has removed the member (Java unregisters on a background thread): its group no
    /// longer holds its address and its live entry is gone.
    fn settle_gone(&mut self, run: &mut Run, m: usize) {
        let mm = &self.members[m];
        let (group, addr) = (mm.group.clone(), mm.addr.clone());
        let c = RemotingCommand::request(106, 0);
        run.settle("ctl", &c, |n| !group_holds(n, &group, &addr));
        let c = RemotingCommand::request(322, 0)
            .with_ext("clusterName", mm.cluster.as_str())
            .with_ext("brokerAddr", mm.addr.as_str());
        run.settle("ctl", &c, |n| matches!(n.body, Body::Empty));
        self.serialize(run);
    }

    /// One request that takes Java's route read lock, so that an unregistration batch Java has begun is finished.
    fn serialize(&self, run: &mut Run) {
        let c = RemotingCommand::request(105, 0).with_ext("topic", self.topics[0].as_str());
        run.settle("ctl", &c, |_| true);
    }

    /// Unregisters every member, deletes the seed's KV entries and what is left of its topics.
    fn clean_up(&mut self, run: &mut Run) {
        self.note("clean up".into());
        update_config(run, &self.name("clean up: reset config"), CONFIG_DEFAULTS);
        for m in 0..self.members.len() {
            let mm = &self.members[m];
            let c = mm.named(run.req(104));
            run.exchange(&self.name("clean up: unregister"), "admin", c, exact(0));
            self.settle_gone(run, m);
            let conn = self.members[m].conn();
            run.close(&conn);
        }
        for ns in self.namespaces.clone() {
            let keys: Vec<String> =
                if ns == ORDER_NS { self.topics.clone() } else { (0..4).map(|k| format!("k{k}")).collect() };
            for key in keys {
                let c = run.req(102).with_ext("namespace", ns.as_str()).with_ext("key", key.as_str());
                run.exchange(&self.name("clean up: delete kv"), "admin", c, exact(0));
            }
        }
        let mut topics = self.topics.clone();
        topics.extend((0..3).map(|i| format!("{}T-new{i}", self.prefix)));
        for t in topics {
            let c = run.req(216).with_ext("topic", t.as_str());
            run.exchange(&self.name("clean up: delete topic"), "admin", c, exact(0));
        }
        self.compare_state(run);
        let c = run.req(206);
        run.exchange(&self.name("clean up: all topics"), "client", c, code(0));
    }
}

fn update_config(run: &mut Run, name: &str, text: &str) {
    let c = run.req(318).with_body(text.as_bytes().to_vec());
    run.exchange(name, "admin", c, exact(0));
}

/// Whether a cluster-info reply lists `addr` as a member of `group`.
fn group_holds(n: &Normalized, group: &str, addr: &str) -> bool {
    let Body::Json(Canon::Object(info)) = &n.body else {
        return false;
    };
    let Some(Canon::Object(table)) = info.get("brokerAddrTable") else {
        return false;
    };
    let Some(Canon::Object(bd)) = table.get(group) else {
        return false;
    };
    let Some(Canon::Object(addrs)) = bd.get("brokerAddrs") else {
        return false;
    };
    addrs.values().any(|a| *a == Canon::String(addr.to_string()))
}
