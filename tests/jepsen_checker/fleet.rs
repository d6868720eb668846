//! The fleet test's checker (`tests/jepsen/fleet_check.rs`) proven on small hand-made histories: a clean one
//! passes and reports what it measured, each of the four rules fails the history made to break it, and the
//! boundaries of each rule hold (a read at exactly the bound, a send just after the fleet is whole again).

use std::collections::BTreeSet;

use crate::fleet_check::{check, check_messages, p50_max, to_json_lines, Answer, FleetEvent, FleetReport};
use crate::fleet_check::{FleetViolation, Side, Stats};

/// Rule 1's bound and rule 3's, as the fleet test declares them (10 s timeout + 5 s scan; 120 s).
const BOUND: u64 = 15_000;
const RECOVERY: u64 = 120_000;
const B0: &str = "10.0.1.0:10911";
const B1: &str = "10.0.1.1:10911";

/// Rules 1–3 over `h`, with the fleet test's three name servers and bounds.
fn judge(h: &[FleetEvent]) -> FleetReport {
    let servers: Vec<String> = ["ns0", "ns1", "ns2"].iter().map(|s| s.to_string()).collect();
    check(h, &servers, BOUND, RECOVERY)
}

/// A route read of `ns` sent at `at` and answered 10 ms later.
fn route(ns: &str, at: u64, answer: Answer) -> FleetEvent {
    FleetEvent::Route { ns: ns.into(), sent_ms: at, recv_ms: at + 10, answer }
}

fn brokers(addrs: &[&str]) -> Answer {
    Answer::Brokers(addrs.iter().map(|a| a.to_string()).collect())
}

/// A fault of `nemesis` on `target`, started at `at` and healed at `heal`.
fn fault(nemesis: &str, target: &str, side: Side, at: u64, heal: u64) -> [FleetEvent; 2] {
    [
        FleetEvent::FaultStart { at_ms: at, nemesis: nemesis.into(), target: target.into(), side },
        FleetEvent::FaultHeal { at_ms: heal, nemesis: nemesis.into(), target: target.into() },
    ]
}

/// `broker` out of reach of `ns` (every name server when empty) from `at` to `back`.
fn gone(broker: &str, ns: &[&str], at: u64, back: u64) -> [FleetEvent; 2] {
    let ns: Vec<String> = ns.iter().map(|s| s.to_string()).collect();
    [
        FleetEvent::Gone { at_ms: at, broker: broker.into(), ns: ns.clone() },
        FleetEvent::Back { at_ms: back, broker: broker.into(), ns },
    ]
}

/// Send `n`, started at `at` and done 50 ms later.
fn send(n: u64, at: u64, ok: bool) -> FleetEvent {
    FleetEvent::Send { n, start_ms: at, end_ms: at + 50, ok }
}

/// ns1 restarted (1 000–3 000, whole at 4 000), then broker 1 killed (10 000–30 000, whole at 40 100), each name
/// server dropping it 10–12 s after it went (within the bound); the sends all succeed.
fn clean() -> Vec<FleetEvent> {
    let both = || brokers(&[B0, B1]);
    let mut h = vec![route("ns0", 0, both()), route("ns1", 0, both()), route("ns2", 0, both()), send(1, 100, true)];
    let [start, heal] = fault("restart-ns", "ns1", Side::NameServers, 1_000, 3_000);
    h.extend([start, route("ns1", 1_100, Answer::Silent), send(2, 2_000, true), heal]);
    h.extend([route("ns1", 3_500, both()), FleetEvent::Whole { at_ms: 4_000 }]);
    let [start, heal] = fault("kill-broker", "b1", Side::Brokers, 10_000, 30_000);
    let [away, back] = gone(B1, &[], 10_000, 30_000);
    h.extend([start, away, route("ns0", 12_000, both()), send(3, 15_000, true)]);
    h.extend([route("ns0", 20_000, brokers(&[B0])), route("ns1", 21_000, brokers(&[B0]))]);
    h.extend([route("ns2", 22_000, brokers(&[B0])), heal, back, send(4, 35_000, true)]);
    h.extend([route("ns0", 40_000, both()), FleetEvent::Whole { at_ms: 40_100 }, send(5, 41_000, true)]);
    h
}

fn stats(report: &FleetReport, nemesis: &str) -> Stats {
    report.stats.get(nemesis).cloned().unwrap_or_else(|| panic!("no stats for {nemesis}: {:?}", report.stats))
}

