//! Counters and histograms for `/metrics` (Prometheus text format). Each reactor owns its own `ReactorMetrics`
//! (written by that thread only, so no cache line is shared on the hot path); the writer owns `WriterMetrics`.
//! The exporter sums them when scraped.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use crate::limit::Limit;
use crate::state::routes::EvictionCause;
use crate::state::Snapshot;

mod controller;
mod fleet;
mod history;
mod http;
mod kv_raft;
mod process;

pub(crate) use controller::ControllerMetrics;
pub(crate) use fleet::{AspectDrift, FleetView, PeerReport, MAX_NAMES as FLEET_MAX_NAMES};
pub(crate) use history::History;
pub(crate) use http::{HttpMetrics, HttpRefusal};
pub(crate) use kv_raft::KvRaftMetrics;

/// The request codes counted separately (every code the name server serves); everything else is `other`.
use crate::protocol::code::REQUEST_NAMES as CODES;
const N: usize = CODES.len() + 1;

fn slot(code: i32) -> usize {
    CODES.iter().position(|(c, _)| *c == code).unwrap_or(CODES.len())
}

fn name(slot: usize) -> &'static str {
    CODES.get(slot).map(|(_, n)| *n).unwrap_or("other")
}

/// The response codes counted separately (every code the name server answers); anything else is `other`.
use crate::protocol::code::RESPONSE_NAMES as RESPONSES;
pub(crate) const RESPONSE_SLOTS: usize = RESPONSES.len() + 1;

/// SUCCESS is first in `RESPONSES`, so the common reply costs one comparison.
fn response_slot(code: i32) -> usize {
    RESPONSES.iter().position(|(c, _)| *c == code).unwrap_or(RESPONSES.len())
}

/// A response slot's Java name (`TOPIC_NOT_EXIST`), or `other`.
pub(crate) fn response_name(slot: usize) -> &'static str {
    RESPONSES.get(slot).map(|(_, n)| *n).unwrap_or("other")
}

/// How a reply counts in `namesrv_requests_total{result}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    /// TOPIC_NOT_EXIST, QUERY_NOT_FOUND: normal answers to clients probing for a topic or a KV key, not failures.
    NotFound,
    Error,
}

impl Outcome {
    pub(crate) fn of_slot(slot: usize) -> Outcome {
        use crate::protocol::ResponseCode as R;
        match RESPONSES.get(slot).map(|(c, _)| *c) {
            Some(R::SUCCESS) => Outcome::Success,
            Some(R::TOPIC_NOT_EXIST | R::QUERY_NOT_FOUND) => Outcome::NotFound,
            _ => Outcome::Error,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::NotFound => "not_found",
            Outcome::Error => "error",
        }
    }
}

/// Upper bounds of the latency buckets, in microseconds.
const BOUNDS_US: [u64; 14] =
    [25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000];

/// A fixed-bucket histogram of durations.
#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        if let Some(i) = BOUNDS_US.iter().position(|b| us <= *b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
    }

    fn add_into(&self, acc: &mut HistogramSum) {
        for (a, b) in acc.buckets.iter_mut().zip(&self.buckets) {
            *a += b.load(Relaxed);
        }
        acc.count += self.count.load(Relaxed);
        acc.sum_us += self.sum_us.load(Relaxed);
    }
}

#[derive(Default, Clone, Copy)]
struct HistogramSum {
    buckets: [u64; BOUNDS_US.len()],
    count: u64,
    sum_us: u64,
}

/// One reactor's counters.
#[derive(Default)]
pub struct ReactorMetrics {
    /// Replies by request code and response code (one-way requests count as SUCCESS when handed over).
    responses: [[AtomicU64; RESPONSE_SLOTS]; N],
    latency: [Histogram; N],
    pub connections_open: AtomicI64,
    pub connections_accepted: AtomicU64,
    pub broken_frames: AtomicU64,
    pub busy_rejections: AtomicU64,
    /// Registrations that waited for room on the decoder's queue (`Reactor::park`).
    pub parked: AtomicU64,
    /// Big frames whose reading stopped until the decoder's queue had room for them (`Reactor::held`).
    pub held: AtomicU64,
    pub notifications_sent: AtomicU64,
    limit_hits: [AtomicU64; Limit::ALL.len()],
    /// Set by the reactor while draining once nothing is owed to any client.
    pub drained: std::sync::atomic::AtomicBool,
}

