//! The chart history `/api/history` serves: every step (`httpHistoryStepSeconds`, 10 s) the HTTP thread sums the
//! counters (`Metrics::totals`) and keeps the rates and levels since the last sample in a ring of
//! `HISTORY_CAPACITY` points, allocated once, so an hour of charts costs a fixed ~26 KB and survives a page reload
//! without Prometheus. Pure: time is passed in, so the ring is tested without a clock.

use std::collections::VecDeque;
use std::time::Duration;

use super::{response_name, Outcome, Totals, BOUNDS_US, RESPONSE_SLOTS};

/// Points kept: an hour at the default 10 s step.
pub(crate) const HISTORY_CAPACITY: usize = 360;

/// The default step, and the one a `Metrics::default()` starts with until the endpoint sets its own.
pub(super) const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// One step's rates (per second) and levels. `f32`s and `u32`s keep the ring small; charts need no more.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct HistoryPoint {
    /// Epoch milliseconds at the end of the step.
    pub t_ms: i64,
    /// Replies of every kind.
    pub requests: f32,
    /// TOPIC_NOT_EXIST and QUERY_NOT_FOUND replies.
    pub not_found: f32,
    /// Replies by response slot; only the slots that are errors (`Outcome::Error`) are ever non-zero.
    pub errors: [f32; RESPONSE_SLOTS],
    /// The 99th percentile of the step's request latencies, interpolated within its bucket; 0 with no requests.
    pub p99_ms: f32,
    pub connections: u32,
    pub brokers: u32,
    pub topics: u32,
}

/// The ring and the counters of the last sample, which the next one's rates are taken against.
#[derive(Debug)]
pub struct History {
    step: Duration,
    points: VecDeque<HistoryPoint>,
    /// Monotonic milliseconds and counters at the last sample.
    last: Option<(u64, Totals)>,
}

impl Default for History {
    fn default() -> History {
        History::new(DEFAULT_STEP)
    }
}

impl History {
    pub(crate) fn new(step: Duration) -> History {
        History { step, points: VecDeque::with_capacity(HISTORY_CAPACITY), last: None }
    }

    /// Starts over with another step (the endpoint's, at start).
    pub(crate) fn set_step(&mut self, step: Duration) {
        *self = History::new(step);
    }

    /// Records `totals` at `wall_ms` (epoch, for the chart) and `mono_ms` (a monotonic clock, for the rates: a wall
    /// clock step must not make a rate). From the second sample on, adds a point; the oldest goes when full.
    pub(crate) fn sample(&mut self, wall_ms: i64, mono_ms: u64, totals: &Totals) {
        let Some((last_ms, last)) = self.last.replace((mono_ms, totals.clone())) else {
            return;
        };
        // A second at least would be a coarser floor than any step; this only guards the division.
        let secs = (mono_ms.saturating_sub(last_ms).max(1)) as f64 / 1000.0;
        let rate = |n: u64| (n as f64 / secs) as f32;
        let mut p = HistoryPoint {
            // Never before the previous point: the chart's x axis only moves forward, whatever the wall clock does.
            t_ms: self.points.back().map_or(wall_ms, |b| wall_ms.max(b.t_ms)),
            connections: clamp(totals.connections),
            brokers: clamp(totals.brokers),
            topics: clamp(totals.topics),
            ..HistoryPoint::default()
        };
        for (slot, (now, then)) in totals.responses.iter().zip(&last.responses).enumerate() {
            let n = delta(*now, *then);
            p.requests += rate(n);
            match Outcome::of_slot(slot) {
                Outcome::Success => {}
                Outcome::NotFound => p.not_found += rate(n),
                Outcome::Error => p.errors[slot] = rate(n),
            }
        }
        let mut buckets = [0u64; BOUNDS_US.len()];
        for (b, (now, then)) in buckets.iter_mut().zip(totals.latency_buckets.iter().zip(&last.latency_buckets)) {
            *b = delta(*now, *then);
        }
        p.p99_ms = p99_ms(&buckets, delta(totals.latency_count, last.latency_count));
        if self.points.len() == HISTORY_CAPACITY {
            self.points.pop_front();
        }
        self.points.push_back(p);
    }

