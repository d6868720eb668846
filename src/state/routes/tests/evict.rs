//! Unregistration (§5.5), expiry and connection loss (§5.6), and their 905 notices (§5.11).

use super::super::test_util::*;
use super::super::*;
use crate::model::perm;

fn acting(mut r: RegisterBroker) -> RegisterBroker {
    r.enable_acting_master = Some(true);
    r
}

#[test]
fn unregister_cascade_removes_topics_names_and_emptied_clusters() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c1", "b1", 0, "A", &["ONLY_B1", "SHARED"], 1), 0, S);
    t.register_broker(reg("c1", "b1", 1, "A2", &["ONLY_B1", "SHARED"], 1), 0, S);
    t.register_broker(reg("c2", "b2", 0, "B", &["SHARED", "ONLY_B2"], 1), 0, S);
    // Removing the slave only reduces the group.
    t.unregister_brokers(&[unreg("c1", "b1", 1, "A2")], S);
    assert!(t.view().route("ONLY_B1", false).is_some());
    t.unregister_brokers(&[unreg("c1", "b1", 0, "A")], S);
    let v = t.view();
    assert!(v.route("ONLY_B1", false).is_none());
    assert_eq!(v.route("SHARED", false).unwrap().queue_datas.len(), 1);
    let ci = v.cluster_info();
    assert!(!ci.broker_addr_table.contains_key("b1"));
    assert!(!ci.cluster_addr_table.contains_key("c1"));
    assert_eq!(ci.cluster_addr_table.len(), 1);
    assert_eq!(t.live_broker_count(), 1);
    assert_eq!(v.topics_by_cluster("c1").topic_list.len(), 0);
}

#[test]
fn unregister_matches_members_by_address_not_id() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.unregister_brokers(&[unreg("c", "b", 7, "A")], S);
    assert!(t.view().route("T", false).is_none());
    // Unknown names are harmless.
    assert!(t.unregister_brokers(&[unreg("c", "zz", 0, "A")], NOTIFY).is_empty());
}

#[test]
fn losing_the_master_of_an_acting_master_group_wipes_write_perm() {
    let mut t = RouteTables::new();
    t.register_broker(acting(reg("c", "b", 0, "A", &["T", "U"], 1)), 0, S);
    t.register_broker(acting(reg("c", "b", 1, "B", &["T", "U"], 1)), 0, S);
    t.unregister_brokers(&[unreg("c", "b", 0, "A")], S);
    let r = t.view().route("T", false).unwrap();
    assert_eq!(r.queue_datas[0].perm, perm::READ);
    // Without acting master the perms stay.
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    t.unregister_brokers(&[unreg("c", "b", 0, "A")], S);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 6);
}

#[test]
fn unregistering_the_minimum_notifies_the_rest_of_an_acting_master_group() {
    let mut t = RouteTables::new();
    t.register_broker(acting(reg("c", "b", 0, "A", &["T", "U"], 1)), 0, S);
    t.register_broker(acting(reg("c", "b", 1, "B", &["T", "U"], 1)), 0, S);
    t.register_broker(acting(reg("c", "b", 2, "C", &["T", "U"], 1)), 0, S);
    assert!(t.unregister_brokers(&[unreg("c", "b", 2, "C")], NOTIFY).is_empty());
    let n = t.unregister_brokers(&[unreg("c", "b", 0, "A")], NOTIFY);
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].target, "B");
    assert_eq!((n[0].min_broker_id, n[0].min_broker_addr.as_str()), (1, "B"));
    assert_eq!(n[0].offline_broker_addr.as_deref(), Some("A"));
    assert_eq!(n[0].ha_broker_addr, None);
    // Not for groups without acting master, nor without the setting.
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 0, S);
    assert!(t.unregister_brokers(&[unreg("c", "b", 0, "A")], NOTIFY).is_empty());
    let mut t = RouteTables::new();
    t.register_broker(acting(reg("c", "b", 0, "A", &["T", "U"], 1)), 0, S);
    t.register_broker(acting(reg("c", "b", 1, "B", &["T", "U"], 1)), 0, S);
    assert!(t.unregister_brokers(&[unreg("c", "b", 0, "A")], S).is_empty());
}

#[test]
fn expiry_uses_each_brokers_timeout() {
    let mut t = RouteTables::new();
    let mut fast = reg("c", "fast", 0, "A", &["F", "G"], 1);
    fast.heartbeat_timeout_ms = Some(10_000);
    fast.conn = Some(conn(1));
    t.register_broker(fast, 0, S);
    t.register_broker(reg("c", "slow", 0, "B", &["S", "R"], 1), 0, S);
    assert_eq!(t.expire(10_000, S), Expired::default());
    let e = t.expire(10_001, S);
    assert_eq!(e.evicted, vec![unreg("c", "fast", 0, "A")]);
    assert_eq!(e.close, vec![conn(1)]);
    assert!(t.view().route("F", false).is_none());
    assert!(t.view().route("S", false).is_some());
    assert!(t.expire(120_000, S).evicted.is_empty());
    assert_eq!(t.expire(120_001, S).evicted.len(), 1);
    assert!(t.view().cluster_info().cluster_addr_table.is_empty());
    assert_eq!(t.live_broker_count(), 0);
}

#[test]
fn expiry_decision_cannot_outlive_a_re_registration() {
    // apache/rocketmq#11043: the decision and the removal happen in one call, so a broker that re-registered
    // in between is judged on its fresh entry.
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.register_broker(reg("c", "b", 0, "A", &["T", "U"], 1), 100_000, S);
    assert!(t.expire(150_000, S).evicted.is_empty());
    assert!(t.view().route("T", false).is_some());
}

