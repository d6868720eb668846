//! The operator HTTP endpoint (off unless `httpAddress` is set), on its own thread so it never touches a reactor:
//! `/metrics` (Prometheus text), `/health`, `/ready`, `/routes/{topic}` and `/cluster` (standard JSON), the web
//! console at `/` with the JSON it reads (`api`), the change feed `/events` (`events`, a thread per stream), and
//! with `nsaddrList` the address server Java clients read, `/rocketmq/nsaddr`.
//!
//! Read-only: nothing here changes state. The live table is writer-private; `/api/brokers` asks the writer for it
//! over a side channel that it answers between batches.

mod api;
mod events;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;
use tiny_http::{Header, Request, Response, Server};
use tracing::warn;

use crate::clock::Clock;
use crate::feed::Feed;
use crate::metrics::Metrics;
use crate::protocol::body;
use crate::protocol::json::{Dialect, JsonWriter};
use crate::state::Snapshot;
use crate::writer::command::{LiveQuery, WriteCommand};

/// What the endpoint reads.
pub struct HttpContext {
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub metrics: Metrics,
    /// Only to read the queue depth.
    pub writer: Sender<Box<WriteCommand>>,
    pub clock: Arc<dyn Clock>,
    pub started_ms: i64,
    pub draining: Arc<AtomicBool>,
    pub feed: Arc<Feed>,
    /// Questions about the live table, for the writer.
    pub live: Sender<LiveQuery>,
    /// `/events` streams open now.
    pub streams: Arc<AtomicUsize>,
    /// `eventFeedStreams`: most `/events` streams open at once (start-only).
    pub streams_max: usize,
}

impl HttpContext {
    /// Why the server is not ready, if it is not: draining, or inside `needWaitForService`.
    pub fn not_ready_reason(&self, snap: &Snapshot) -> Option<&'static str> {
        if self.draining.load(Ordering::Acquire) {
            return Some("shutting down");
        }
        if snap.config.waiting_for_service(self.clock.now_ms() - self.started_ms) {
            return Some("waiting for brokers (needWaitForService)");
        }
        if self.metrics.writer.provisional_brokers.load(Ordering::Relaxed) > 0 {
            return Some("serving provisional routes from a warm restart until their brokers re-register");
        }
        None
    }
}

/// Serves requests until the server is unblocked.
pub fn serve(server: Arc<Server>, ctx: HttpContext) {
    for req in server.incoming_requests() {
        let (path, query) = split_url(req.url());
        if path == "/events" {
            let query = query.to_string();
            events::start(req, ctx.feed.clone(), ctx.streams.clone(), ctx.streams_max, &query);
            continue;
        }
        let resp = respond(&ctx, &req);
        if let Err(e) = req.respond(resp) {
            warn!(error = %e, "HTTP reply failed");
        }
    }
}

fn split_url(url: &str) -> (&str, &str) {
    url.split_once('?').unwrap_or((url, ""))
}

/// The console: one file, compiled in (no files or network at run time).
const CONSOLE: &str = include_str!("console.html");

