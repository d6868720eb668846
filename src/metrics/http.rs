//! The HTTP endpoint's figures (`httpAddress`): connections, what it refused and why, and answers that panicked.
//! Written by the endpoint's thread; shown only while the endpoint is on.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};

use super::{header, metric};

/// Why the endpoint refused a connection or a request: the `reason` label of `namesrv_http_refused_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HttpRefusal {
    /// `httpMaxConnections` were open: 503 and closed.
    Connections,
    /// `eventFeedStreams` streams were open: 503.
    Streams,
    /// A body over `httpMaxBodyBytes` or of unknown length: 413, not read.
    Body,
    /// Not GET or HEAD: 405.
    Method,
    /// `aclEnable` and no credentials: 401.
    NoCredentials,
    /// `aclEnable` and credentials of no account: 401.
    BadCredentials,
    /// Too many wrong credentials from the address lately: 429 (`crate::http::logins`).
    LoginThrottled,
    /// `httpMaxConnections` were open: the oldest idle connection was closed to make room.
    Evicted,
}

const REFUSALS: [(HttpRefusal, &str); 8] = [
    (HttpRefusal::Connections, "connections"),
    (HttpRefusal::Streams, "streams"),
    (HttpRefusal::Body, "body"),
    (HttpRefusal::Method, "method"),
    (HttpRefusal::NoCredentials, "no_credentials"),
    (HttpRefusal::BadCredentials, "bad_credentials"),
    (HttpRefusal::LoginThrottled, "login_throttled"),
    (HttpRefusal::Evicted, "evicted"),
];

#[derive(Default)]
pub struct HttpMetrics {
    pub enabled: AtomicBool,
    pub connections_open: AtomicI64,
    pub connections_accepted: AtomicU64,
    pub refused: [AtomicU64; REFUSALS.len()],
    /// Answers that panicked and were turned into a 500.
    pub panics: AtomicU64,
}

impl HttpMetrics {
    pub(crate) fn refused(&self, why: HttpRefusal) {
        self.refused[why as usize].fetch_add(1, Relaxed);
    }

    pub(crate) fn refused_count(&self, why: HttpRefusal) -> u64 {
        self.refused[why as usize].load(Relaxed)
    }
}

pub(super) fn render(o: &mut String, m: &HttpMetrics) {
    if !m.enabled.load(Relaxed) {
        return;
    }
    let open = m.connections_open.load(Relaxed);
    metric(o, "namesrv_http_connections_open", "gauge", "Open connections to the HTTP endpoint.", open);
    let accepted = m.connections_accepted.load(Relaxed);
    metric(o, "namesrv_http_connections_accepted_total", "counter", "Connections the HTTP endpoint served.", accepted);
    header(
        o,
        "namesrv_http_refused_total",
        "counter",
        "Connections and requests the HTTP endpoint refused, by reason.",
    );
    for (why, name) in REFUSALS {
        let _ = writeln!(o, "namesrv_http_refused_total{{reason=\"{name}\"}} {}", m.refused_count(why));
    }
    let panics = m.panics.load(Relaxed);
    metric(o, "namesrv_http_panics_total", "counter", "HTTP answers that panicked (each answered 500).", panics);
}