impl ReactorMetrics {
    /// One answered request: its code, the response code of its reply, and how long it took from decode to reply.
    pub(crate) fn request(&self, code: i32, response: i32, took: Duration) {
        let s = slot(code);
        self.responses[s][response_slot(response)].fetch_add(1, Relaxed);
        self.latency[s].observe(took);
    }

    /// A peer went over a limit (once per refused request, connection, or pause).
    pub(crate) fn limit_hit(&self, limit: Limit) {
        // Release, with the Acquire in `limit_hits`: what the reactor did before counting (its log line) is seen
        // by whoever sees the count.
        self.limit_hits[limit as usize].fetch_add(1, std::sync::atomic::Ordering::Release);
    }
}

/// The writer's counters and gauges.
#[derive(Default)]
pub struct WriterMetrics {
    pub publishes: AtomicU64,
    pub publish_latency: Histogram,
    pub batches: AtomicU64,
    pub commands: AtomicU64,
    pub kv_writes: AtomicU64,
    pub kv_write_failures: AtomicU64,
    /// Registrations whose body was recognised as the broker's last one and applied without decoding it.
    pub same_body_registrations: AtomicU64,
    evictions: [AtomicU64; 3],
    pub live_brokers: AtomicU64,
    /// Brokers restored by a warm restart that have not re-registered yet.
    pub provisional_brokers: AtomicU64,
    /// What the writer has done, counted only once the batch that did it is published (before its replies): so
    /// whoever sees a count also sees the snapshot that followed, and can check a thing did *not* happen (a route
    /// still there) by waiting for the event that could have changed it instead of sleeping. REGISTER_BROKER
    /// requests applied (unchanged re-registrations and refused ones included),
    pub registrations: AtomicU64,
    /// closes of broker connections applied (whether or not they evicted anything),
    pub connection_closes: AtomicU64,
    /// and expiry scans run.
    pub expiry_scans: AtomicU64,
}

impl WriterMetrics {
    pub(crate) fn evicted(&self, cause: EvictionCause, n: usize) {
        let i = match cause {
            EvictionCause::Unregistered => 0,
            EvictionCause::Expired => 1,
            EvictionCause::ConnectionClosed => 2,
        };
        self.evictions[i].fetch_add(n as u64, Relaxed);
    }
}

/// The account file's counters (`aclEnable`); refusals are `namesrv_limit_hits_total{limit="acl"}`.
#[derive(Default)]
pub struct AclMetrics {
    pub enabled: std::sync::atomic::AtomicBool,
    pub accounts: AtomicU64,
    pub reloads: AtomicU64,
    pub reload_failures: AtomicU64,
    /// ACL 2.0 (`authenticationEnabled`): user lists learned from the brokers, rounds in which no broker answered,
    /// and users the brokers of the last round described differently.
    pub users_mode: std::sync::atomic::AtomicBool,
    pub user_refreshes: AtomicU64,
    pub user_refresh_failures: AtomicU64,
    pub user_disagreements: AtomicU64,
    /// Requests refused for want of an account, by `Refusal::reason` (`REFUSAL_REASONS`).
    pub refusals: [AtomicU64; REFUSAL_REASONS.len()],
}

/// The reasons of [`crate::acl::Refusal::reason`], in the order `AclMetrics::refusals` counts them.
pub const REFUSAL_REASONS: [&str; 7] =
    ["no_access_key", "unknown_account", "address", "signature", "not_admin", "disabled", "other"];

impl AclMetrics {
    pub(crate) fn refused(&self, why: &crate::acl::Refusal) {
        let i = REFUSAL_REASONS.iter().position(|r| *r == why.reason()).unwrap_or(REFUSAL_REASONS.len() - 1);
        self.refusals[i].fetch_add(1, Relaxed);
    }
}

/// Everything `/metrics` shows.
#[derive(Clone, Default)]
pub struct Metrics {
    pub reactors: Vec<Arc<ReactorMetrics>>,
    pub writer: Arc<WriterMetrics>,
    pub acl: Arc<AclMetrics>,
    pub controller: Arc<ControllerMetrics>,
    /// `kvReplicationEnabled`: the replicated KV group.
    pub kv_raft: Arc<KvRaftMetrics>,
    pub http: Arc<HttpMetrics>,
    /// The chart history, sampled and read on the HTTP thread only (the lock is never contended).
    pub history: Arc<std::sync::Mutex<History>>,
    /// `namesrvPeers`: the fleet view, when set.
    pub fleet: Option<Arc<FleetView>>,
}

