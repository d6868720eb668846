//! Unchanged re-registrations (`same`): the cheap path must leave exactly what the full path leaves.

use proptest::prelude::*;

use super::super::test_util::*;
use super::super::*;
use crate::model::{BodyMark, QueueData, RegisterBrokerBody};

/// Stands in for the decoder's mark of body number `i` (the tables treat marks as opaque).
fn mark(i: usize) -> BodyMark {
    BodyMark { dv_start: i as u32, digest: i as u128 }
}

/// What the decoder does: the cheap path when the view has the body's mark, the full path otherwise or when the
/// tables turn the request down. Returns the outcome and whether the cheap path was taken.
fn register(t: &mut RouteTables, req: RegisterBroker, body: usize, s: RouteSettings) -> (RegisterOutcome, bool) {
    let known = t.view().body_mark(&req.cluster_name, &req.broker_addr).is_some_and(|m| m.mark == mark(body));
    if known {
        let mut lean = req.clone();
        lean.body = RegisterBrokerBody { data_version: req.body.data_version, ..Default::default() };
        if let Some(outcome) = t.register_same(&mut lean, &mark(body), 0, 0, s) {
            return (outcome, true);
        }
    }
    (t.register_marked(&req, Some(mark(body)), 0, 0, s), false)
}

/// Everything a reader or a warm restart can see, as comparable text.
fn seen(t: &RouteTables) -> String {
    let v = t.view();
    let mut out = format!("{:?}\n", v.cluster_info());
    for topic in ["T", "U", "V", "W"] {
        out += &format!("{topic}: {:?}\n", v.route(topic, true));
    }
    let mut export: Vec<String> = t.export().iter().map(|r| format!("{r:?}")).collect();
    export.sort();
    out + &export.join("\n")
}

#[test]
fn an_unchanged_body_is_applied_without_its_topics_and_refreshes_the_data_version() {
    let mut t = RouteTables::new();
    assert_eq!(register(&mut t, reg("c", "b", 0, "A", &["T", "U"], 1), 0, S), (Some(RegisterResult::default()), false));
    let generation = t.generation();
    let (outcome, cheap) = register(&mut t, reg("c", "b", 0, "A", &["T", "U"], 2), 0, S);
    assert_eq!((outcome, cheap), (Some(RegisterResult::default()), true));
    // Nothing a reader sees changed, so nothing is published…
    assert_eq!(t.generation(), generation);
    // …but the live entry has the new DataVersion, as Java's would.
    assert_eq!(t.query_data_version("c", "A", &dv(2), 0), (false, Some(dv(2))));
}

