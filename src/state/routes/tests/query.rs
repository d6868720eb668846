//! Queries (§5.7, §5.8), perms (§5.9) and topic admin (§5.10).

use super::super::test_util::*;
use super::super::*;
use crate::model::{perm, sys_flag, QueueData};

fn names(l: &crate::model::TopicList) -> Vec<&str> {
    l.topic_list.iter().map(|t| &**t).collect()
}

/// A 217 queue data entry.
fn qd(broker: &str, perm: i32) -> Option<QueueData> {
    Some(QueueData { broker_name: broker.into(), read_queue_nums: 4, write_queue_nums: 4, perm, topic_sys_flag: 0 })
}

#[test]
fn route_is_sorted_and_missing_topics_have_none() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "bz", 0, "Z", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "ba", 0, "A", &["T", "U"], 1), 0, S);
    let r = t.view().route("T", false).unwrap();
    let qn: Vec<&str> = r.queue_datas.iter().map(|q| &*q.broker_name).collect();
    let bn: Vec<&str> = r.broker_datas.iter().map(|b| &*b.broker_name).collect();
    assert_eq!((qn, bn), (vec!["ba", "bz"], vec!["ba", "bz"]));
    assert!(r.filter_server_table.is_empty());
    assert!(r.order_topic_conf.is_none());
    assert!(t.view().route("nope", false).is_none());
}

#[test]
fn wipe_and_add_write_perm_count_topics() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U", "V"], 1), 0, S);
    assert_eq!(t.wipe_write_perm("b"), 3);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 4);
    // Already wiped: still counted, nothing published.
    let g = t.generation();
    assert_eq!(t.wipe_write_perm("b"), 3);
    assert_eq!(t.generation(), g);
    assert_eq!(t.add_write_perm("b"), 3);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 6);
    let mut r = reg("c", "b", 0, "A", &["T", "U", "V"], 2);
    r.body.topic_configs[0].perm = 7;
    t.register_broker(r, 0, S);
    t.add_write_perm("b");
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 6);
    assert_eq!(t.wipe_write_perm("unknown"), 0);
    assert_eq!(t.add_write_perm("unknown"), 0);
}

#[test]
fn delete_topic_with_and_without_cluster() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c1", "b1", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c2", "b2", 0, "B", &["T", "U"], 1), 0, S);
    t.delete_topic("T", Some("c1"));
    let r = t.view().route("T", false).unwrap();
    assert_eq!(r.queue_datas.len(), 1);
    assert_eq!(&*r.queue_datas[0].broker_name, "b2");
    t.delete_topic("T", Some("unknown"));
    assert!(t.view().route("T", false).is_some());
    t.delete_topic("T", Some("c2"));
    assert!(t.view().route("T", false).is_none());
    t.delete_topic("U", None);
    assert!(t.view().all_topics().topic_list.is_empty());
    // An empty cluster name means "everywhere".
    t.register_topic("V", vec![qd("b1", 6)]);
    t.delete_topic("V", Some(""));
    assert_eq!(t.view().topic_count(), 0);
}

#[test]
fn register_topic_needs_known_broker_names() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b1", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b2", 0, "B", &["X", "Y"], 1), 0, S);
    let g = t.generation();
    t.register_topic("NEW", vec![qd("b1", 6), qd("ghost", 6)]);
    assert!(t.view().route("NEW", false).is_none());
    assert_eq!(t.generation(), g);
    t.register_topic("NEW", vec![qd("b1", 6), qd("b2", 4)]);
    assert_eq!(t.view().route("NEW", false).unwrap().queue_datas.len(), 2);
    // An existing topic takes queue datas up to the first unknown name.
    t.register_topic("T", vec![qd("b2", 6), qd("ghost", 6), qd("b1", 2)]);
    let r = t.view().route("T", false).unwrap();
    assert_eq!(r.queue_datas.len(), 2);
    assert_eq!(r.queue_datas[0].perm, 6, "b1's entry untouched");
    t.register_topic("T", vec![]);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas.len(), 2);
    // An entry without a broker name stops it the same way (Java's lookup of a null name throws).
    t.register_topic("T", vec![qd("b1", 5), None, qd("b2", 2)]);
    let r = t.view().route("T", false).unwrap();
    assert_eq!(r.queue_datas.iter().map(|q| q.perm).collect::<Vec<_>>(), vec![5, 6]);
    let g = t.generation();
    t.register_topic("NEW2", vec![qd("b1", 6), None]);
    assert!(t.view().route("NEW2", false).is_none());
    assert_eq!(t.generation(), g);
}

