use super::*;
use crate::model::DataVersion;
use crate::state::routes::test_util::{reg, unreg};
use crate::state::routes::{RouteSettings, RouteTables};

const S: RouteSettings =
    RouteSettings { delete_topic_with_broker_registration: false, notify_min_broker_id_changed: false };
const MIN: i64 = 60_000;

fn live(cluster: &str, addr: &str, last_update_ms: i64) -> LiveRow {
    LiveRow {
        cluster: cluster.into(),
        addr: addr.into(),
        last_update_ms,
        timeout_ms: 120_000,
        data_version: DataVersion::default(),
        ha_server_addr: String::new(),
    }
}

fn removal(cluster: &str, name: &str, id: i64, addr: &str, at_ms: i64) -> Removal {
    Removal {
        at_ms,
        cluster: cluster.into(),
        broker_name: name.into(),
        broker_id: id,
        addr: addr.into(),
        cause: "connection_closed",
    }
}

struct Case {
    tables: RouteTables,
    live: Vec<LiveRow>,
    removed: Vec<Removal>,
    fleet: Vec<PeerDrift>,
    acting: bool,
    now: i64,
}

impl Case {
    /// Two groups of cluster c, master and slave each, both live and fresh at `now`.
    fn two_groups() -> Case {
        let mut tables = RouteTables::new();
        let now = 10 * MIN;
        let mut live_rows = Vec::new();
        for (name, topics) in [("a", ["TA", "Shared"]), ("b", ["TB", "Shared"])] {
            for id in [0, 1] {
                let addr = format!("{name}{id}:10911");
                tables.register_broker(reg("c", name, id, &addr, &topics, 1), now, S);
                live_rows.push(live("c", &addr, now));
            }
        }
        Case { tables, live: live_rows, removed: vec![], fleet: vec![], acting: false, now }
    }

    fn health(&self) -> Health {
        let view = self.tables.view();
        verdicts(&Inputs {
            census: &view.write_census(TOPIC_SAMPLE),
            view: &view,
            support_acting_master: self.acting,
            live: &self.live,
            removed: &self.removed,
            fleet: &self.fleet,
            now_ms: self.now,
            loss_window_ms: 10 * MIN,
        })
    }

    /// The master of group a closed its connection a minute ago.
    fn lose_master_of_a(&mut self) {
        self.tables.unregister_brokers(&[unreg("c", "a", 0, "a0:10911")], S);
        self.live.retain(|r| &*r.addr != "a0:10911");
        self.removed.push(removal("c", "a", 0, "a0:10911", self.now - MIN));
    }
}

fn kinds(h: &Health) -> Vec<(Kind, Severity)> {
    h.verdicts.iter().map(|v| (v.kind, v.severity)).collect()
}

#[test]
fn a_healthy_cluster_has_no_verdict() {
    let h = Case::two_groups().health();
    assert_eq!(h.status, Severity::Ok);
    assert!(h.verdicts.is_empty(), "{h:#?}");
    assert_eq!(h.counts.len(), KINDS.len(), "every kind is counted, zeros too");
}

#[test]
fn a_group_without_master_is_critical_and_names_its_topics() {
    let mut c = Case::two_groups();
    c.lose_master_of_a();
    let h = c.health();
    assert_eq!(h.status, Severity::Critical);
    let v = h.verdicts.iter().find(|v| v.kind == Kind::NoMaster).expect("no_master verdict");
    assert_eq!(v.severity, Severity::Critical);
    assert_eq!((v.cluster.as_deref(), v.broker_name.as_deref()), (Some("c"), Some("a")));
    assert_eq!(v.topics, vec!["Shared".to_string(), "TA".to_string()]);
    assert!(v.title.contains("no master") && v.title.contains("id 1 at a1:10911"), "{}", v.title);
    // TA is on a alone: no producer can send to it; Shared still has b's master.
    let w = h.verdicts.iter().find(|v| v.kind == Kind::NoWritableQueue).expect("no_writable_queue verdict");
    assert_eq!((w.severity, w.topics.clone(), w.topic_count), (Severity::Critical, vec!["TA".to_string()], 1));
    assert_eq!(h.unwritable_topics, 1);
    // The master left a minute ago and is not back.
    assert!(kinds(&h).contains(&(Kind::BrokersLost, Severity::Warning)), "{h:#?}");
    // Most severe first.
    assert!(h.verdicts.windows(2).all(|w| w[0].severity >= w[1].severity));
}

#[test]
fn acting_master_is_a_warning_only_when_both_sides_enable_it() {
    for (broker_enables, server_supports, want) in
        [(true, true, Kind::ActingMaster), (true, false, Kind::NoMaster), (false, true, Kind::NoMaster)]
    {
        let mut c = Case::two_groups();
        c.acting = server_supports;
        for id in [0, 1] {
            let mut r = reg("c", "a", id, &format!("a{id}:10911"), &["TA", "Shared"], 2);
            r.enable_acting_master = Some(broker_enables);
            c.tables.register_broker(r, c.now, S);
        }
        c.lose_master_of_a();
        let h = c.health();
        let groups: Vec<Kind> =
            h.verdicts.iter().map(|v| v.kind).filter(|k| matches!(k, Kind::NoMaster | Kind::ActingMaster)).collect();
        assert_eq!(groups, vec![want], "broker {broker_enables}, server {server_supports}: {h:#?}");
    }
}