fn respond(ctx: &HttpContext, req: &Request) -> Response<std::io::Cursor<Vec<u8>>> {
    let snap = ctx.cell.load_full();
    let (path, query) = split_url(req.url());
    let api = |v: serde_json::Value| bytes(200, v.to_string().into_bytes(), "application/json");
    match path {
        "/" | "/index.html" => {
            let mut r = text(200, CONSOLE.to_string(), "text/html; charset=utf-8");
            // The page runs only its own inline code and talks only to this endpoint.
            let csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                       connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                       frame-ancestors 'none'";
            if let Ok(h) = Header::from_bytes(&b"Content-Security-Policy"[..], csp.as_bytes()) {
                r.add_header(h);
            }
            r
        }
        "/api/overview" => api(api::overview(ctx, &snap)),
        "/api/brokers" => match api::brokers(ctx, &snap) {
            Ok(v) => api(v),
            Err(reason) => text(503, json(|w| error(w, reason)), "application/json"),
        },
        "/api/topics" => api(api::topics(&snap, query)),
        "/api/kv" => api(api::kv(&snap)),
        "/api/config" => api(api::config(&snap)),
        "/metrics" => text(200, ctx.metrics.render(&snap, ctx.writer.len()), "text/plain; version=0.0.4"),
        "/health" => text(200, "ok\n".into(), "text/plain"),
        "/ready" => {
            let reason = ctx.not_ready_reason(&snap);
            let body = json(|w| {
                w.begin_object();
                w.field("brokers");
                w.long(ctx.metrics.writer.live_brokers.load(Ordering::Relaxed) as i64);
                w.field("generation");
                w.long(snap.generation as i64);
                if let Some(r) = reason {
                    w.field("reason");
                    w.string(r);
                }
                w.field("ready");
                w.bool(reason.is_none());
                w.field("topics");
                w.long(snap.routes.topic_count() as i64);
                w.end_object();
            });
            text(if reason.is_none() { 200 } else { 503 }, body, "application/json")
        }
        "/cluster" => {
            let info = snap.routes.cluster_info();
            let mut out = Vec::new();
            body::encode_cluster_info_with(&info, Dialect::Standard, &mut out);
            bytes(200, out, "application/json")
        }
        // Java clients look their name servers up here (`TopAddressing`): the body is the `;`-separated list.
        "/rocketmq/nsaddr" if !snap.config.nsaddr_list.trim().is_empty() => {
            text(200, nsaddr_body(&snap.config.nsaddr_list), "text/plain")
        }
        p if p.starts_with("/routes/") => {
            let topic = percent_decode(&p["/routes/".len()..]);
            match snap.routes.route(&topic, snap.config.support_acting_master) {
                Some(route) => {
                    let mut out = Vec::new();
                    body::encode_topic_route(&route, Dialect::Standard, &mut out);
                    bytes(200, out, "application/json")
                }
                None => text(404, json(|w| not_found(w, &topic)), "application/json"),
            }
        }
        _ => text(
            404,
            "not found: try /, /metrics, /health, /ready, /routes/{topic}, /cluster, /events, /api/{overview,brokers,topics,kv,config}\n".into(),
            "text/plain",
        ),
    }
}

/// `nsaddrList` as clients want it: the addresses joined by `;`, without blanks or empty entries.
fn nsaddr_body(list: &str) -> String {
    let addrs: Vec<&str> = list.split(';').map(str::trim).filter(|a| !a.is_empty()).collect();
    addrs.join(";")
}

fn error(w: &mut JsonWriter, reason: &str) {
    w.begin_object();
    w.field("error");
    w.string(reason);
    w.end_object();
}

fn not_found(w: &mut JsonWriter, topic: &str) {
    w.begin_object();
    w.field("error");
    w.string("topic not found");
    w.field("topic");
    w.string(topic);
    w.end_object();
}

fn json(f: impl FnOnce(&mut JsonWriter)) -> String {
    let mut out = Vec::new();
    f(&mut JsonWriter::new(&mut out, Dialect::Standard));
    String::from_utf8(out).unwrap_or_default()
}

fn text(status: u16, body: String, content_type: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    bytes(status, body.into_bytes(), content_type)
}

fn bytes(status: u16, body: Vec<u8>, content_type: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut r = Response::from_data(body).with_status_code(status);
    if let Ok(h) = Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()) {
        r.add_header(h);
    }
    r
}

/// `%XX` escapes in a path segment (topic names are usually plain; `%` and non-ASCII may be escaped).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{nsaddr_body, percent_decode};

    #[test]
    fn nsaddr_list_is_joined_by_semicolons() {
        assert_eq!(nsaddr_body(" h1:9876 ; h2:9876;;"), "h1:9876;h2:9876");
        assert_eq!(nsaddr_body("h1:9876"), "h1:9876");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("Topic%20A"), "Topic A");
        assert_eq!(percent_decode("%E4%B8%AD"), "中");
        assert_eq!(percent_decode("bad%2"), "bad%2");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("%中"), "%中");
    }
}
