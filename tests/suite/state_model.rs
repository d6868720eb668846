//! Model test: `RouteTables` against a naive reference of §5.3/§5.5/§5.6 written with plain `BTreeMap`s, over random
//! operation sequences in a small universe (2 clusters, 3 broker names, ids 0–2, 4 addresses, 5 topics, 3 connections).

use std::collections::BTreeSet;

use namesrv::model::{DataVersion, QueueData, RegisterBrokerBody, TopicConfig, TopicRouteData};
use namesrv::state::ConnId;
use namesrv::test_support::state::routes::{RegisterBroker, RouteSettings, RouteStamp, RouteTables, UnregisterBroker};
use proptest::prelude::*;

mod model;
use model::Model;

const CLUSTERS: [&str; 2] = ["c0", "c1"];
/// Java visits `brokerAddrTable` by bin: surf-b (136) first, then grp-9 and grp-59 (both 177) in the order they
/// were added; by name grp-59 would come first and surf-b last.
const NAMES: [&str; 4] = ["grp-9", "grp-59", "surf-b", "ghost"];
const ADDRS: [&str; 4] = ["10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911", "10.0.0.4:10911"];
const TOPICS: [&str; 5] = ["t0", "t1", "t2", "t3", "t4"];

fn conn(i: u8) -> ConnId {
    ConnId { reactor: 0, token: i as u32, gen: 0 }
}

// ---------------------------------------------------------------- operations

#[derive(Clone, Debug)]
enum Op {
    Register {
        cluster: usize,
        name: usize,
        id: i64,
        addr: usize,
        topics: Vec<(usize, i32, i32)>,
        counter: i64,
        state_version: i64,
        acting: Option<bool>,
        short_timeout: bool,
        conn: Option<u8>,
        filters: Option<bool>,
    },
    Unregister {
        cluster: usize,
        name: usize,
        id: i64,
        addr: usize,
    },
    Heartbeat {
        cluster: usize,
        addr: usize,
    },
    QueryDataVersion {
        cluster: usize,
        addr: usize,
        counter: i64,
    },
    ConnectionClosed(u8),
    Expire(i64),
    Wipe(usize),
    Add(usize),
    DeleteTopic(usize, Option<usize>),
    /// Queue datas by broker name index; `None` = an entry without a broker name.
    RegisterTopic(usize, Vec<(Option<usize>, i32)>),
}

fn op() -> impl Strategy<Value = Op> {
    let register = (
        (0..2usize, 0..3usize, 0..3i64, 0..4usize),
        proptest::collection::vec((0..5usize, prop_oneof![Just(6), Just(4), Just(7)], 1..3i32), 0..5),
        (0..3i64, 0..2i64, prop_oneof![Just(None), Just(Some(true)), Just(Some(false))]),
        (any::<bool>(), proptest::option::of(0..3u8), proptest::option::of(any::<bool>())),
    )
        .prop_map(
            |((cluster, name, id, addr), topics, (counter, state_version, acting), (short_timeout, conn, filters))| {
                Op::Register {
                    cluster,
                    name,
                    id,
                    addr,
                    topics,
                    counter,
                    state_version,
                    acting,
                    short_timeout,
                    conn,
                    filters,
                }
            },
        );
    prop_oneof![
        6 => register,
        2 => (0..2usize, 0..3usize, 0..3i64, 0..4usize)
            .prop_map(|(cluster, name, id, addr)| Op::Unregister { cluster, name, id, addr }),
        1 => (0..2usize, 0..4usize).prop_map(|(cluster, addr)| Op::Heartbeat { cluster, addr }),
        1 => (0..2usize, 0..4usize, 0..3i64)
            .prop_map(|(cluster, addr, counter)| Op::QueryDataVersion { cluster, addr, counter }),
        1 => (0..3u8).prop_map(Op::ConnectionClosed),
        2 => prop_oneof![Just(0i64), Just(5_000), Just(9_000), Just(60_000), Just(125_000)].prop_map(Op::Expire),
        1 => (0..4usize).prop_map(Op::Wipe),
        1 => (0..4usize).prop_map(Op::Add),
        1 => (0..5usize, proptest::option::of(0..2usize)).prop_map(|(t, c)| Op::DeleteTopic(t, c)),
        1 => (0..5usize, proptest::collection::vec((proptest::option::weighted(0.85, 0..4usize), prop_oneof![Just(6), Just(4)]), 0..3))
            .prop_map(|(t, q)| Op::RegisterTopic(t, q)),
    ]
}