impl Metrics {
    pub(crate) fn new(reactors: usize) -> Metrics {
        Metrics { reactors: (0..reactors).map(|_| Arc::default()).collect(), ..Metrics::default() }
    }

    /// Takes a sample into the chart history (the HTTP thread, every step).
    pub(crate) fn sample_history(&self, snap: &Snapshot, wall_ms: i64, mono_ms: u64) {
        let totals = self.totals(snap);
        self.history.lock().unwrap_or_else(|e| e.into_inner()).sample(wall_ms, mono_ms, &totals);
    }

    /// The `/api/history` answer.
    pub(crate) fn history_json(&self, now_ms: i64) -> serde_json::Value {
        self.history.lock().unwrap_or_else(|e| e.into_inner()).to_json(now_ms)
    }

    /// How often peers went over `limit`, summed over the reactors and the controller port.
    pub fn limit_hits(&self, limit: Limit) -> u64 {
        let acquire = std::sync::atomic::Ordering::Acquire;
        let reactors: u64 = self.reactors.iter().map(|r| r.limit_hits[limit as usize].load(acquire)).sum();
        reactors + self.controller.limit_hits[limit as usize].load(acquire)
    }

    /// Replies and latencies summed over the reactors, by request code.
    fn request_sums(&self) -> ([[u64; RESPONSE_SLOTS]; N], [HistogramSum; N]) {
        let mut responses = [[0u64; RESPONSE_SLOTS]; N];
        let mut lat = [HistogramSum::default(); N];
        for r in &self.reactors {
            for s in 0..N {
                for (acc, n) in responses[s].iter_mut().zip(&r.responses[s]) {
                    *acc += n.load(Relaxed);
                }
                r.latency[s].add_into(&mut lat[s]);
            }
        }
        (responses, lat)
    }

    /// What the chart history samples (`history`): counters summed over every request code and reactor.
    pub(crate) fn totals(&self, snap: &Snapshot) -> Totals {
        let (responses, lat) = self.request_sums();
        let mut t = Totals::default();
        for s in 0..N {
            for (acc, n) in t.responses.iter_mut().zip(responses[s]) {
                *acc += n;
            }
            for (acc, n) in t.latency_buckets.iter_mut().zip(lat[s].buckets) {
                *acc += n;
            }
            t.latency_count += lat[s].count;
        }
        t.connections = self.reactors.iter().map(|r| r.connections_open.load(Relaxed)).sum::<i64>().max(0) as u64;
        t.brokers = self.writer.live_brokers.load(Relaxed);
        t.topics = snap.routes.topic_count() as u64;
        t
    }