#[test]
fn a_wiped_group_is_a_warning() {
    let mut c = Case::two_groups();
    c.tables.wipe_write_perm("b");
    let h = c.health();
    let v = h.verdicts.iter().find(|v| v.kind == Kind::WriteWiped).expect("write_wiped verdict");
    assert_eq!((v.severity, v.broker_name.as_deref()), (Severity::Warning, Some("b")));
    assert!(v.title.contains("addWritePerm"), "{}", v.title);
    // TB is on b alone: read-only now, a setting and not an outage.
    let w = h.verdicts.iter().find(|v| v.kind == Kind::NoWritableQueue).unwrap();
    assert_eq!((w.severity, w.topic_count), (Severity::Warning, 1));
    c.tables.add_write_perm("b");
    assert!(c.health().verdicts.is_empty());
}

#[test]
fn a_heartbeat_is_late_past_half_the_timeout_and_critical_past_all_of_it() {
    for (age_s, want) in [(30, None), (60, None), (61, Some(Severity::Warning)), (121, Some(Severity::Critical))] {
        let mut c = Case::two_groups();
        c.live[0].last_update_ms = c.now - age_s * 1000;
        let h = c.health();
        let late: Vec<&Verdict> = h.verdicts.iter().filter(|v| v.kind == Kind::HeartbeatLate).collect();
        assert_eq!(late.first().map(|v| v.severity), want, "age {age_s} s: {h:#?}");
        if let Some(v) = late.first() {
            assert_eq!((v.broker_name.as_deref(), v.addr.as_deref()), (Some("a"), Some("a0:10911")));
            assert!(v.title.contains(&format!("{age_s} s ago")), "{}", v.title);
        }
    }
}

#[test]
fn a_lost_broker_is_a_verdict_until_it_is_back_or_the_window_passed() {
    let mut c = Case::two_groups();
    c.removed.push(removal("c", "b", 1, "b1:10911", c.now - 2 * MIN));
    c.live.retain(|r| &*r.addr != "b1:10911");
    let lost = |c: &Case| c.health().verdicts.into_iter().filter(|v| v.kind == Kind::BrokersLost).collect::<Vec<_>>();
    let v = lost(&c);
    assert_eq!(v.len(), 1);
    assert!(
        v[0].title.contains("lost 1 broker in the last 10 min") && v[0].title.contains("120 s ago"),
        "{}",
        v[0].title
    );
    // Beyond the window: forgotten.
    c.now += 9 * MIN;
    assert!(lost(&c).is_empty());
    c.now -= 9 * MIN;
    // Back (live again): not lost.
    c.live.push(live("c", "b1:10911", c.now));
    assert!(lost(&c).is_empty());
}

#[test]
fn fleet_peers_that_differ_or_cannot_be_read_are_warnings() {
    let mut c = Case::two_groups();
    c.fleet = vec![
        PeerDrift { peer: "ns2:9876".into(), reachable: true, error: None, aspects: vec![] },
        PeerDrift { peer: "ns3:9876".into(), reachable: true, error: None, aspects: vec![("kv", 2)] },
        PeerDrift { peer: "ns4:9876".into(), reachable: false, error: Some("timed out".into()), aspects: vec![] },
    ];
    let h = c.health();
    let titles: Vec<&str> = h.verdicts.iter().map(|v| v.title.as_str()).collect();
    assert_eq!(h.counts["fleet_drift"], 2, "{titles:?}");
    assert!(titles.iter().any(|t| t.contains("ns3:9876") && t.contains("2 kv")), "{titles:?}");
    assert!(titles.iter().any(|t| t.contains("ns4:9876") && t.contains("timed out")), "{titles:?}");
}

#[test]
fn metrics_name_every_kind_and_the_status() {
    let mut c = Case::two_groups();
    c.lose_master_of_a();
    let mut text = String::new();
    render_metrics(&c.health(), &mut text);
    for kind in KINDS {
        assert!(text.contains(&format!("namesrv_health_verdicts{{kind=\"{}\",severity=\"critical\"}}", kind.name())));
    }
    assert!(text.contains("namesrv_health_verdicts{kind=\"no_master\",severity=\"critical\"} 1"), "{text}");
    assert!(text.contains("namesrv_health_status 2") && text.contains("namesrv_health_unwritable_topics 1"), "{text}");
}

#[test]
fn the_json_has_the_console_s_shape() {
    let mut c = Case::two_groups();
    c.lose_master_of_a();
    let v = serde_json::to_value(c.health()).unwrap();
    assert_eq!(v["status"], "critical");
    assert_eq!(v["verdicts"][0]["kind"], "no_master");
    assert_eq!(v["verdicts"][0]["brokerName"], "a");
    assert_eq!(v["verdicts"][0]["topicCount"], 2);
    assert_eq!(v["counts"]["no_master"], 1);
}