fn build_register(op: &Op) -> RegisterBroker {
    let Op::Register {
        cluster,
        name,
        id,
        addr,
        topics,
        counter,
        state_version,
        acting,
        short_timeout,
        conn: c,
        filters,
    } = op
    else {
        unreachable!()
    };
    RegisterBroker {
        cluster_name: CLUSTERS[*cluster].into(),
        broker_addr: ADDRS[*addr].into(),
        broker_name: NAMES[*name].into(),
        broker_id: *id,
        ha_server_addr: format!("{}-ha", ADDRS[*addr]),
        zone_name: None,
        heartbeat_timeout_ms: short_timeout.then_some(10_000),
        enable_acting_master: *acting,
        body: RegisterBrokerBody {
            data_version: DataVersion { counter: *counter, state_version: *state_version, timestamp: 0 },
            topic_configs: topics
                .iter()
                .map(|(t, perm, q)| TopicConfig {
                    read_queue_nums: *q,
                    write_queue_nums: *q,
                    perm: *perm,
                    ..TopicConfig::with_defaults(TOPICS[*t])
                })
                .collect(),
            mapping_infos: Vec::new(),
            filter_server_list: filters.map(|f| if f { vec![format!("fs-{}", ADDRS[*addr])] } else { vec![] }),
        },
        conn: c.map(conn),
    }
}

fn check_views(model: &Model, real: &RouteTables) -> Result<(), TestCaseError> {
    let v = real.view();
    for t in TOPICS {
        prop_assert_eq!(v.route(t, false), model.route(t, false), "route {}", t);
        prop_assert_eq!(v.route(t, true), model.route(t, true), "acting route {}", t);
    }
    prop_assert_eq!(v.cluster_info(), model.cluster_info());
    let topics: BTreeSet<String> = v.all_topics().topic_list.iter().map(|t| t.to_string()).collect();
    let expected: BTreeSet<String> = model.topics.keys().cloned().collect();
    prop_assert_eq!(topics, expected);
    prop_assert_eq!(real.live_broker_count(), model.live.len());
    Ok(())
}

/// A route stamp with the plain and acting-master routes built when it was taken.
type Stamped = (RouteStamp, Option<TopicRouteData>, Option<TopicRouteData>);

