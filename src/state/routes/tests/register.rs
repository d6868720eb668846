//! REGISTER_BROKER (§5.3), keep-alive (§5.4) and publishing cost.

use super::super::test_util::*;
use super::super::*;
use crate::model::{perm, QueueData, TopicQueueMappingInfo};

fn addrs(v: &RouteView, name: &str) -> Vec<(i64, String)> {
    v.cluster_info().broker_addr_table[name].broker_addrs.iter().map(|(i, a)| (*i, a.clone())).collect()
}

#[test]
fn master_then_slave_gets_master_and_ha_addresses() {
    let mut t = RouteTables::new();
    let m = t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert_eq!(m, Some(RegisterResult::default()));
    let s = t.register_broker(reg("c", "b", 1, "B", &["T", "U", "SLAVE_ONLY"], 1), 0, S).unwrap();
    assert_eq!(s.master_addr.as_deref(), Some("A"));
    assert_eq!(s.ha_server_addr.as_deref(), Some("A-ha"));
    let v = t.view();
    let r = v.route("T", false).unwrap();
    assert_eq!(r.broker_datas.len(), 1);
    assert_eq!(addrs(&v, "b"), vec![(0, "A".into()), (1, "B".into())]);
    // The slave's table is ignored while a master is present.
    assert!(v.route("SLAVE_ONLY", false).is_none());
    assert_eq!(v.topic_count(), 2);
}

#[test]
fn slave_without_live_master_gets_no_master_fields() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.unregister_brokers(&[unreg("c", "b", 0, "A")], S);
    let s = t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S).unwrap();
    assert_eq!(s.master_addr, None);
    assert_eq!(s.ha_server_addr, None);
}

#[test]
fn slave_promoted_on_the_same_address_keeps_one_entry() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 1, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 2), 0, S);
    assert_eq!(addrs(&t.view(), "b"), vec![(0, "A".into())]);
}

#[test]
fn single_topic_first_registration_is_refused_but_the_name_is_visible() {
    let mut t = RouteTables::new();
    assert_eq!(t.register_broker(reg("c", "b", 0, "A", &["T"], 1), 0, S), None);
    let ci = t.view().cluster_info();
    assert!(ci.broker_addr_table["b"].broker_addrs.is_empty());
    assert_eq!(ci.cluster_addr_table["c"], vec![Arc::<str>::from("b")]);
    assert!(t.view().route("T", false).is_none());
    assert_eq!(t.live_broker_count(), 0);
    // A known member may register a single topic.
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert!(t.register_broker(reg("c", "b", 0, "A", &["V"], 2), 0, S).is_some());
    assert!(t.view().route("V", false).is_some());
}

#[test]
fn prime_slave_of_a_5x_group_registers_read_only_topics() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 1, "B", &["T", "U"], 1);
    r.enable_acting_master = Some(true);
    t.register_broker(r, 0, S);
    let route = t.view().route("T", false).unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    // A second slave with a larger id is not prime.
    let mut r2 = reg("c", "b", 2, "C", &["X", "Y"], 1);
    r2.enable_acting_master = Some(true);
    t.register_broker(r2, 0, S);
    assert!(t.view().route("X", false).is_none());
}

#[test]
fn prime_slave_without_acting_master_keeps_its_perms() {
    // Java wipes the write bit only for `isPrimeSlave && enableActingMaster` (RouteInfoManager.registerBroker).
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    let route = t.view().route("T", false).unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ_WRITE);
    // The same group switching acting master on re-files its queues read-only (new DataVersion).
    let mut r = reg("c", "b", 1, "B", &["T", "U"], 2);
    r.enable_acting_master = Some(true);
    t.register_broker(r, 0, S);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, perm::READ);
}

#[test]
fn slaves_of_old_brokers_are_ignored() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 1, "B", &["T", "U"], 1);
    r.enable_acting_master = None;
    t.register_broker(r, 0, S);
    assert!(t.view().route("T", false).is_none());
    assert!(!t.view().cluster_info().broker_addr_table["b"].enable_acting_master);
}