#[test]
fn a_clean_fleet_history_passes_and_reports_its_times() {
    let report = judge(&clean());
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.route_reads, 10);
    assert_eq!(stats(&report, "restart-ns"), Stats { runs: 1, whole_ms: vec![1_000], ..Stats::default() });
    let kill = stats(&report, "kill-broker");
    assert_eq!((kill.runs, kill.whole_ms, kill.failed_sends), (1, vec![10_100], 0));
    // Each name server's first answer without broker 1, from its Gone at 10 000.
    assert_eq!(kill.dropped_after_ms, vec![10_000, 11_000, 12_000]);
    assert_eq!(p50_max(&kill.dropped_after_ms), Some((11_000, 12_000)));
    assert_eq!(p50_max(&[]), None);
}

/// Broker 1 gone from the name servers `ns` from 10 000 to 30 000, and `reads` in between.
fn gone_b1(ns: &[&str], reads: impl IntoIterator<Item = FleetEvent>) -> Vec<FleetEvent> {
    let [away, back] = gone(B1, ns, 10_000, 30_000);
    let mut h = vec![away];
    h.extend(reads);
    h.push(back);
    h
}

#[test]
fn a_route_to_a_broker_gone_past_the_bound_is_stale() {
    let h = gone_b1(&[], [route("ns0", 25_001, brokers(&[B0, B1]))]);
    assert_eq!(
        judge(&h).violations,
        vec![FleetViolation::StaleRoute { ns: "ns0".into(), broker: B1.into(), gone_ms: 10_000, sent_ms: 25_001 }]
    );
    // At exactly the bound or before it the name server may still route to it: the scan has not had its turn.
    let h = gone_b1(&[], [route("ns0", 25_000, brokers(&[B0, B1])), route("ns1", 11_000, brokers(&[B0, B1]))]);
    assert_eq!(judge(&h).violations, vec![]);
}

#[test]
fn a_route_answered_after_the_broker_is_back_is_not_stale() {
    // Sent while it was gone but answered after the Back (30 000): the broker may have registered again.
    let slow = FleetEvent::Route { ns: "ns0".into(), sent_ms: 29_995, recv_ms: 30_005, answer: brokers(&[B0, B1]) };
    let h = gone_b1(&[], [slow, route("ns1", 31_000, brokers(&[B0, B1]))]);
    assert_eq!(judge(&h).violations, vec![]);
}

#[test]
fn a_broker_cut_from_one_name_server_is_judged_on_that_one_only() {
    // Cut from ns2 only: ns0 and ns1 still reach it and rightly route to it.
    let reads = ["ns0", "ns1", "ns2"].map(|ns| route(ns, 26_000, brokers(&[B0, B1])));
    assert_eq!(
        judge(&gone_b1(&["ns2"], reads)).violations,
        vec![FleetViolation::StaleRoute { ns: "ns2".into(), broker: B1.into(), gone_ms: 10_000, sent_ms: 26_000 }]
    );
}

#[test]
fn a_missing_topic_or_a_silent_name_server_is_never_a_stale_route() {
    // TOPIC_NOT_EXIST (17): no broker of the topic left; no answer: the name server is down or cut off.
    let h = gone_b1(&[], [route("ns0", 26_000, Answer::Code(17)), route("ns1", 26_000, Answer::Silent)]);
    assert_eq!(judge(&h).violations, vec![]);
}

#[test]
fn dropped_after_is_the_time_to_the_first_answer_without_the_broker() {
    let [start, heal] = fault("pause-broker", "b1", Side::Brokers, 10_000, 30_000);
    // ns0: silent (no answer), still naming it (within the bound), then without it from 16 000; ns1: the topic
    // gone at 14 000; ns2 never answers without it, so has no time.
    let reads = [
        route("ns0", 11_000, Answer::Silent),
        route("ns0", 12_000, brokers(&[B0, B1])),
        route("ns0", 16_000, brokers(&[B0])),
        route("ns0", 18_000, brokers(&[B0])),
        route("ns1", 14_000, Answer::Code(17)),
        route("ns2", 14_000, Answer::Silent),
    ];
    let mut h = vec![start];
    h.extend(gone_b1(&[], reads));
    h.extend([heal, FleetEvent::Whole { at_ms: 31_000 }]);
    let report = judge(&h);
    assert_eq!(report.violations, vec![]);
    assert_eq!(stats(&report, "pause-broker").dropped_after_ms, vec![6_000, 4_000]);
}

/// The clean history with `sends` added, every send at the end in the order they started: as the fleet test
/// records them (the producer's output, read after the run), and as rule 2 reads runs of failures in a row.
fn clean_with(sends: impl IntoIterator<Item = FleetEvent>) -> FleetReport {
    let (mut sends, mut h): (Vec<_>, Vec<_>) =
        clean().into_iter().chain(sends).partition(|e| matches!(e, FleetEvent::Send { .. }));
    sends.sort_by_key(|e| match e {
        FleetEvent::Send { start_ms, .. } => *start_ms,
        _ => unreachable!(),
    });
    h.extend(sends);
    judge(&h)
}