#[test]
fn acting_master_rewrite() {
    let mut t = RouteTables::new();
    for id in [0, 1, 2] {
        let mut r = reg("c", "b", id, &format!("A{id}"), &["T", "U"], 1);
        r.enable_acting_master = Some(true);
        t.register_broker(r, 0, S);
    }
    t.register_broker(reg("c", "plain", 0, "P", &["T", "U"], 1), 0, S);
    // Master present: nothing to do.
    let r = t.view().route("T", true).unwrap();
    assert!(r.broker_datas[0].broker_addrs.contains_key(&0));
    t.unregister_brokers(&[unreg("c", "b", 0, "A0")], S);
    let v = t.view();
    let plain = v.route("T", false).unwrap();
    assert_eq!(plain.broker_datas[0].broker_addrs.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
    let r = v.route("T", true).unwrap();
    let ids: Vec<(i64, &str)> = r.broker_datas[0].broker_addrs.iter().map(|(i, a)| (*i, a.as_str())).collect();
    assert_eq!(ids, vec![(0, "A1"), (2, "A2")]);
    // The shared record is not modified.
    assert!(!v.cluster_info().broker_addr_table["b"].broker_addrs.contains_key(&0));
    // Never for the sync-member topic.
    t.register_topic("rmq_sys_SYNC_BROKER_MEMBER_b", vec![qd("b", perm::READ)]);
    let r = t.view().route("rmq_sys_SYNC_BROKER_MEMBER_b", true).unwrap();
    assert!(!r.broker_datas[0].broker_addrs.contains_key(&0));
    // A writable queue (an admin added the perm back) keeps the real ids.
    t.add_write_perm("b");
    assert!(!t.view().route("T", true).unwrap().broker_datas[0].broker_addrs.contains_key(&0));
}

#[test]
fn zone_filter_keeps_headless_groups_and_the_zone() {
    let mut t = RouteTables::new();
    for (name, addr, zone, id) in [("b1", "A", Some("Z1"), 0), ("b2", "B", Some("z2"), 0), ("b3", "C", None, 1)] {
        let mut r = reg("c", name, id, addr, &["T", "U"], 1);
        r.zone_name = zone.map(Into::into);
        r.enable_acting_master = Some(true);
        r.body.filter_server_list = Some(vec![format!("{addr}-fs")]);
        t.register_broker(r, 0, S);
    }
    let mut r = t.view().route("T", false).unwrap();
    assert_eq!(r.filter_server_table.len(), 3);
    filter_by_zone(&mut r, "z1");
    let bn: Vec<&str> = r.broker_datas.iter().map(|b| &*b.broker_name).collect();
    let qn: Vec<&str> = r.queue_datas.iter().map(|q| &*q.broker_name).collect();
    assert_eq!(bn, vec!["b1", "b3"]);
    assert_eq!(qn, vec!["b1", "b3"]);
    assert_eq!(r.filter_server_table.keys().collect::<Vec<_>>(), vec!["A", "C"]);
}

#[test]
fn topic_lists() {
    let mut t = RouteTables::new();
    let mut r = reg("c1", "b1", 0, "A", &["T", "UNIT", "SUB", "BOTH"], 1);
    r.body.topic_configs[1].topic_sys_flag = sys_flag::UNIT;
    r.body.topic_configs[2].topic_sys_flag = sys_flag::UNIT_SUB;
    r.body.topic_configs[3].topic_sys_flag = sys_flag::UNIT | sys_flag::UNIT_SUB;
    t.register_broker(r, 0, S);
    t.register_broker(reg("c1", "b2", 0, "B", &["T", "X"], 1), 0, S);
    t.register_broker(reg("c2", "b3", 0, "C", &["T", "Y"], 1), 0, S);
    let v = t.view();
    assert_eq!(names(&v.all_topics()), vec!["BOTH", "SUB", "T", "UNIT", "X", "Y"]);
    assert_eq!(names(&v.topics_by_cluster("c1")), vec!["BOTH", "SUB", "T", "UNIT", "X"]);
    assert_eq!(names(&v.topics_by_cluster("c2")), vec!["T", "Y"]);
    assert!(v.topics_by_cluster("zz").topic_list.is_empty());
    assert_eq!(names(&v.unit_topics(UnitTopicKind::Unit)), vec!["BOTH", "UNIT"]);
    assert_eq!(names(&v.unit_topics(UnitTopicKind::HasUnitSub)), vec!["BOTH", "SUB"]);
    assert_eq!(names(&v.unit_topics(UnitTopicKind::HasUnitSubUnUnit)), vec!["SUB"]);
    let sys = v.system_topics();
    assert_eq!(names(&sys), vec!["c1", "b1", "b2", "c2", "b3"]);
    assert_eq!(sys.broker_addr.as_deref(), Some("A"));
    assert_eq!(v.topic_count(), 6);
}

#[test]
fn system_topics_skip_groups_without_addresses() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "a-empty", 0, "A", &["T"], 1), 0, S);
    t.register_broker(reg("c", "b", 3, "B", &["T", "U"], 1), 0, S);
    assert_eq!(t.view().system_topics().broker_addr.as_deref(), Some("B"));
    assert_eq!(RouteView::default().system_topics(), crate::model::TopicList::default());
}

