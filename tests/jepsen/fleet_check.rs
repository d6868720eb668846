//! The fleet test's history and checker (`fleet.rs`): three name servers, brokers that register with all of them,
//! and clients given all three addresses. Rules over the recorded history:
//!
//! 1. **No stale route**: once a broker has been out of a name server's reach (killed, paused, or cut off from it)
//!    for longer than its declared heartbeat timeout plus one expiry scan (`bound_ms`), that name server's routes
//!    no longer name it, until it is back. Java's rule (namesrv-protocol.md §5.6): a silent broker goes at the
//!    first scan after `lastUpdateTimestamp + heartbeatTimeoutMillis`; a closed connection takes it sooner.
//! 2. **No send fails because of the name servers**: a send that failed while a name server was down, restarted
//!    or cut off from the brokers (from the fault to the fleet being whole again) is a violation, and so is a
//!    failed send that no fault explains. The client's own resend covers a name server that is gone: sends use the
//!    route it already has, and its refresh moves on to the next address it was given. Sends that fail while a
//!    *broker* is down are counted, not judged: which broker the client picks is the client's affair (its default
//!    keeps picking a paused broker until its next route refresh, 30 s).
//! 3. **The fleet is whole again after every heal**, within `recovery_ms`: every name server routes to every broker.
//!    The times are reported.
//! 4. **No acknowledged message lost**: every send acknowledged is read by a consumer that was given all three
//!    addresses too.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// What a name server answered to GET_ROUTEINFO_BY_TOPIC (105).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// SUCCESS: the broker addresses the route names.
    Brokers(Vec<String>),
    /// Another code (TOPIC_NOT_EXIST once no broker of the topic is left).
    Code(i32),
    /// No answer within the recorder's timeout (down, paused, or not accepting yet).
    Silent,
}

/// Which side a fault is on: rule 2 judges failed sends by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    NameServers,
    Brokers,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FleetEvent {
    Route {
        ns: String,
        sent_ms: u64,
        recv_ms: u64,
        answer: Answer,
    },
    /// `broker` is out of reach of the name servers `ns` (every one when empty) from `at_ms`.
    Gone {
        at_ms: u64,
        broker: String,
        ns: Vec<String>,
    },
    /// ... and in reach again (started, continued, the cut healed).
    Back {
        at_ms: u64,
        broker: String,
        ns: Vec<String>,
    },
    FaultStart {
        at_ms: u64,
        nemesis: String,
        target: String,
        side: Side,
    },
    FaultHeal {
        at_ms: u64,
        nemesis: String,
        target: String,
    },
    /// The test saw every name server route to every broker.
    Whole {
        at_ms: u64,
    },
    /// One send of the producer (times from its own clock, moved to the run's).
    Send {
        n: u64,
        start_ms: u64,
        end_ms: u64,
        ok: bool,
    },
}

/// A broken rule, with what shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetViolation {
    StaleRoute { ns: String, broker: String, gone_ms: u64, sent_ms: u64 },
    SendFailed { n: u64, start_ms: u64, during: Option<String> },
    NotWholeAfterHeal { nemesis: String, heal_ms: u64 },
    Lost { count: usize, first: Vec<u64> },
}

/// Per nemesis: what the run measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub runs: usize,
    /// Heal → whole, per run.
    pub whole_ms: Vec<u64>,
    /// Sends that failed in its windows, and the longest run of failed sends in a row (first start → last end).
    pub failed_sends: usize,
    pub longest_failing_ms: u64,
    /// Gone → the first answer of a name server without the broker (its sent time), per (name server, broker).
    pub dropped_after_ms: Vec<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct FleetReport {
    pub violations: Vec<FleetViolation>,
    pub stats: BTreeMap<String, Stats>,
    pub route_reads: usize,
}

/// A fault's window: from its start to the fleet whole again after its heal (or the end of the history).
struct Window<'a> {
    nemesis: &'a str,
    side: Side,
    from: u64,
    to: u64,
}

fn windows<'a>(events: &'a [FleetEvent], recovery_ms: u64, report: &mut FleetReport) -> Vec<Window<'a>> {
    let end = events.iter().map(at_ms).max().unwrap_or(0);
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let FleetEvent::FaultStart { at_ms: from, nemesis, target, side } = e else { continue };
        let stats = report.stats.entry(nemesis.clone()).or_default();
        stats.runs += 1;
        let heal = events[i..].iter().find_map(|e| match e {
            FleetEvent::FaultHeal { at_ms, nemesis: n, target: t } if n == nemesis && t == target => Some(*at_ms),
            _ => None,
        });
        let whole = heal.and_then(|h| {
            events.iter().find_map(|e| match e {
                FleetEvent::Whole { at_ms } if *at_ms >= h => Some(*at_ms),
                _ => None,
            })
        });
        match (heal, whole) {
            (Some(h), Some(w)) if w - h <= recovery_ms => stats.whole_ms.push(w - h),
            (Some(h), _) => {
                report.violations.push(FleetViolation::NotWholeAfterHeal { nemesis: nemesis.clone(), heal_ms: h })
            }
            (None, _) => {}
        }
        out.push(Window { nemesis, side: *side, from: *from, to: whole.unwrap_or(end) });
    }
    out
}

