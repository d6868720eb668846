//! The answers that are a function of one snapshot: everything the HTTP endpoint serves except the change feed
//! and the live broker table, which wait on others (`events`, `api::brokers`). Synchronous and panic-contained:
//! `serve` runs `respond` under `catch_unwind`.

use std::sync::atomic::Ordering;

use super::{api, HttpContext};
use crate::protocol::body;
use crate::protocol::json::{Dialect, JsonWriter};

/// The console: one file, compiled in (no files or network at run time).
const CONSOLE: &str = include_str!("console.html");

/// The answer to a GET of `path` (everything but `/events`, `/metrics` and `/api/brokers` and `/api/health`, which wait on others).
pub(super) fn respond(ctx: &HttpContext, path: &str, query: &str) -> Reply {
    let snap = ctx.cell.load_full();
    let api = |v: serde_json::Value| bytes(200, v.to_string().into_bytes(), "application/json");
    match path {
        "/" | "/index.html" => {
            let mut r = text(200, CONSOLE.to_string(), "text/html; charset=utf-8");
            // The page runs only its own inline code and talks only to this endpoint.
            r.csp = true;
            r
        }
        "/api/overview" => api(api::overview(ctx, &snap)),
        "/api/topics" => api(api::topics(&snap, query)),
        "/api/kv" => api(api::kv(&snap)),
        "/api/config" => api(api::config(&snap)),
        "/api/history" => api(ctx.metrics.history_json(ctx.clock.now_ms())),
        "/api/fleet" => api(crate::fleet::api_json(ctx.fleet.as_deref())),
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
            let topic = super::query::percent_decode(&p["/routes/".len()..]);
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
            "not found: try /, /metrics, /health, /ready, /routes/{topic}, /cluster, /events, /api/{overview,brokers,topics,kv,config,health,history,fleet}\n".into(),
            "text/plain",
        ),
    }
}

/// `nsaddrList` as clients want it: the addresses joined by `;`, without blanks or empty entries.
fn nsaddr_body(list: &str) -> String {
    let addrs: Vec<&str> = list.split(';').map(str::trim).filter(|a| !a.is_empty()).collect();
    addrs.join(";")
}

pub(super) fn error(w: &mut JsonWriter, reason: &str) {
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

pub(super) fn json(f: impl FnOnce(&mut JsonWriter)) -> String {
    let mut out = Vec::new();
    f(&mut JsonWriter::new(&mut out, Dialect::Standard));
    String::from_utf8(out).unwrap_or_default()
}

pub(super) fn text(status: u16, body: String, content_type: &'static str) -> Reply {
    bytes(status, body.into_bytes(), content_type)
}

pub(super) fn bytes(status: u16, body: Vec<u8>, content_type: &'static str) -> Reply {
    Reply { status, body, content_type, csp: false }
}

/// A whole answer, before it becomes an HTTP response.
#[derive(Debug)]
pub(super) struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    /// The console page: served with its Content-Security-Policy.
    pub csp: bool,
}

/// The console's policy: it runs only its own inline code and talks only to this endpoint.
pub(super) const CONSOLE_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                               connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                               frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    use super::nsaddr_body;

    #[test]
    fn nsaddr_list_is_joined_by_semicolons() {
        assert_eq!(nsaddr_body(" h1:9876 ; h2:9876;;"), "h1:9876;h2:9876");
        assert_eq!(nsaddr_body("h1:9876"), "h1:9876");
    }
}