#[test]
fn broker_member_group_by_name_only() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    let g = t.view().broker_member_group(Some("other"), Some("b"));
    assert_eq!(g.cluster.as_deref(), Some("other"));
    assert_eq!(g.broker_name.as_deref(), Some("b"));
    assert_eq!(g.broker_addrs.len(), 2);
    let g = t.view().broker_member_group(None, Some("zz"));
    assert!(g.broker_addrs.is_empty() && g.cluster.is_none());
}

/// A stamp of `topic`'s route, asserting it is the route `route` builds.
fn stamped(v: &RouteView, topic: &str, acting: bool) -> RouteStamp {
    let (r, stamp) = v.route_stamped(topic, acting).unwrap();
    assert_eq!(Some(r), v.route(topic, acting));
    stamp
}

#[test]
fn topics_of_one_kin_share_a_stamp_and_others_do_not() {
    let mut t = RouteTables::new();
    for (name, addr) in [("a", "A:1"), ("b", "B:1")] {
        t.register_broker(reg("c", name, 0, addr, &["T", "U", "V", "rmq_sys_SYNC_BROKER_MEMBER_a"], 1), 0, S);
    }
    // V is on a third broker too: another shape.
    t.register_broker(reg("c", "z", 0, "Z:1", &["V", "W"], 1), 0, S);
    let v = t.view();
    let like = stamped(&v, "T", false);
    let kin = like.kin("T", false).expect("T's route is its kin's");
    let ask = |topic: &str, acting: bool| v.stamp_like(topic, acting, |k| (k == kin).then_some(&like));
    let u = ask("U", false).expect("U has T's route");
    assert!(v.stamp_matches("U", &u));
    assert_eq!(v.route("U", false), v.route("T", false));
    assert!(ask("V", false).is_none(), "another shape");
    assert!(ask("W", false).is_none(), "another shape");
    assert!(ask("nope", false).is_none());
    // A broker-member topic keeps its own route under the acting-master rewrite, and only then.
    assert!(ask("rmq_sys_SYNC_BROKER_MEMBER_a", false).is_some());
    assert!(ask("rmq_sys_SYNC_BROKER_MEMBER_a", true).is_none());
    assert!(stamped(&v, "rmq_sys_SYNC_BROKER_MEMBER_a", true).kin("rmq_sys_SYNC_BROKER_MEMBER_a", true).is_none());

    // A stamp offered for the wrong kin is refused, not trusted.
    let w = stamped(&v, "W", false);
    assert!(v.stamp_like("T", false, |_| Some(&w)).is_none());

    // Another queue for U on one broker: U's queues differ between brokers, no kin.
    let mut r = reg("c", "a", 0, "A:1", &["T", "U", "V", "rmq_sys_SYNC_BROKER_MEMBER_a"], 2);
    r.body.topic_configs[1].write_queue_nums = 2;
    t.register_broker(r, 0, S);
    let v = t.view();
    assert!(v.stamp_like("U", false, |_| Some(&like)).is_none());

    // A changed BrokerData: the old stamp no longer vouches for the kin.
    let mut t = RouteTables::new();
    for (name, addr) in [("a", "A:1"), ("b", "B:1")] {
        t.register_broker(reg("c", name, 0, addr, &["T", "U"], 1), 0, S);
    }
    let like = stamped(&t.view(), "T", false);
    assert!(t.view().stamp_like("U", false, |_| Some(&like)).is_some());
    t.register_broker(reg("c", "b", 1, "B:2", &["T", "U"], 1), 0, S);
    assert!(t.view().stamp_like("U", false, |_| Some(&like)).is_none());
}

#[test]
fn a_topic_with_a_static_mapping_has_its_own_route() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "a", 0, "A:1", &["T", "U"], 1);
    r.body.mapping_infos.push(("U".into(), crate::model::TopicQueueMappingInfo::default()));
    t.register_broker(r, 0, S);
    let v = t.view();
    let like = stamped(&v, "T", false);
    assert!(v.stamp_like("U", false, |_| Some(&like)).is_none());
    let own = stamped(&v, "U", false);
    assert!(own.kin("U", false).is_none());
    assert!(v.stamp_like("T", false, |_| Some(&own)).is_none(), "a stamp with a mapping vouches for no other topic");
}