fn at_ms(e: &FleetEvent) -> u64 {
    match e {
        FleetEvent::Route { recv_ms, .. } => *recv_ms,
        FleetEvent::Gone { at_ms, .. }
        | FleetEvent::Back { at_ms, .. }
        | FleetEvent::FaultStart { at_ms, .. }
        | FleetEvent::FaultHeal { at_ms, .. }
        | FleetEvent::Whole { at_ms } => *at_ms,
        FleetEvent::Send { end_ms, .. } => *end_ms,
    }
}

/// Rules 1–3 over `events`; `bound_ms` is rule 1's (timeout + scan), `recovery_ms` rule 3's.
pub fn check(events: &[FleetEvent], name_servers: &[String], bound_ms: u64, recovery_ms: u64) -> FleetReport {
    let mut report = FleetReport::default();
    let windows = windows(events, recovery_ms, &mut report);
    report.route_reads = events.iter().filter(|e| matches!(e, FleetEvent::Route { .. })).count();

    // Rule 1, per gone interval and name server.
    for (i, e) in events.iter().enumerate() {
        let FleetEvent::Gone { at_ms: gone, broker, ns } = e else { continue };
        let affected: Vec<&String> = if ns.is_empty() { name_servers.iter().collect() } else { ns.iter().collect() };
        let back = events[i..]
            .iter()
            .find_map(|e| match e {
                FleetEvent::Back { at_ms, broker: b, ns: n } if b == broker && n == ns => Some(*at_ms),
                _ => None,
            })
            .unwrap_or(u64::MAX);
        let nemesis = windows.iter().rev().find(|w| w.from <= *gone).map(|w| w.nemesis.to_string());
        for server in affected {
            let reads = events.iter().filter_map(|e| match e {
                FleetEvent::Route { ns, sent_ms, recv_ms, answer }
                    if ns == server && *sent_ms >= *gone && *recv_ms <= back =>
                {
                    Some((*sent_ms, answer))
                }
                _ => None,
            });
            let mut dropped = None;
            for (sent_ms, answer) in reads {
                let names = matches!(answer, Answer::Brokers(b) if b.contains(broker));
                if !names && matches!(answer, Answer::Brokers(_) | Answer::Code(_)) && dropped.is_none() {
                    dropped = Some(sent_ms - gone);
                }
                if names && sent_ms > gone + bound_ms {
                    report.violations.push(FleetViolation::StaleRoute {
                        ns: server.clone(),
                        broker: broker.clone(),
                        gone_ms: *gone,
                        sent_ms,
                    });
                    break;
                }
            }
            if let (Some(d), Some(n)) = (dropped, &nemesis) {
                report.stats.entry(n.clone()).or_default().dropped_after_ms.push(d);
            }
        }
    }

    // Rule 2.
    let sends: Vec<(u64, u64, u64, bool)> = events
        .iter()
        .filter_map(|e| match e {
            FleetEvent::Send { n, start_ms, end_ms, ok } => Some((*n, *start_ms, *end_ms, *ok)),
            _ => None,
        })
        .collect();
    let mut streak: Option<(u64, u64, Option<usize>)> = None; // (first start, last end, window)
    for &(n, start, end, ok) in &sends {
        if ok {
            if let Some((s, e, Some(w))) = streak.take() {
                let stats = report.stats.entry(windows[w].nemesis.to_string()).or_default();
                stats.longest_failing_ms = stats.longest_failing_ms.max(e - s);
            }
            continue;
        }
        let w = windows.iter().position(|w| end >= w.from && start <= w.to);
        if let Some(w) = w {
            report.stats.entry(windows[w].nemesis.to_string()).or_default().failed_sends += 1;
        }
        let judged = match w {
            Some(w) if windows[w].side == Side::Brokers => None,
            Some(w) => Some(Some(windows[w].nemesis.to_string())),
            None => Some(None),
        };
        if let Some(during) = judged {
            report.violations.push(FleetViolation::SendFailed { n, start_ms: start, during });
        }
        streak = Some(match streak {
            Some((s, _, sw)) => (s, end, sw.or(w)),
            None => (start, end, w),
        });
    }
    if let Some((s, e, Some(w))) = streak {
        let stats = report.stats.entry(windows[w].nemesis.to_string()).or_default();
        stats.longest_failing_ms = stats.longest_failing_ms.max(e - s);
    }
    report
}

/// Rule 4.
pub fn check_messages(acked: &BTreeSet<u64>, read: &BTreeSet<u64>, report: &mut FleetReport) {
    let lost: Vec<u64> = acked.difference(read).copied().collect();
    if !lost.is_empty() {
        report.violations.push(FleetViolation::Lost { count: lost.len(), first: lost.into_iter().take(10).collect() });
    }
}

/// `(p50, max)` of `values`, if any.
pub fn p50_max(values: &[u64]) -> Option<(u64, u64)> {
    let mut v = values.to_vec();
    v.sort_unstable();
    Some((*v.get(v.len() / 2)?, *v.last()?))
}

/// One JSON object a line.
pub fn to_json_lines(events: &[FleetEvent]) -> String {
    events.iter().map(|e| serde_json::to_string(e).expect("events serialise") + "\n").collect()
}
