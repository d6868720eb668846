//! The operator HTTP endpoint (off unless `httpAddress` is set): `/metrics` (Prometheus text), `/health`, `/ready`,
//! `/routes/{topic}` and `/cluster` (standard JSON), the web console at `/` with the JSON it reads (`api`), the
//! change feed `/events` (`events`), and with `nsaddrList` the address server Java clients read, `/rocketmq/nsaddr`.
//!
//! Built for a hostile network like the remoting port (decision 0028): hyper's HTTP/1.1 on a one-thread tokio
//! runtime of its own (`serve`), so no connection has a thread and nothing here can stall a reactor or the writer.
//! Every limit is a key (`Limits`); a panic while answering fails that request alone; with `aclEnable` the data
//! needs an account (`auth`); with `tls.server.mode=enforcing` the port speaks TLS only.
//!
//! Read-only: nothing here changes state. The live table is writer-private; `/api/brokers` asks the writer for it
//! over a side channel that it answers between batches.

mod api;
mod auth;
mod events;
mod io;
mod logins;
mod query;
mod routes;
mod serve;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;

pub(crate) use serve::HttpServer;

use crate::acl::Acl;
use crate::clock::Clock;
use crate::config::Config;
use crate::feed::Feed;
use crate::metrics::Metrics;
use crate::state::routes::WriteCensus;
use crate::state::Snapshot;
use crate::tls::TlsSetup;
use crate::write_command::{LiveAnswer, LiveQuery, WriteCommand};

/// The health verdicts now, from `snap` and the writer's `live` answer.
fn health_now(ctx: &HttpContext, snap: &Snapshot, live: &LiveAnswer) -> crate::health::Health {
    let census = ctx.census.of(snap);
    let fleet = ctx.fleet.as_ref().map(|f| f.drift()).unwrap_or_default();
    crate::health::verdicts(&crate::health::Inputs {
        census: &census,
        view: &snap.routes,
        support_acting_master: snap.config.support_acting_master,
        live: &live.rows,
        removed: &live.removed,
        fleet: &fleet,
        now_ms: ctx.clock.now_ms(),
        loss_window_ms: (snap.config.health_loss_window_seconds as i64).saturating_mul(1000),
    })
}

/// The write census of the last snapshot asked about: it depends on the routes alone, which change far less often
/// than the console polls (heartbeats publish nothing), so a poll of a steady cluster skips the pass over topics.
#[derive(Default)]
pub(crate) struct CensusCache(std::sync::Mutex<Option<(u64, Arc<WriteCensus>)>>);

impl CensusCache {
    fn of(&self, snap: &Snapshot) -> Arc<WriteCensus> {
        // Only the HTTP thread takes the lock; a poisoned one (a panic while computing) is recomputed.
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((generation, census)) if *generation == snap.generation => census.clone(),
            _ => {
                let census = Arc::new(snap.routes.write_census(crate::health::TOPIC_SAMPLE));
                *slot = Some((snap.generation, census.clone()));
                census
            }
        }
    }
}

/// What the endpoint reads.
pub(crate) struct HttpContext {
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
    /// `aclEnable`: the accounts as loaded now.
    pub acl: Option<Arc<ArcSwap<Acl>>>,
    pub tls: Arc<TlsSetup>,
    pub limits: Limits,
    pub census: CensusCache,
    /// `namesrvPeers`: the fleet view (`/api/fleet`), when on.
    pub fleet: Option<Arc<crate::metrics::FleetView>>,
}

/// The endpoint's protections, each a start-only key (docs/operations.md, "HTTP endpoint").
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// `httpMaxConnections`: connections at once; one more is answered 503 and closed, never queued.
    pub max_connections: usize,
    /// `httpMaxHeaderBytes`: a longer request head is answered 431.
    pub max_head_bytes: usize,
    /// `httpMaxBodyBytes`: a request announcing a longer body (or one of unknown length) is answered 413 and its
    /// body is not read.
    pub max_body_bytes: u64,
    /// `httpHeaderTimeoutSeconds`: a connection ready for a request must deliver its whole head within this;
    /// it bounds a slow head and an idle keep-alive connection alike (and a TLS handshake).
    pub head_timeout: Duration,
    /// `httpWriteTimeoutSeconds`: a reply that makes no progress for this long closes its connection.
    pub write_timeout: Duration,
    /// `eventFeedStreams`: `/events` streams at once; one more is answered 503 at once.
    pub max_streams: usize,
    /// `httpMetricsAuth`: `/metrics` needs an account too when `aclEnable` is on.
    pub metrics_need_auth: bool,
}

impl Limits {
    pub(crate) fn from_config(c: &Config) -> Limits {
        Limits {
            max_connections: c.http_max_connections.max(1),
            max_head_bytes: c.http_max_header_bytes.max(1024),
            max_body_bytes: c.http_max_body_bytes as u64,
            head_timeout: Duration::from_secs(c.http_header_timeout_seconds.max(1)),
            write_timeout: Duration::from_secs(c.http_write_timeout_seconds.max(1)),
            max_streams: c.event_feed_streams,
            metrics_need_auth: c.http_metrics_auth,
        }
    }
}

impl HttpContext {
    /// Why the server is not ready, if it is not: draining, or inside `needWaitForService`.
    pub(crate) fn not_ready_reason(&self, snap: &Snapshot) -> Option<&'static str> {
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

/// Paths anyone may read, accounts or not: probes (`/health`, `/ready`), the address list Java clients fetch
/// without credentials (`/rocketmq/nsaddr`), and `/metrics` unless `httpMetricsAuth`.
fn is_open(path: &str, limits: &Limits) -> bool {
    matches!(path, "/health" | "/ready" | "/rocketmq/nsaddr") || (path == "/metrics" && !limits.metrics_need_auth)
}

/// A context over an empty server, for the unit tests of this module.
#[cfg(test)]
mod test_context {
    use super::*;

    pub(super) fn context() -> HttpContext {
        let config = Arc::new(Config::default());
        let snapshot = crate::writer::Writer::initial_snapshot(Default::default(), config.clone());
        HttpContext {
            cell: Arc::new(ArcSwap::from_pointee(snapshot)),
            metrics: Metrics::new(1),
            writer: crossbeam_channel::bounded(1).0,
            clock: Arc::new(crate::clock::SystemClock),
            started_ms: 0,
            draining: Arc::default(),
            feed: Arc::new(Feed::new(0, 0)),
            live: crossbeam_channel::bounded(1).0,
            acl: None,
            tls: Arc::new(TlsSetup::disabled()),
            limits: Limits::from_config(&config),
            census: Default::default(),
            fleet: None,
        }
    }
}