    /// Oldest first.
    #[cfg(test)]
    pub(crate) fn points(&self) -> impl ExactSizeIterator<Item = &HistoryPoint> {
        self.points.iter()
    }

    /// The `/api/history` answer (its shape is what the console reads; docs/operations.md).
    pub(crate) fn to_json(&self, now_ms: i64) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let series = |f: &dyn Fn(&HistoryPoint) -> f64| -> Value {
            Value::Array(self.points.iter().map(|p| json!([p.t_ms, round(f(p))])).collect())
        };
        let mut errors = Map::new();
        for slot in (0..RESPONSE_SLOTS).filter(|s| Outcome::of_slot(*s) == Outcome::Error) {
            errors.insert(response_name(slot).into(), series(&|p| f64::from(p.errors[slot])));
        }
        json!({
            "stepMs": self.step.as_millis() as u64,
            "nowMs": now_ms,
            "series": {
                "requests": series(&|p| f64::from(p.requests)),
                "notFound": series(&|p| f64::from(p.not_found)),
                "errors": errors,
                "connections": series(&|p| f64::from(p.connections)),
                "brokers": series(&|p| f64::from(p.brokers)),
                "topics": series(&|p| f64::from(p.topics)),
                "p99Ms": series(&|p| f64::from(p.p99_ms)),
            }
        })
    }
}

/// What a counter grew by. Smaller than before means it started over (a reset): everything it holds is new, and a
/// rate is never negative.
fn delta(now: u64, then: u64) -> u64 {
    if now >= then {
        now - then
    } else {
        now
    }
}

fn clamp(n: u64) -> u32 {
    n.min(u64::from(u32::MAX)) as u32
}