#[test]
fn state_version_guard_ignores_a_stale_registrant() {
    let mut t = RouteTables::new();
    let mut a = reg("c", "b", 0, "A", &["T", "U"], 1);
    a.body.data_version.state_version = 5;
    t.register_broker(a, 0, S);
    let mut b = reg("c", "b", 0, "B", &["T", "U"], 1);
    b.body.data_version.state_version = 3;
    t.register_broker(b.clone(), 0, S);
    t.query_data_version("c", "B", &dv(1), 0);
    // B had a live entry; the guard removes it again.
    assert_eq!(t.register_broker(b, 0, S), Some(RegisterResult::default()));
    assert_eq!(addrs(&t.view(), "b"), vec![(0, "A".into())]);
    assert_eq!(t.query_data_version("c", "B", &dv(1), 0), (true, None));
    // A newer state version takes the id over.
    let mut c = reg("c", "b", 0, "B", &["T", "U"], 1);
    c.body.data_version.state_version = 6;
    t.register_broker(c, 0, S);
    assert_eq!(addrs(&t.view(), "b"), vec![(0, "B".into())]);
}

#[test]
fn delete_topic_with_broker_registration() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T1", "T2"], 1), 0, S);
    t.register_broker(reg("c", "b2", 0, "B", &["T2", "T3"], 1), 0, S);
    t.register_broker(reg("c", "b", 0, "A", &["T1", "T3"], 2), 0, S);
    assert!(t.view().route("T2", false).is_some());
    let on = RouteSettings { delete_topic_with_broker_registration: true, ..S };
    t.register_broker(reg("c", "b2", 0, "B", &["T3", "T4"], 2), 0, on);
    let v = t.view();
    let t2 = v.route("T2", false).unwrap();
    assert_eq!(t2.queue_datas.len(), 1, "only b2's queue data of T2 is removed");
    assert_eq!(&*t2.queue_datas[0].broker_name, "b");
    assert_eq!(v.route("T3", false).unwrap().queue_datas.len(), 2);
    t.register_broker(reg("c", "b", 0, "A", &["T1", "T3"], 2), 0, on);
    assert!(t.view().route("T2", false).is_none());
    // Mapping info in the body disables the deletion.
    let mut r = reg("c", "b", 0, "A", &["T3", "T5"], 3);
    r.body.mapping_infos.push(("T5".into(), TopicQueueMappingInfo::default()));
    t.register_broker(r, 0, on);
    assert!(t.view().route("T1", false).is_some());
    t.register_broker(reg("c", "b", 0, "A", &["T3", "T5"], 4), 0, on);
    assert!(t.view().route("T1", false).is_none());
}

/// The reverse index (broker name → its topics) follows every operation that files or removes queues, including
/// one that removes some topics and adds others at once; it is what GET_TOPICS_BY_CLUSTER and the broker-wide
/// operations read.
#[test]
fn each_broker_names_exactly_the_topics_it_has_a_queue_of() {
    let mut t = RouteTables::new();
    let on = RouteSettings { delete_topic_with_broker_registration: true, ..S };
    let listed = |t: &RouteTables, cluster: &str| -> Vec<String> {
        t.view().topics_by_cluster(cluster).topic_list.iter().map(|s| s.to_string()).collect()
    };
    t.register_broker(reg("c", "b", 0, "A", &["T5", "T1", "T3"], 1), 0, S);
    t.register_broker(reg("d", "e", 0, "E", &["T3", "T9"], 1), 0, S);
    assert_eq!(listed(&t, "c"), ["T1", "T3", "T5"]);
    assert_eq!(t.view().broker_topic_count("b"), 3);
    // T1 and T5 go, T2 and T6 come, T3 stays: one registration.
    t.register_broker(reg("c", "b", 0, "A", &["T6", "T3", "T2"], 2), 0, on);
    assert_eq!(listed(&t, "c"), ["T2", "T3", "T6"]);
    t.delete_topic("T3", None);
    assert_eq!((listed(&t, "c"), listed(&t, "d")), (vec!["T2".to_string(), "T6".into()], vec!["T9".to_string()]));
    t.register_topic(
        "T0",
        vec![Some(QueueData {
            broker_name: "b".into(),
            read_queue_nums: 1,
            write_queue_nums: 1,
            perm: 6,
            topic_sys_flag: 0,
        })],
    );
    assert_eq!(listed(&t, "c"), ["T0", "T2", "T6"]);
    // A wiped perm keeps the topics; an unregistration takes them all.
    assert_eq!(t.wipe_write_perm("b"), 3);
    t.unregister_brokers(&[unreg("c", "b", 0, "A")], S);
    assert!(listed(&t, "c").is_empty());
    assert_eq!(t.view().broker_topic_count("b"), 0);
    assert_eq!(listed(&t, "d"), ["T9"]);
}