fn run(ops: Vec<Op>, s: RouteSettings) -> Result<(), TestCaseError> {
    let mut real = RouteTables::new();
    let mut model = Model::default();
    let mut now = 1_000i64;
    // A route stamp per topic with the routes built when it was taken: a stamp that still matches must mean the
    // same routes (the reactors' route cache relies on it).
    let mut stamps: Vec<Option<Stamped>> = vec![None; TOPICS.len()];
    let mut derived: Vec<Option<Stamped>> = vec![None; TOPICS.len()];
    for op in ops {
        let gen_before = real.generation();
        let view_before = real.view();
        let mut may_change_view = true;
        match &op {
            Op::Register { .. } => {
                let r = build_register(&op);
                let expected = model.register(&r, now, s);
                prop_assert_eq!(real.register_broker(r, now, s), expected);
            }
            Op::Unregister { cluster, name, id, addr } => {
                let req = UnregisterBroker {
                    cluster_name: CLUSTERS[*cluster].into(),
                    broker_addr: ADDRS[*addr].into(),
                    broker_name: NAMES[*name].into(),
                    broker_id: *id,
                };
                let expected = model.unregister(std::slice::from_ref(&req), s);
                prop_assert_eq!(real.unregister_brokers(&[req], s), expected);
            }
            Op::Heartbeat { cluster, addr } => {
                may_change_view = false;
                let key = (CLUSTERS[*cluster].to_string(), ADDRS[*addr].to_string());
                let known = model.live.get_mut(&key).map(|l| l.last = now).is_some();
                prop_assert_eq!(real.heartbeat(&key.0, &key.1, now), known);
            }
            Op::QueryDataVersion { cluster, addr, counter } => {
                may_change_view = false;
                let key = (CLUSTERS[*cluster].to_string(), ADDRS[*addr].to_string());
                let dv = DataVersion { counter: *counter, state_version: 0, timestamp: 0 };
                let stored = model.live.get(&key).map(|l| l.dv);
                if let Some(l) = model.live.get_mut(&key) {
                    l.last = now;
                }
                prop_assert_eq!(real.query_data_version(&key.0, &key.1, &dv, now), (stored != Some(dv), stored));
            }
            Op::ConnectionClosed(c) => {
                let expected = model.closed(conn(*c), s);
                prop_assert_eq!(real.connection_closed(conn(*c), s), expected);
            }
            Op::Expire(dt) => {
                now += dt;
                let expected = model.expire(now, s);
                prop_assert_eq!(real.expire(now, s), expected);
            }
            Op::Wipe(n) => {
                let expected = model.perm_of_broker(NAMES[*n], |p| p & !2);
                prop_assert_eq!(real.wipe_write_perm(NAMES[*n]), expected);
            }
            Op::Add(n) => {
                let expected = model.perm_of_broker(NAMES[*n], |_| 6);
                prop_assert_eq!(real.add_write_perm(NAMES[*n]), expected);
            }
            Op::DeleteTopic(t, c) => {
                let c = c.map(|c| CLUSTERS[c]);
                model.delete_topic(TOPICS[*t], c);
                real.delete_topic(TOPICS[*t], c);
            }
            Op::RegisterTopic(t, qds) => {
                let qds: Vec<Option<QueueData>> = qds
                    .iter()
                    .map(|(n, perm)| {
                        n.map(|n| QueueData {
                            broker_name: NAMES[n].into(),
                            read_queue_nums: 2,
                            write_queue_nums: 2,
                            perm: *perm,
                            topic_sys_flag: 0,
                        })
                    })
                    .collect();
                model.register_topic(TOPICS[*t], &qds);
                real.register_topic(TOPICS[*t], qds);
            }
        }
        check_views(&model, &real)?;
        let v = real.view();
        // What a route-cache miss takes from the topic's kin: a stamp taken from another topic's, only when the two
        // routes are the same now. Offered every other topic's stamp from before this op, not only its kin's: a
        // stale or wrong one must be refused. A stamp so taken is kept in `derived` while it matches, so the ops
        // after check that it goes stale in time.
        for (i, t) in TOPICS.iter().enumerate() {
            if let Some((stamp, plain, acting)) = &derived[i] {
                if !v.stamp_matches(t, stamp) {
                    derived[i] = None;
                    continue;
                }
                prop_assert_eq!(&v.route(t, false), plain, "stale derived stamp for {} after {:?}", t, op);
                prop_assert_eq!(&v.route(t, true), acting, "stale derived stamp for {} after {:?}", t, op);
            }
        }
        for (b, tb) in TOPICS.iter().enumerate() {
            for a in (0..TOPICS.len()).filter(|&a| a != b) {
                let Some((like, plain_a, acting_a)) = stamps[a].clone() else {
                    continue;
                };
                for (acting, route_a) in [(false, &plain_a), (true, &acting_a)] {
                    if let Some(stamp) = v.stamp_like(tb, acting, |_| Some(&like)) {
                        prop_assert_eq!(&v.route(tb, acting), route_a, "{} took {}'s route", tb, TOPICS[a]);
                        prop_assert!(v.stamp_matches(tb, &stamp), "a stamp of {} that does not match", tb);
                        derived[b] = Some((stamp, v.route(tb, false), v.route(tb, true)));
                    }
                }
            }
        }
        for (i, t) in TOPICS.iter().enumerate() {
            if let Some((stamp, plain, acting)) = &stamps[i] {
                if v.stamp_matches(t, stamp) {
                    prop_assert_eq!(&v.route(t, false), plain, "stale stamp for {} after {:?}", t, op);
                    prop_assert_eq!(&v.route(t, true), acting, "stale stamp for {} after {:?}", t, op);
                }
            }
            // What a route-cache miss takes: the route and its stamp from one pass.
            let (plain, acting) = (v.route(t, false), v.route(t, true));
            prop_assert_eq!(v.route_stamped(t, true).map(|(r, _)| r), acting.clone(), "route_stamped {}", t);
            stamps[i] = match v.route_stamped(t, false) {
                Some((route, stamp)) => {
                    prop_assert_eq!(Some(&route), plain.as_ref(), "route_stamped {}", t);
                    Some((stamp, plain, acting))
                }
                None => {
                    prop_assert_eq!(plain, None, "route_stamped {}", t);
                    None
                }
            };
        }
        // The generation moves exactly when something readable changed.
        let v = real.view();
        let same = TOPICS.iter().all(|t| v.route(t, false) == view_before.route(t, false))
            && v.cluster_info() == view_before.cluster_info();
        if !may_change_view {
            prop_assert_eq!(real.generation(), gen_before, "{:?}", op);
        }
        if real.generation() == gen_before {
            prop_assert!(same, "view changed without a generation bump: {:?}", op);
        }
        now += 100;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn route_tables_match_the_reference_model(
        ops in proptest::collection::vec(op(), 1..60),
        delete_with_registration in any::<bool>(),
        notify in any::<bool>(),
    ) {
        let s = RouteSettings {
            delete_topic_with_broker_registration: delete_with_registration,
            notify_min_broker_id_changed: notify,
        };
        run(ops, s)?;
    }
}