/// Three decimals: enough for a chart, and `f32`s do not print as `0.10000000149`.
fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The 99th percentile of `count` latencies of which `buckets` (not cumulative, bounds `BOUNDS_US`) hold those up
/// to the last bound, interpolated linearly within its bucket as Prometheus' `histogram_quantile` does. Past the
/// last bound it says the last bound (at least that).
fn p99_ms(buckets: &[u64; BOUNDS_US.len()], count: u64) -> f32 {
    if count == 0 {
        return 0.0;
    }
    let rank = count as f64 * 0.99;
    let mut below = 0u64;
    let mut lower = 0u64;
    for (n, upper) in buckets.iter().zip(BOUNDS_US) {
        if *n > 0 && (below + n) as f64 >= rank {
            let within = ((rank - below as f64) / *n as f64).clamp(0.0, 1.0);
            return ((lower as f64 + within * (upper - lower) as f64) / 1000.0) as f32;
        }
        below += n;
        lower = upper;
    }
    (BOUNDS_US[BOUNDS_US.len() - 1] / 1000) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ResponseCode as R;

    fn slot(code: i32) -> usize {
        super::super::response_slot(code)
    }

    /// Totals with `ok` successes, `missing` TOPIC_NOT_EXIST and `busy` SYSTEM_BUSY replies, every one in the
    /// 100–250 µs bucket.
    fn totals(ok: u64, missing: u64, busy: u64) -> Totals {
        let mut t = Totals::default();
        t.responses[slot(R::SUCCESS)] = ok;
        t.responses[slot(R::TOPIC_NOT_EXIST)] = missing;
        t.responses[slot(R::SYSTEM_BUSY)] = busy;
        t.latency_buckets[3] = ok + missing + busy;
        t.latency_count = ok + missing + busy;
        t.connections = 3;
        t
    }

    #[test]
    fn rates_are_per_second_and_split_by_outcome() {
        let mut h = History::new(Duration::from_secs(10));
        h.sample(1_000, 0, &totals(0, 0, 0));
        assert_eq!(h.points().len(), 0, "the first sample is only a baseline");
        h.sample(11_000, 10_000, &totals(1000, 50, 10));
        let p = *h.points().next().unwrap();
        assert_eq!(p.t_ms, 11_000);
        assert_eq!(p.requests, 106.0);
        assert_eq!(p.not_found, 5.0);
        assert_eq!(p.errors[slot(R::SYSTEM_BUSY)], 1.0);
        assert_eq!(p.errors[slot(R::TOPIC_NOT_EXIST)], 0.0, "not found is no error");
        assert_eq!(p.errors[slot(R::SUCCESS)], 0.0);
        assert_eq!(p.connections, 3);
        assert!(p.p99_ms > 0.1 && p.p99_ms <= 0.25, "{}", p.p99_ms);
    }

    #[test]
    fn the_ring_is_bounded_and_keeps_the_newest_in_order() {
        let mut h = History::new(Duration::from_secs(1));
        let cap = h.points.capacity();
        for i in 0..(HISTORY_CAPACITY as u64 * 3) {
            h.sample(i as i64 * 1000, i * 1000, &totals(i * 10, 0, 0));
        }
        assert_eq!(h.points().len(), HISTORY_CAPACITY);
        assert_eq!(h.points.capacity(), cap, "allocated once");
        // The figure docs/operations.md gives: 360 points of 72 bytes, about 26 KB.
        assert_eq!(std::mem::size_of::<HistoryPoint>(), 72);
        assert!(cap * std::mem::size_of::<HistoryPoint>() <= 32 * 1024, "{cap} points");
        let ts: Vec<i64> = h.points().map(|p| p.t_ms).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "oldest first");
        assert_eq!(*ts.last().unwrap(), (HISTORY_CAPACITY as i64 * 3 - 1) * 1000, "the newest is kept");
    }

    #[test]
    fn a_wall_clock_step_back_keeps_the_axis_in_order() {
        let mut h = History::new(Duration::from_secs(1));
        h.sample(10_000, 0, &totals(0, 0, 0));
        h.sample(11_000, 1_000, &totals(1, 0, 0));
        h.sample(5_000, 2_000, &totals(2, 0, 0));
        let ts: Vec<i64> = h.points().map(|p| p.t_ms).collect();
        assert_eq!(ts, [11_000, 11_000]);
    }

    #[test]
    fn rates_across_a_counter_reset_are_never_negative() {
        let mut h = History::new(Duration::from_secs(1));
        h.sample(0, 0, &totals(5000, 500, 50));
        h.sample(1000, 1000, &totals(20, 2, 1));
        let p = *h.points().next().unwrap();
        assert_eq!(p.requests, 23.0, "after a reset the counters hold only what is new");
        assert_eq!(p.not_found, 2.0);
        assert_eq!(p.errors[slot(R::SYSTEM_BUSY)], 1.0);
        assert!(p.p99_ms >= 0.0);
    }

    #[test]
    fn p99_is_interpolated_within_its_bucket() {
        let mut b = [0u64; BOUNDS_US.len()];
        assert_eq!(p99_ms(&b, 0), 0.0);
        b[0] = 100; // all at most 25 µs
        assert!((p99_ms(&b, 100) - 0.02475).abs() < 1e-6, "{}", p99_ms(&b, 100));
        b[0] = 98;
        b[5] = 2; // 2 % between 500 µs and 1 ms: the 99th is half way
        assert!((p99_ms(&b, 100) - 0.75).abs() < 1e-6, "{}", p99_ms(&b, 100));
        assert_eq!(p99_ms(&[0; BOUNDS_US.len()], 5), 1000.0, "over the last bound: at least that");
    }

    #[test]
    fn json_has_the_shape_the_console_reads() {
        let mut h = History::new(Duration::from_secs(10));
        h.sample(0, 0, &totals(0, 0, 0));
        h.sample(10_000, 10_000, &totals(10, 10, 10));
        let v = h.to_json(12_345);
        assert_eq!(v["stepMs"], 10_000);
        assert_eq!(v["nowMs"], 12_345);
        let s = &v["series"];
        assert_eq!(s["requests"], serde_json::json!([[10_000, 3.0]]));
        assert_eq!(s["notFound"], serde_json::json!([[10_000, 1.0]]));
        assert_eq!(s["errors"]["SYSTEM_BUSY"], serde_json::json!([[10_000, 1.0]]));
        assert!(s["errors"].get("TOPIC_NOT_EXIST").is_none() && s["errors"].get("SUCCESS").is_none());
        for key in ["connections", "brokers", "topics", "p99Ms"] {
            assert_eq!(s[key].as_array().map(Vec::len), Some(1), "{key}");
        }
    }
}