#[test]
fn unchanged_data_version_keeps_namesrv_side_wipes_changed_one_reapplies() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert_eq!(t.wipe_write_perm("b"), 2);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 4);
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 2);
    r.body.topic_configs[0].write_queue_nums = 3;
    t.register_broker(r, 0, S);
    let qd = &t.view().route("T", false).unwrap().queue_datas[0];
    assert_eq!((qd.perm, qd.write_queue_nums), (6, 3));
}

#[test]
fn deleted_topic_comes_back_at_the_next_registration() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.delete_topic("T", None);
    assert!(t.view().route("T", false).is_none());
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert!(t.view().route("T", false).is_some());
}

#[test]
fn query_data_version_changed_and_unchanged() {
    let mut t = RouteTables::new();
    assert_eq!(t.query_data_version("c", "A", &dv(1), 0), (true, None));
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert_eq!(t.query_data_version("c", "A", &dv(1), 0), (false, Some(dv(1))));
    assert_eq!(t.query_data_version("c", "A", &dv(2), 0), (true, Some(dv(1))));
    let mut other = dv(1);
    other.state_version = 9;
    assert!(t.query_data_version("c", "A", &other, 0).0);
    // Keyed by cluster too.
    assert_eq!(t.query_data_version("c2", "A", &dv(1), 0), (true, None));
}

#[test]
fn keep_alive_refreshes_only_known_entries() {
    let mut t = RouteTables::new();
    assert!(!t.heartbeat("c", "A", 0));
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.heartbeat_timeout_ms = Some(10_000);
    t.register_broker(r, 0, S);
    assert!(t.heartbeat("c", "A", 9_000));
    t.query_data_version("c", "A", &dv(1), 18_000);
    assert!(t.expire(28_000, S).evicted.is_empty());
    assert_eq!(t.expire(28_001, S).evicted.len(), 1);
}

#[test]
fn generation_ignores_liveness_and_unchanged_registrations() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    let g = t.generation();
    let v0 = t.view();
    t.heartbeat("c", "A", 5);
    t.query_data_version("c", "A", &dv(1), 6);
    t.query_data_version("c", "A", &dv(7), 7);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 8, S);
    // A changed version with identical topics changes nothing visible either.
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 2), 9, S);
    assert_eq!(t.generation(), g);
    let v1 = t.view();
    assert_eq!(v0.topic_entry_ptr("T"), v1.topic_entry_ptr("T"));
    assert_eq!(v0.broker_data_ptr("b"), v1.broker_data_ptr("b"));
    t.register_broker(reg("c", "b", 0, "A", &["T", "U", "V"], 3), 10, S);
    assert!(t.generation() > g);
}