#[test]
fn closing_the_current_connection_evicts_closing_an_older_one_does_not() {
    let mut t = RouteTables::new();
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.conn = Some(conn(1));
    t.register_broker(r.clone(), 0, S);
    r.conn = Some(conn(2));
    t.register_broker(r, 10, S);
    let g = t.generation();
    assert_eq!(t.connection_closed(conn(1), S), (vec![], vec![]));
    assert_eq!(t.generation(), g);
    assert!(t.view().route("T", false).is_some());
    let (evicted, _) = t.connection_closed(conn(2), S);
    assert_eq!(evicted, vec![unreg("c", "b", 0, "A")]);
    assert!(t.view().route("T", false).is_none());
    // A reused token with a new generation is another connection.
    let mut r = reg("c", "b", 0, "A", &["T", "U"], 1);
    r.conn = Some(conn(3));
    t.register_broker(r, 20, S);
    let mut reused = conn(3);
    reused.gen += 1;
    assert!(t.connection_closed(reused, S).0.is_empty());
}

#[test]
fn connection_close_takes_a_whole_group_in_one_batch() {
    let mut t = RouteTables::new();
    for (id, addr) in [(0, "A"), (1, "B")] {
        let mut r = acting(reg("c", "b", id, addr, &["T", "U"], 1));
        r.conn = Some(conn(9));
        t.register_broker(r, 0, S);
    }
    let (evicted, notices) = t.connection_closed(conn(9), NOTIFY);
    assert_eq!(evicted.len(), 2);
    assert!(notices.is_empty(), "the group is gone, nobody to tell");
    assert!(t.view().cluster_info().broker_addr_table.is_empty());
}

#[test]
fn live_entry_no_group_claims_is_dropped_silently() {
    let mut t = RouteTables::new();
    t.register_broker(reg("c", "b", 1, "A", &["T", "U"], 1), 0, S);
    // B takes id 1 over; A keeps a live entry no group holds.
    t.register_broker(reg("c", "b", 1, "B", &["T", "U"], 1), 50_000, S);
    let e = t.expire(120_001, S);
    assert!(e.evicted.is_empty());
    assert_eq!(t.live_broker_count(), 1);
    assert_eq!(t.view().cluster_info().broker_addr_table["b"].broker_addrs.len(), 1);
}

#[test]
fn an_address_held_by_two_groups_is_evicted_from_the_first_in_java_order() {
    // Java's setupUnRegisterRequest takes the first group of brokerAddrTable (a ConcurrentHashMap) holding the
    // address: surf-b's bin (136) comes before surf-a's (137).
    let mut t = RouteTables::new();
    let mut a = reg("c", "surf-a", 0, "A", &["TA", "T"], 1);
    a.conn = Some(conn(1));
    t.register_broker(a, 0, S);
    let mut b = reg("c", "surf-b", 0, "A", &["TB", "T"], 1);
    b.conn = Some(conn(1));
    t.register_broker(b, 0, S);
    let (evicted, _) = t.connection_closed(conn(1), S);
    assert_eq!(evicted, vec![unreg("c", "surf-b", 0, "A")]);
    let v = t.view();
    assert!(v.route("TB", false).is_none());
    assert!(v.route("TA", false).is_some());
    // 304 answers from the first group in the same order.
    t.register_broker(reg("c", "surf-b", 0, "B", &["TB", "T"], 2), 0, S);
    assert_eq!(t.view().system_topics().broker_addr.as_deref(), Some("B"));
}

#[test]
fn groups_sharing_a_bin_come_in_the_order_they_were_added() {
    // grp-9 and grp-59 share bin 177 of 256: Java visits them in insertion order, not by name.
    let mut t = RouteTables::new();
    for name in ["grp-9", "grp-59"] {
        let mut r = reg("c", name, 0, "A", &["T", name], 1);
        r.conn = Some(conn(1));
        t.register_broker(r, 0, S);
    }
    assert_eq!(t.view().system_topics().broker_addr.as_deref(), Some("A"));
    let (evicted, _) = t.connection_closed(conn(1), S);
    assert_eq!(evicted, vec![unreg("c", "grp-9", 0, "A")]);
    // Removed and added again, grp-9 now comes after grp-59 (which still holds A).
    t.register_broker(reg("c", "grp-9", 0, "B", &["T", "grp-9"], 2), 0, S);
    assert_eq!(t.view().system_topics().broker_addr.as_deref(), Some("A"));
    t.unregister_brokers(&[unreg("c", "grp-59", 0, "A")], S);
    assert_eq!(t.view().system_topics().broker_addr.as_deref(), Some("B"));
}

/// Many groups expiring at once cost O(groups), not their square (a peer can register thousands, and each expired
/// broker's group was searched for among all of them): the time per group stays flat from n to 8n groups.
#[test]
fn expiring_many_groups_at_once_stays_linear() {
    let time = |n: usize| {
        let runs = (0..2).map(|_| {
            let mut t = RouteTables::new();
            for i in 0..n {
                // Two topics of its own: a single-topic registration cannot introduce a broker (§5.3, step 7).
                let (t1, t2) = (format!("T{i}"), format!("U{i}"));
                let mut r = reg("c", &format!("b{i}"), 0, &format!("A{i}"), &[&t1, &t2], 1);
                r.conn = Some(conn(i as u32));
                t.register_broker(r, 0, S);
            }
            let started = std::time::Instant::now();
            let e = t.expire(120_001, S);
            let took = started.elapsed();
            assert_eq!(e.evicted.len(), n);
            took
        });
        runs.min().expect("two runs")
    };
    let (small, large) = (time(300), time(2400));
    assert!(large < small * 24, "300 groups: {small:?}, 2,400 groups: {large:?} (the square would be ×64)");
}