#[test]
fn a_send_failed_while_a_name_server_was_out_fails() {
    // ns1's window runs from its fault (1 000) to the fleet whole again (4 000), not just to the heal (3 000); a
    // send done at the fault (950–1 000) is in it, one done a millisecond before (949–999) is not.
    let report =
        clean_with([send(10, 3_900, false), send(11, 3_960, true), send(12, 950, false), send(13, 949, false)]);
    let during = Some("restart-ns".to_string());
    assert_eq!(
        report.violations,
        vec![
            FleetViolation::SendFailed { n: 13, start_ms: 949, during: None },
            FleetViolation::SendFailed { n: 12, start_ms: 950, during: during.clone() },
            FleetViolation::SendFailed { n: 10, start_ms: 3_900, during },
        ]
    );
    assert_eq!(stats(&report, "restart-ns").failed_sends, 2);
}

#[test]
fn a_send_failed_while_a_broker_was_out_is_counted_not_judged() {
    // Three failures in a row (12 000–12 250), one alone (20 000–20 050): the longest run is the first.
    let sends = [
        send(10, 12_000, false),
        send(11, 12_100, false),
        send(12, 12_200, false),
        send(13, 12_300, true),
        send(14, 20_000, false),
        send(15, 20_100, true),
    ];
    let report = clean_with(sends);
    assert_eq!(report.violations, vec![]);
    let kill = stats(&report, "kill-broker");
    assert_eq!((kill.failed_sends, kill.longest_failing_ms), (4, 250));
}

#[test]
fn a_send_failed_outside_every_fault_fails() {
    // 4 001: just after the fleet was whole again; 50 000: long after the last fault.
    let report = clean_with([send(10, 4_001, false), send(11, 50_000, false)]);
    assert_eq!(
        report.violations,
        vec![
            FleetViolation::SendFailed { n: 10, start_ms: 4_001, during: None },
            FleetViolation::SendFailed { n: 11, start_ms: 50_000, during: None },
        ]
    );
    assert_eq!(stats(&report, "restart-ns").failed_sends, 0);
}

/// ns1 restarted (1 000–3 000) and `whole`, then a read after it.
fn healed_then(whole: Option<u64>) -> Vec<FleetEvent> {
    let mut h = fault("restart-ns", "ns1", Side::NameServers, 1_000, 3_000).to_vec();
    h.extend(whole.map(|at_ms| FleetEvent::Whole { at_ms }));
    h.push(route("ns0", 200_000, brokers(&[B0, B1])));
    h
}

#[test]
fn a_fleet_not_whole_within_the_recovery_bound_after_a_heal_fails() {
    let not_whole = vec![FleetViolation::NotWholeAfterHeal { nemesis: "restart-ns".into(), heal_ms: 3_000 }];
    assert_eq!(judge(&healed_then(Some(3_000 + RECOVERY + 1))).violations, not_whole);
    assert_eq!(judge(&healed_then(None)).violations, not_whole);
    // A Whole before the heal is not the one after it.
    let mut h = healed_then(None);
    h.insert(1, FleetEvent::Whole { at_ms: 2_000 });
    assert_eq!(judge(&h).violations, not_whole);
    // At exactly the bound it passes, and the time is reported.
    let report = judge(&healed_then(Some(3_000 + RECOVERY)));
    assert_eq!((&report.violations[..], stats(&report, "restart-ns").whole_ms), (&[][..], vec![RECOVERY]));
}

#[test]
fn an_acknowledged_message_the_fleet_consumer_did_not_read_fails() {
    let acked: BTreeSet<u64> = [1, 2, 3, 5].into();
    // 4 was never acknowledged (a failed send), so not reading it is fine; 3 was, and is lost.
    let mut report = judge(&clean());
    check_messages(&acked, &[1, 2, 5, 6].into(), &mut report);
    assert_eq!(report.violations, vec![FleetViolation::Lost { count: 1, first: vec![3] }]);
    let mut report = judge(&clean());
    check_messages(&acked, &acked, &mut report);
    assert_eq!(report.violations, vec![]);
}

#[test]
fn fleet_histories_round_trip_as_json_lines() {
    let mut h = clean();
    h.extend([route("ns2", 50_000, Answer::Code(17)), send(6, 50_000, false)]);
    let text = to_json_lines(&h);
    assert_eq!(text.lines().count(), h.len());
    let back: Vec<FleetEvent> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(back, h);
}