#[test]
fn changing_k_of_n_topics_replaces_only_those_entries() {
    let mut t = RouteTables::new();
    let names: Vec<String> = (0..50).map(|i| format!("T{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    t.register_broker(reg("c", "b", 0, "A", &refs, 1), 0, S);
    let before = t.view();
    let mut r = reg("c", "b", 0, "A", &refs, 2);
    for i in [3, 17, 42] {
        r.body.topic_configs[i].read_queue_nums = 1;
    }
    t.register_broker(r, 0, S);
    let after = t.view();
    let replaced: Vec<&str> =
        refs.iter().copied().filter(|n| before.topic_entry_ptr(n) != after.topic_entry_ptr(n)).collect();
    assert_eq!(replaced, vec!["T3", "T17", "T42"]);
    assert_eq!(before.broker_data_ptr("b"), after.broker_data_ptr("b"));
    // The old view is untouched.
    assert_eq!(before.route("T3", false).unwrap().queue_datas[0].read_queue_nums, 16);
}

#[test]
fn mapping_infos_are_merged_by_bname() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    let info = TopicQueueMappingInfo {
        topic: Some("T".into()),
        bname: Some("b".into()),
        total_queues: 8,
        ..Default::default()
    };
    r.body.mapping_infos.push(("T".into(), info.clone()));
    t.register_broker(r, 0, S);
    let m = t.view().route("T", false).unwrap().topic_queue_mapping_by_broker.unwrap();
    assert_eq!(*m["b"], info);
    assert!(t.view().route("U", false).unwrap().topic_queue_mapping_by_broker.is_none());
    // Deleting the topic leaves the mapping, as in Java.
    t.delete_topic("T", None);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert!(t.view().route("T", false).unwrap().topic_queue_mapping_by_broker.is_some());
}

#[test]
fn filter_servers_are_stored_replaced_and_removed() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.body.filter_server_list = Some(vec!["F1".into()]);
    t.register_broker(r, 0, S);
    let route = t.view().route("T", false).unwrap();
    assert_eq!(route.filter_server_table["A"], vec!["F1".to_string()]);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    assert!(!t.view().route("T", false).unwrap().filter_server_table.is_empty());
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.body.filter_server_list = Some(vec![]);
    t.register_broker(r, 0, S);
    assert!(t.view().route("T", false).unwrap().filter_server_table.is_empty());
}

#[test]
fn zone_and_acting_master_flag_follow_the_last_registrant() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.zone_name = Some("z1".into());
    r.enable_acting_master = Some(true);
    t.register_broker(r, 0, S);
    let bd = t.view().cluster_info().broker_addr_table["b"].clone();
    assert_eq!((bd.zone_name.as_deref(), bd.enable_acting_master), (Some("z1"), true));
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    let bd = t.view().cluster_info().broker_addr_table["b"].clone();
    assert_eq!((bd.zone_name.as_deref(), bd.enable_acting_master), (None, false));
    // The group's cluster never changes, but the name is listed under both.
    t.register_broker(reg("c2", "b", 2, "C", &["T", "U"], 1), 0, S);
    let ci = t.view().cluster_info();
    assert_eq!(&*ci.broker_addr_table["b"].cluster, "c");
    assert_eq!(ci.cluster_addr_table.len(), 2);
}

#[test]
fn registration_with_a_smaller_id_notifies_the_others() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, NOTIFY);
    t.register_broker(reg("c", "b", 2, "C", &["T", "U"], 1), 0, NOTIFY);
    let r = t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, NOTIFY).unwrap();
    let targets: Vec<&str> = r.notices.iter().map(|n| n.target.as_str()).collect();
    assert_eq!(targets, vec!["B", "C"]);
    let n = &r.notices[0];
    assert_eq!((n.min_broker_id, n.min_broker_addr.as_str()), (0, "A"));
    assert_eq!((n.offline_broker_addr.as_deref(), n.ha_broker_addr.as_deref()), (None, Some("A-ha")));
    // Not without the setting.
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    assert!(t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S).unwrap().notices.is_empty());
}