    /// Prometheus text exposition.
    pub fn render(&self, snap: &Snapshot, writer_queue_depth: usize) -> String {
        let mut o = String::with_capacity(16 * 1024);
        let (responses, lat) = self.request_sums();
        let help = "Requests answered, by request code and result (success, not_found, error).";
        header(&mut o, "namesrv_requests_total", "counter", help);
        for (s, by_response) in responses.iter().enumerate() {
            for outcome in [Outcome::Success, Outcome::NotFound, Outcome::Error] {
                let v: u64 =
                    (0..RESPONSE_SLOTS).filter(|r| Outcome::of_slot(*r) == outcome).map(|r| by_response[r]).sum();
                if v > 0 {
                    let (code, result) = (name(s), outcome.label());
                    let _ = writeln!(o, "namesrv_requests_total{{code=\"{code}\",result=\"{result}\"}} {v}");
                }
            }
        }
        header(&mut o, "namesrv_responses_total", "counter", "Replies, by request code and response code.");
        for (s, by_response) in responses.iter().enumerate() {
            for (r, v) in by_response.iter().enumerate() {
                if *v > 0 {
                    let (code, response) = (name(s), response_name(r));
                    let _ = writeln!(o, "namesrv_responses_total{{code=\"{code}\",response=\"{response}\"}} {v}");
                }
            }
        }
        header(&mut o, "namesrv_request_duration_seconds", "histogram", "From decoded request to queued reply.");
        for (s, h) in lat.iter().enumerate() {
            if h.count > 0 {
                histogram(&mut o, "namesrv_request_duration_seconds", &format!("code=\"{}\"", name(s)), h);
            }
        }
        let sum = |f: fn(&ReactorMetrics) -> u64| self.reactors.iter().map(|r| f(r)).sum::<u64>();
        let gauge_open: i64 = self.reactors.iter().map(|r| r.connections_open.load(Relaxed)).sum();
        metric(&mut o, "namesrv_connections_open", "gauge", "Open client connections.", gauge_open);
        let accepted = sum(|r| r.connections_accepted.load(Relaxed));
        metric(&mut o, "namesrv_connections_accepted_total", "counter", "Accepted connections.", accepted);
        let broken = sum(|r| r.broken_frames.load(Relaxed));
        metric(&mut o, "namesrv_broken_frames_total", "counter", "Connections closed for a broken frame.", broken);
        let busy = sum(|r| r.busy_rejections.load(Relaxed));
        metric(&mut o, "namesrv_busy_rejections_total", "counter", "Writes refused with SYSTEM_BUSY.", busy);
        let parked = sum(|r| r.parked.load(Relaxed));
        let help = "Registrations that waited, unread behind them, for room on the decoder's queue.";
        metric(&mut o, "namesrv_parked_registrations_total", "counter", help, parked);
        let held = sum(|r| r.held.load(Relaxed));
        let help = "Big frames whose reading waited, the rest in the kernel, for room on the decoder's queue.";
        metric(&mut o, "namesrv_held_frames_total", "counter", help, held);
        let sent = sum(|r| r.notifications_sent.load(Relaxed));
        metric(&mut o, "namesrv_notifications_total", "counter", "NOTIFY_MIN_BROKER_ID_CHANGE frames queued.", sent);
        header(&mut o, "namesrv_limit_hits_total", "counter", "Peers over a configured limit, by limit.");
        for limit in Limit::ALL {
            let _ = writeln!(o, "namesrv_limit_hits_total{{limit=\"{}\"}} {}", limit.name(), self.limit_hits(limit));
        }
        let acl = &self.acl;
        let on = u8::from(acl.enabled.load(Relaxed));
        metric(&mut o, "namesrv_acl_enabled", "gauge", "1 when requests must be signed (aclEnable).", on);
        metric(&mut o, "namesrv_acl_accounts", "gauge", "Accounts in the ACL file.", acl.accounts.load(Relaxed));
        let reloads = acl.reloads.load(Relaxed);
        metric(&mut o, "namesrv_acl_reloads_total", "counter", "Changed ACL files taken into use.", reloads);
        let failed = acl.reload_failures.load(Relaxed);
        metric(&mut o, "namesrv_acl_reload_failures_total", "counter", "Changed ACL files refused.", failed);
        if on == 1 {
            let help = "Requests refused for want of an account (aclEnable, authenticationEnabled), by reason.";
            header(&mut o, "namesrv_acl_refusals_total", "counter", help);
            for (i, reason) in REFUSAL_REASONS.iter().enumerate() {
                let n = acl.refusals[i].load(Relaxed);
                let _ = writeln!(o, "namesrv_acl_refusals_total{{reason=\"{reason}\"}} {n}");
            }
        }
        if acl.users_mode.load(Relaxed) {
            let n = acl.user_refreshes.load(Relaxed);
            metric(
                &mut o,
                "namesrv_auth_user_refreshes_total",
                "counter",
                "ACL 2.0 user lists learned from brokers.",
                n,
            );
            let n = acl.user_refresh_failures.load(Relaxed);
            let help = "Refreshes of the ACL 2.0 users in which no broker answered (the last good list stays).";
            metric(&mut o, "namesrv_auth_user_refresh_failures_total", "counter", help, n);
            let n = acl.user_disagreements.load(Relaxed);
            let help = "Users the brokers asked last described differently (the narrowest view is used).";
            metric(&mut o, "namesrv_auth_user_disagreements", "gauge", help, n);
        }

        let w = &self.writer;
        metric(&mut o, "namesrv_brokers", "gauge", "Live brokers.", w.live_brokers.load(Relaxed));
        let provisional = w.provisional_brokers.load(Relaxed);
        metric(
            &mut o,
            "namesrv_provisional_brokers",
            "gauge",
            "Brokers restored at start, not re-registered yet.",
            provisional,
        );
        metric(&mut o, "namesrv_topics", "gauge", "Topics in the route table.", snap.routes.topic_count());
        let entries = snap.routes.queue_entry_count();
        metric(
            &mut o,
            "namesrv_queue_entries",
            "gauge",
            "Topic-queue entries (one per topic and broker group).",
            entries,
        );
        metric(&mut o, "namesrv_kv_entries", "gauge", "KV config entries.", snap.kv.len());
        metric(&mut o, "namesrv_snapshot_generation", "gauge", "Published snapshot generation.", snap.generation);
        metric(&mut o, "namesrv_writer_queue_depth", "gauge", "Writes waiting for the writer.", writer_queue_depth);
        metric(&mut o, "namesrv_writer_batches_total", "counter", "Writer batches.", w.batches.load(Relaxed));
        metric(&mut o, "namesrv_writer_commands_total", "counter", "Writes applied.", w.commands.load(Relaxed));
        let registrations = w.registrations.load(Relaxed);
        metric(&mut o, "namesrv_registrations_total", "counter", "REGISTER_BROKER requests applied.", registrations);
        let same = w.same_body_registrations.load(Relaxed);
        let help = "Registrations applied without decoding their body (the broker's last one, new DataVersion).";
        metric(&mut o, "namesrv_registrations_same_body_total", "counter", help, same);
        let closes = w.connection_closes.load(Relaxed);
        metric(
            &mut o,
            "namesrv_broker_connection_closes_total",
            "counter",
            "Closes of broker connections applied, evicting or not.",
            closes,
        );
        let scans = w.expiry_scans.load(Relaxed);
        metric(&mut o, "namesrv_expiry_scans_total", "counter", "Expiry scans run.", scans);
        metric(
            &mut o,
            "namesrv_snapshot_publishes_total",
            "counter",
            "Snapshots published.",
            w.publishes.load(Relaxed),
        );
        header(&mut o, "namesrv_snapshot_publish_seconds", "histogram", "Time to build and store a snapshot.");
        let mut ph = HistogramSum::default();
        w.publish_latency.add_into(&mut ph);
        histogram(&mut o, "namesrv_snapshot_publish_seconds", "", &ph);
        header(&mut o, "namesrv_evictions_total", "counter", "Brokers removed, by cause.");
        for (i, cause) in ["unregistered", "expired", "connection_closed"].iter().enumerate() {
            let _ = writeln!(o, "namesrv_evictions_total{{cause=\"{cause}\"}} {}", w.evictions[i].load(Relaxed));
        }
        metric(&mut o, "namesrv_kv_writes_total", "counter", "KV file saves.", w.kv_writes.load(Relaxed));
        metric(
            &mut o,
            "namesrv_kv_write_failures_total",
            "counter",
            "Failed KV file saves.",
            w.kv_write_failures.load(Relaxed),
        );
        controller::render(&mut o, &self.controller);
        kv_raft::render(&mut o, &self.kv_raft);
        http::render(&mut o, &self.http);
        if let Some(view) = &self.fleet {
            fleet::render(&mut o, view);
        }
        process::render(&mut o);
        o
    }
}