#[test]
fn a_wiped_write_perm_sends_the_body_back_so_java_s_reput_restores_it() {
    let mut t = RouteTables::new();
    register(&mut t, reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    t.wipe_write_perm("b");
    let mut lean = RegisterBroker {
        body: RegisterBrokerBody { data_version: dv(2), ..Default::default() },
        ..reg("c", "b", 0, "A", &[], 2)
    };
    assert!(t.register_same(&mut lean, &mark(0), 0, 0, S).is_none());
    let (_, cheap) = register(&mut t, reg("c", "b", 0, "A", &["T", "U"], 2), 0, S);
    assert!(!cheap);
    assert_eq!(t.view().route("T", false).unwrap().queue_datas[0].perm, 6);
}

#[test]
fn a_body_at_another_request_version_or_from_another_broker_is_not_recognised() {
    let mut t = RouteTables::new();
    register(&mut t, reg("c", "b", 0, "A", &["T", "U"], 1), 0, S);
    let lean = |name: &str, id| RegisterBroker {
        body: RegisterBrokerBody { data_version: dv(2), ..Default::default() },
        ..reg("c", name, id, "A", &[], 2)
    };
    assert!(t.register_same(&mut lean("b", 0), &mark(0), 1, 0, S).is_none());
    assert!(t.register_same(&mut lean("other", 0), &mark(0), 0, 0, S).is_none());
    assert!(t.register_same(&mut lean("b", 1), &mark(0), 0, 0, S).is_none());
    assert!(t.register_same(&mut lean("b", 0), &mark(1), 0, 0, S).is_none());
    assert!(t.register_same(&mut lean("b", 0), &mark(0), 0, 0, S).is_some());
}

/// A marked body keeps its runs of topics (`chunks`), and the broker's next body at a changed DataVersion is compared
/// with them: only the run of the changed topic differs. A body without a mark keeps no record, so no runs, and the
/// broker's next body without one forgets the runs it had.
#[test]
fn runs_are_kept_with_a_marked_body_and_a_changed_body_differs_in_the_changed_run_only() {
    let names: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut t = RouteTables::new();
    t.register_marked(&reg("c", "b", 0, "A", &names, 1), Some(mark(0)), 0, 0, S);
    assert!(has_runs(&t, "A", "b"));
    let mut changed = reg("c", "b", 0, "A", &names, 2);
    changed.body.topic_configs[20].perm = 4;
    let runs = chunks::Runs::of(&changed.body.topic_configs).unwrap();
    let skip = runs.unchanged(t.runs_on_record("A", "b", false).unwrap());
    assert!(!skip[20] && skip.iter().filter(|s| !**s).count() < 20, "{skip:?}");
    t.register_marked(&changed, Some(mark(1)), 0, 0, S);
    assert_eq!(t.view().route("t20", false).unwrap().queue_datas[0].perm, 4);
    assert!(has_runs(&t, "A", "b"));

    t.register_broker(reg("c", "d", 0, "D", &names, 1), 0, S);
    t.register_marked(&reg("c", "e", 0, "E", &names, 1), None, 0, 0, S);
    assert!(!has_runs(&t, "D", "d") && !has_runs(&t, "E", "e"));
    // The next body without a mark forgets the record and its runs.
    t.register_marked(&changed, None, 0, 0, S);
    assert!(!has_runs(&t, "A", "b"));
}

fn has_runs(t: &RouteTables, addr: &str, name: &str) -> bool {
    t.runs_on_record(addr, name, false).is_some()
}

/// (name, id, address) of the brokers the property test drives.
const BROKERS: [(&str, i64, &str); 4] = [("a", 0, "A0"), ("a", 1, "A1"), ("b", 0, "B0"), ("b", 1, "B1")];
/// The bodies they send: topic names and the perm of each. The last five span three runs of topics (`chunks`, 4 per
/// run in tests): a change in the first run, one in the second, a topic left out, which shifts the runs after it,
/// and topics sent twice (some across the end of a run).
const BODIES: [&[(&str, i32)]; 9] = [
    &[("T", 6), ("U", 6)],
    &[("T", 6), ("U", 6), ("V", 4)],
    &[("U", 2), ("T", 6)],
    &[("W", 6)],
    &[("T", 6), ("U", 6), ("V", 6), ("W", 6), ("X0", 6), ("X1", 6), ("X2", 6), ("X3", 6), ("X4", 6)],
    &[("T", 6), ("U", 6), ("V", 6), ("W", 6), ("X0", 6), ("X1", 2), ("X2", 6), ("X3", 6), ("X4", 6)],
    &[("T", 6), ("U", 4), ("V", 6), ("W", 6), ("X0", 6), ("X1", 6), ("X2", 6), ("X3", 6), ("X4", 6)],
    &[("T", 6), ("U", 6), ("W", 6), ("X0", 6), ("X1", 6), ("X2", 6), ("X3", 6), ("X4", 6)],
    &[("T", 6), ("T", 2), ("U", 6), ("U", 2), ("V", 6), ("V", 2), ("W", 6), ("W", 2), ("X0", 6), ("X0", 2)],
];

#[derive(Clone, Debug)]
enum Op {
    Register { broker: usize, body: usize, counter: i64, acting: Option<bool> },
    Unregister(usize),
    Wipe(usize),
    Add(usize),
    Delete(usize),
    RegisterTopic(usize, usize),
    DeleteWithRegistration(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..4usize, 0..BODIES.len(), 1..3i64, prop_oneof![Just(None), any::<bool>().prop_map(Some)])
            .prop_map(|(broker, body, counter, acting)| Op::Register { broker, body, counter, acting }),
        1 => (0..4usize).prop_map(Op::Unregister),
        1 => (0..2usize).prop_map(Op::Wipe),
        1 => (0..2usize).prop_map(Op::Add),
        1 => (0..5usize).prop_map(Op::Delete),
        1 => (0..4usize, 0..2usize).prop_map(|(t, n)| Op::RegisterTopic(t, n)),
        1 => any::<bool>().prop_map(Op::DeleteWithRegistration),
    ]
}

fn request(broker: usize, body: usize, counter: i64, acting: Option<bool>) -> RegisterBroker {
    let (name, id, addr) = BROKERS[broker];
    let mut r = reg("c", name, id, addr, &[], counter);
    r.body.topic_configs = BODIES[body].iter().map(|(t, p)| tc(t, *p)).collect();
    r.enable_acting_master = acting;
    r
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    /// Tables taking the cheap path whenever they allow it, and tables always decoding, answer and look the same
    /// after every step.
    #[test]
    fn the_cheap_path_leaves_what_the_full_path_leaves(ops in proptest::collection::vec(op(), 1..40)) {
        let (mut fast, mut full) = (RouteTables::new(), RouteTables::new());
        let mut s = S;
        for op in ops {
            match op {
                Op::Register { broker, body, counter, acting } => {
                    let req = request(broker, body, counter, acting);
                    let expected = full.register_broker(req.clone(), 0, s);
                    prop_assert_eq!(register(&mut fast, req, body, s).0, expected);
                }
                Op::Unregister(b) => {
                    let (name, id, addr) = BROKERS[b];
                    let u = unreg("c", name, id, addr);
                    prop_assert_eq!(fast.unregister_brokers(std::slice::from_ref(&u), s), full.unregister_brokers(&[u], s));
                }
                Op::Wipe(n) => prop_assert_eq!(fast.wipe_write_perm(["a", "b"][n]), full.wipe_write_perm(["a", "b"][n])),
                Op::Add(n) => prop_assert_eq!(fast.add_write_perm(["a", "b"][n]), full.add_write_perm(["a", "b"][n])),
                Op::Delete(t) => {
                    let topic = ["T", "U", "V", "W", "X1"][t];
                    fast.delete_topic(topic, None);
                    full.delete_topic(topic, None);
                }
                Op::RegisterTopic(t, n) => {
                    let topic = ["T", "U", "V", "W"][t];
                    let qd = QueueData { broker_name: ["a", "b"][n].into(), read_queue_nums: 2, write_queue_nums: 2, perm: 6, topic_sys_flag: 0 };
                    fast.register_topic(topic, vec![Some(qd.clone())]);
                    full.register_topic(topic, vec![Some(qd)]);
                }
                Op::DeleteWithRegistration(on) => s.delete_topic_with_broker_registration = on,
            }
            prop_assert_eq!(seen(&fast), seen(&full));
        }
    }
}