/// Counters and levels summed over the reactors, for the chart history.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Totals {
    /// Replies by response slot (`response_name`), every request code together.
    pub responses: [u64; RESPONSE_SLOTS],
    /// Request latencies, every request code together: per bucket of `BOUNDS_US` (not cumulative), and in all.
    pub latency_buckets: [u64; BOUNDS_US.len()],
    pub latency_count: u64,
    pub connections: u64,
    pub brokers: u64,
    pub topics: u64,
}

fn header(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn metric(o: &mut String, name: &str, kind: &str, help: &str, v: impl std::fmt::Display) {
    header(o, name, kind, help);
    let _ = writeln!(o, "{name} {v}");
}

fn histogram(o: &mut String, name: &str, labels: &str, h: &HistogramSum) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (b, n) in BOUNDS_US.iter().zip(h.buckets) {
        cumulative += n;
        let le = *b as f64 / 1e6;
        let _ = writeln!(o, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(o, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", h.count);
    let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
    let _ = writeln!(o, "{name}_sum{braces} {}", h.sum_us as f64 / 1e6);
    let _ = writeln!(o, "{name}_count{braces} {}", h.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(10));
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_secs(5));
        let mut s = HistogramSum::default();
        h.add_into(&mut s);
        let mut out = String::new();
        histogram(&mut out, "x", "code=\"A\"", &s);
        assert!(out.contains("x_bucket{code=\"A\",le=\"0.000025\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{code=\"A\",le=\"0.0005\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{code=\"A\",le=\"1\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{code=\"A\",le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count{code=\"A\"} 3\n"), "{out}");
    }

    #[test]
    fn replies_are_counted_by_response_code_and_not_found_is_apart() {
        use crate::protocol::{RequestCode as C, ResponseCode as R};
        let m = Metrics::new(2);
        let t = Duration::from_micros(10);
        m.reactors[0].request(C::GET_ROUTEINFO_BY_TOPIC, R::SUCCESS, t);
        m.reactors[1].request(C::GET_ROUTEINFO_BY_TOPIC, R::SUCCESS, t);
        m.reactors[0].request(C::GET_ROUTEINFO_BY_TOPIC, R::TOPIC_NOT_EXIST, t);
        m.reactors[0].request(C::GET_KV_CONFIG, R::QUERY_NOT_FOUND, t);
        m.reactors[1].request(C::REGISTER_BROKER, R::SYSTEM_BUSY, t);
        m.reactors[1].request(C::REGISTER_BROKER, 4242, t);
        let config = Arc::new(crate::config::Config::default());
        let snap = crate::writer::Writer::initial_snapshot(Default::default(), config);
        let text = m.render(&snap, 0);
        for line in [
            "namesrv_requests_total{code=\"GET_ROUTEINFO_BY_TOPIC\",result=\"success\"} 2",
            "namesrv_requests_total{code=\"GET_ROUTEINFO_BY_TOPIC\",result=\"not_found\"} 1",
            "namesrv_requests_total{code=\"GET_KV_CONFIG\",result=\"not_found\"} 1",
            "namesrv_requests_total{code=\"REGISTER_BROKER\",result=\"error\"} 2",
            "namesrv_responses_total{code=\"GET_ROUTEINFO_BY_TOPIC\",response=\"SUCCESS\"} 2",
            "namesrv_responses_total{code=\"GET_ROUTEINFO_BY_TOPIC\",response=\"TOPIC_NOT_EXIST\"} 1",
            "namesrv_responses_total{code=\"GET_KV_CONFIG\",response=\"QUERY_NOT_FOUND\"} 1",
            "namesrv_responses_total{code=\"REGISTER_BROKER\",response=\"SYSTEM_BUSY\"} 1",
            "namesrv_responses_total{code=\"REGISTER_BROKER\",response=\"other\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(!text.contains("GET_ROUTEINFO_BY_TOPIC\",result=\"error\""), "not found is no error:\n{text}");
        let totals = m.totals(&snap);
        assert_eq!(totals.responses[response_slot(R::SUCCESS)], 2);
        assert_eq!(totals.responses.iter().sum::<u64>(), 6);
        assert_eq!(totals.latency_count, 6);
    }

    #[test]
    fn every_response_the_name_server_gives_has_its_own_slot() {
        use crate::protocol::ResponseCode as R;
        for (code, name) in RESPONSES {
            assert_eq!(response_name(response_slot(code)), name);
        }
        assert_eq!(response_name(response_slot(4242)), "other");
        assert_eq!(Outcome::of_slot(response_slot(R::SUCCESS)), Outcome::Success);
        assert_eq!(Outcome::of_slot(response_slot(R::TOPIC_NOT_EXIST)), Outcome::NotFound);
        assert_eq!(Outcome::of_slot(response_slot(R::QUERY_NOT_FOUND)), Outcome::NotFound);
        let errors =
            [R::SYSTEM_ERROR, R::SYSTEM_BUSY, R::REQUEST_CODE_NOT_SUPPORTED, R::NO_PERMISSION, R::GO_AWAY, 4242];
        for code in errors {
            assert_eq!(Outcome::of_slot(response_slot(code)), Outcome::Error, "{code}");
        }
    }

    #[test]
    fn unknown_codes_count_as_other() {
        assert_eq!(name(slot(9999)), "other");
        assert_eq!(name(slot(105)), "GET_ROUTEINFO_BY_TOPIC");
    }
}
