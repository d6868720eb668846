//! The endpoint's thread: a one-thread tokio runtime that accepts, sniffs TLS, and hands each connection to hyper's
//! HTTP/1.1 server as a task. Limits, in the order a connection meets them:
//! 1. `httpMaxConnections` at once: at the cap, a new connection takes the slot of the oldest one that is not
//!    being answered (idle between requests, or still sending its head: `Slots`), which is closed; only when every
//!    slot is answering a request or streaming is the new one answered 503 and closed (a small task of its own for
//!    up to 1 s, so the answer is read before the close; past 1024 of those, closed at once), never queued. Idle
//!    or half-sent connections thus never keep a probe (`/health`, `/ready`) out;
//! 2. the TLS sniff and handshake, then every request head, within `httpHeaderTimeoutSeconds` (hyper's header
//!    timeout, which also ends an idle keep-alive connection), and at most `httpMaxHeaderBytes` (431);
//! 3. no body: a request announcing more than `httpMaxBodyBytes`, or a body of unknown length, gets 413 unread;
//! 4. every write makes progress within `httpWriteTimeoutSeconds` (`io::WriteDeadline`), else the connection ends;
//! 5. `aclEnable`: an account, except for the open paths (`super::is_open`); an address with too many wrong ones
//!    gets 429 for a while (`logins`).
//!
//! A stop ends the accept loop and every connection task at once (they wait on the same `watch`), so it completes
//! in milliseconds whatever the clients do. A panic in an answer is caught (`contained`): that request gets 500.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONNECTION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tracing::{debug, error, warn};

use super::events::{self, EventBody, Opened};
use super::io::WriteDeadline;
use super::logins::{self, Logins};
use super::routes::{self, Reply};
use super::{api, auth, HttpContext};
use crate::metrics::HttpRefusal;
use crate::tls::{TlsMode, HANDSHAKE_RECORD};
use crate::write_command::{LiveAnswer, LiveQuery};

type Body = Either<Full<Bytes>, EventBody>;

/// How long `/api/brokers` waits for the writer: it answers between batches, so this only runs out when the writer
/// is stuck or the machine is overloaded.
const LIVE_WAIT: Duration = Duration::from_secs(2);
/// How long a refused connection may take to read its 503.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);
/// Refused connections being told so at once; past that, one more is closed without a word. Each is a small task
/// for at most `REFUSAL_LINGER`.
const MAX_REFUSING: usize = 1024;

/// The running endpoint.
pub(crate) struct HttpServer {
    addr: SocketAddr,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

/// The connections being served, oldest first (ids only grow), and whether each is being answered.
#[derive(Default)]
struct Slots {
    next: u64,
    open: BTreeMap<u64, Slot>,
}

struct Slot {
    /// Answering a request now, or an event stream (which is answered for as long as it is open).
    busy: bool,
    /// Ends the connection's task when its slot is given to a newer connection.
    evict: Option<oneshot::Sender<()>>,
}

impl Slots {
    /// A slot for a new connection when fewer than `max` are open, else the slot of the oldest connection not being
    /// answered (it is told to go); `None` when every connection is being answered.
    fn take(&mut self, max: usize, evict: oneshot::Sender<()>) -> Option<(u64, bool)> {
        let mut evicted = false;
        if self.open.len() >= max {
            let oldest = self.open.iter().find(|(_, s)| !s.busy).map(|(id, _)| *id)?;
            if let Some(tell) = self.open.remove(&oldest).and_then(|s| s.evict) {
                let _ = tell.send(());
            }
            evicted = true;
        }
        let id = self.next;
        self.next += 1;
        self.open.insert(id, Slot { busy: false, evict: Some(evict) });
        Some((id, evicted))
    }

    fn set_busy(&mut self, id: u64, busy: bool) {
        if let Some(slot) = self.open.get_mut(&id) {
            slot.busy = busy;
        }
    }
}

/// Marks a connection as being answered while it lives.
struct Answering<'a> {
    shared: &'a Shared,
    id: u64,
    /// An event stream stays busy after its head is answered.
    keep: bool,
}

impl<'a> Answering<'a> {
    fn new(shared: &'a Shared, id: u64) -> Answering<'a> {
        shared.slots().set_busy(id, true);
        Answering { shared, id, keep: false }
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.shared.slots().set_busy(self.id, false);
        }
    }
}

/// What every connection task shares.
struct Shared {
    ctx: HttpContext,
    /// Connections being served.
    slots: Mutex<Slots>,
    /// Refused connections still being told so.
    refusing: AtomicUsize,
    logins: Logins,
    streams: Arc<AtomicUsize>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: watch::Receiver<bool>,
}

impl Shared {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        // Nothing panics while holding it; a poisoned lock still holds consistent slots.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl HttpServer {
    /// Binds `addr` (start-up fails here, before any thread runs, if it cannot).
    pub(crate) fn bind(addr: &str) -> std::io::Result<std::net::TcpListener> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    /// Serves `listener` on a thread of its own. The thread is not one the process needs to live (unlike the
    /// writer's): should it ever end, the remoting port serves on, and `/health` going silent says why.
    pub(crate) fn start(listener: std::net::TcpListener, ctx: HttpContext) -> std::io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let tls = match ctx.tls.mode {
            TlsMode::Disabled => None,
            _ => ctx.tls.server.clone().map(tokio_rustls::TlsAcceptor::from),
        };
        ctx.metrics.http.enabled.store(true, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            ctx,
            slots: Mutex::default(),
            refusing: AtomicUsize::new(0),
            logins: Logins::default(),
            streams: Arc::default(),
            tls,
            stop: stop_rx,
        });
        let thread = std::thread::Builder::new().name("namesrv-http".into()).spawn(move || {
            let run = std::panic::AssertUnwindSafe(|| runtime.block_on(accept_loop(listener, shared)));
            if std::panic::catch_unwind(run).is_err() {
                error!("the HTTP endpoint stopped after a panic; the remoting port is not affected");
            }
            // Ends the connection tasks that are still there (a stop has already told them to go).
            runtime.shutdown_timeout(Duration::from_millis(200));
        })?;
        Ok(HttpServer { addr, stop: Some(stop_tx), thread: Some(thread) })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Ends the accept loop and every connection, and waits for the thread.
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return error!(error = %e, "HTTP endpoint cannot listen"),
    };
    tokio::spawn(stoppable(shared.clone(), sample_history(shared.clone())));
    tokio::spawn(stoppable(shared.clone(), sweep_logins(shared.clone())));
    let mut stop = shared.stop.clone();
    loop {
        tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => admit(stream, peer, &shared),
                Err(e) => {
                    // Out of descriptors, mostly: wait a little rather than spin; the backlog holds the rest.
                    warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

/// Samples the counters into the chart history every `httpHistoryStepSeconds`, on this thread: no thread of its
/// own, and the reactors only ever see relaxed loads of their counters.
async fn sample_history(shared: Arc<Shared>) {
    let ctx = &shared.ctx;
    let step = Duration::from_secs(ctx.cell.load().config.http_history_step_seconds.max(1));
    ctx.metrics.history.lock().unwrap_or_else(|e| e.into_inner()).set_step(step);
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(step);
    // A late tick (a busy thread) is taken late, not made up for with a burst of short steps.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mono_ms = started.elapsed().as_millis() as u64;
        ctx.metrics.sample_history(&ctx.cell.load(), ctx.clock.now_ms(), mono_ms);
    }
}

/// Sums up the failed logins of ended windows even when their addresses went quiet.
async fn sweep_logins(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(logins::WINDOW_MS as u64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        shared.logins.sweep(shared.ctx.clock.now_ms());
    }
}

fn admit(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let limits = &shared.ctx.limits;
    let metrics = &shared.ctx.metrics.http;
    let (evict_tx, evicted) = oneshot::channel();
    let taken = shared.slots().take(limits.max_connections, evict_tx);
    let Some((id, evicting)) = taken else {
        metrics.refused(HttpRefusal::Connections);
        // Telling a refused client why takes a task too; past `MAX_REFUSING` of those, it is just closed.
        if shared.refusing.fetch_add(1, Ordering::AcqRel) < MAX_REFUSING {
            let shared = shared.clone();
            tokio::spawn(stoppable(shared.clone(), async move {
                refuse(stream, shared.ctx.limits.max_connections).await;
                shared.refusing.fetch_sub(1, Ordering::AcqRel);
            }));
        } else {
            shared.refusing.fetch_sub(1, Ordering::AcqRel);
        }
        return;
    };
    if evicting {
        metrics.refused(HttpRefusal::Evicted);
        debug!(%peer, "HTTP connection slots full: the oldest idle connection made room");
    }
    metrics.connections_accepted.fetch_add(1, Ordering::Relaxed);
    metrics.connections_open.fetch_add(1, Ordering::Relaxed);
    let shared = shared.clone();
    tokio::spawn(stoppable(shared.clone(), async move {
        tokio::select! {
            // Its slot is already someone else's.
            _ = evicted => {}
            _ = connection(stream, peer, shared.clone(), id) => {
                shared.slots().open.remove(&id);
            }
        }
        shared.ctx.metrics.http.connections_open.fetch_sub(1, Ordering::Relaxed);
    }));
}

/// Runs `task` until it ends or the endpoint stops (then it is dropped where it waits; the counters it would have
/// given back no longer matter).
async fn stoppable(shared: Arc<Shared>, task: impl Future<Output = ()>) {
    let mut stop = shared.stop.clone();
    tokio::select! {
        _ = stop.wait_for(|stopped| *stopped) => {}
        _ = task => {}
    }
}

/// 503 to a connection over `httpMaxConnections`, then close, after letting the client's request in so that the
/// close does not reset the answer away.
async fn refuse(mut stream: TcpStream, max: usize) {
    let body = format!("too many HTTP connections (httpMaxConnections={max})\n");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nRetry-After: 1\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// One connection: the TLS sniff and handshake, then HTTP/1.1 until the client or a limit ends it.
async fn connection(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>, id: u64) {
    let _ = stream.set_nodelay(true);
    let limits = &shared.ctx.limits;
    let mut first = [0u8; 1];
    let tls = match tokio::time::timeout(limits.head_timeout, stream.peek(&mut first)).await {
        Ok(Ok(1)) => first[0] == HANDSHAKE_RECORD,
        // Closed, failed or silent: nothing to serve.
        _ => return,
    };
    let stream = WriteDeadline::new(stream, limits.write_timeout);
    match (tls, &shared.tls, shared.ctx.tls.mode) {
        (false, _, TlsMode::Enforcing) => debug!(%peer, "plain HTTP refused: tls.server.mode=enforcing"),
        (false, _, _) => http(stream, peer.ip(), shared.clone(), id).await,
        (true, Some(acceptor), _) => match tokio::time::timeout(limits.head_timeout, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => http(tls, peer.ip(), shared.clone(), id).await,
            Ok(Err(e)) => debug!(%peer, error = %e, "HTTP TLS handshake failed"),
            Err(_) => debug!(%peer, "HTTP TLS handshake timed out"),
        },
        (true, None, _) => debug!(%peer, "TLS handshake on the HTTP port closed: no TLS context"),
    }
}

async fn http<I>(io: I, peer: IpAddr, shared: Arc<Shared>, id: u64)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = shared.ctx.limits.clone();
    let service = service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, peer, id, req).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_header_size(limits.max_head_bytes)
        // The read buffer bounds a head that never completes (431); hyper's floor is 8 KiB.
        .max_buf_size(limits.max_head_bytes.max(8192))
        // `Content-Type`, not `content-type`: scripts that grep a head by its usual spelling keep working.
        .title_case_headers(true)
        .keep_alive(true);
    if let Err(e) = builder.serve_connection(TokioIo::new(io), service).await {
        debug!(%peer, error = %e, "HTTP connection ended");
    }
}

async fn handle(shared: &Shared, peer: IpAddr, id: u64, req: Request<Incoming>) -> Response<Body> {
    // A complete head is here: this connection is not evicted while it is answered.
    let mut answering = Answering::new(shared, id);
    let ctx = &shared.ctx;
    let metrics = &ctx.metrics.http;
    // The endpoints take no body: one that is announced too long, or has no announced length, is not read at all.
    if req.body().size_hint().upper().is_none_or(|n| n > ctx.limits.max_body_bytes) {
        metrics.refused(HttpRefusal::Body);
        let text = format!("request bodies are limited to {} bytes (httpMaxBodyBytes)\n", ctx.limits.max_body_bytes);
        let mut r = full(routes::text(413, text, "text/plain"));
        r.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        return r;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        metrics.refused(HttpRefusal::Method);
        let mut r = full(routes::text(405, "only GET and HEAD are served\n".into(), "text/plain"));
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let path = req.uri().path();
    let query = req.uri().query().unwrap_or("");
    if let (false, Some(acl)) = (super::is_open(path, &ctx.limits), &ctx.acl) {
        let now_ms = ctx.clock.now_ms();
        if let Some(wait_s) = shared.logins.throttled(peer, now_ms) {
            metrics.refused(HttpRefusal::LoginThrottled);
            let text = format!(
                "too many failed logins from this address ({} in {} s); retry in {wait_s} s\n",
                logins::MAX_FAILURES,
                logins::WINDOW_MS / 1000
            );
            let mut r = full(routes::text(429, text, "text/plain"));
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(wait_s));
            return r;
        }
        let given = req.headers().get(AUTHORIZATION).map(HeaderValue::as_bytes);
        let checked = auth::check(&acl.load(), peer, given);
        match checked {
            Err(auth::Denied::BadCredentials) => shared.logins.failed(peer, now_ms),
            Ok(()) if given.is_some() => shared.logins.succeeded(peer, now_ms),
            _ => {}
        }
        if let Err(denied) = checked {
            metrics.refused(match denied {
                auth::Denied::NoCredentials => HttpRefusal::NoCredentials,
                auth::Denied::BadCredentials => HttpRefusal::BadCredentials,
            });
            debug!(%peer, path, reason = denied.reason(), "HTTP request refused: aclEnable");
            let mut r =
                full(routes::text(401, "credentials of an account are needed (aclEnable)\n".into(), "text/plain"));
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"namesrv\", charset=\"UTF-8\""));
            return r;
        }
    }
    match path {
        "/events" => {
            let last = req.headers().get("Last-Event-ID").and_then(|v| v.to_str().ok());
            match events::open(&ctx.feed, &shared.streams, ctx.limits.max_streams, last, query) {
                Opened::Stream(body) => {
                    // Streaming for as long as it is open: not an idle connection to make room with.
                    answering.keep = true;
                    event_stream(body)
                }
                Opened::Off => {
                    full(routes::text(404, "the change feed is off (eventFeedSize=0)\n".into(), "text/plain"))
                }
                Opened::Full { max } => {
                    metrics.refused(HttpRefusal::Streams);
                    let text = format!("too many event streams open (eventFeedStreams={max})\n");
                    full(routes::text(503, text, "text/plain"))
                }
            }
        }
        "/api/brokers" => full(brokers(ctx).await),
        "/api/health" => full(health(ctx).await),
        "/metrics" => full(metrics_text(ctx).await),
        _ => full(contained(ctx, path, || routes::respond(ctx, path, query))),
    }
}

/// The live broker table and the recent removals, asked of the writer without holding the thread while it answers.
async fn ask_live(ctx: &HttpContext) -> Result<LiveAnswer, &'static str> {
    let (tx, rx) = oneshot::channel();
    if ctx.live.try_send(LiveQuery { reply: tx }).is_err() {
        return Err("the writer has too many questions queued");
    }
    match tokio::time::timeout(LIVE_WAIT, rx).await {
        Ok(Ok(answer)) => Ok(answer),
        _ => Err("the writer did not answer in time"),
    }
}

fn unavailable(reason: &str) -> Reply {
    routes::text(503, routes::json(|w| routes::error(w, reason)), "application/json")
}

/// `/api/brokers`: the route tables' brokers with their liveness.
async fn brokers(ctx: &HttpContext) -> Reply {
    match ask_live(ctx).await {
        Ok(live) => contained(ctx, "/api/brokers", || {
            let snap = ctx.cell.load_full();
            routes::bytes(200, api::brokers(ctx, &snap, &live.rows).to_string().into_bytes(), "application/json")
        }),
        Err(reason) => unavailable(reason),
    }
}

/// `/api/health`: the verdicts ([`crate::health`]).
async fn health(ctx: &HttpContext) -> Reply {
    match ask_live(ctx).await {
        Ok(live) => contained(ctx, "/api/health", || {
            let h = super::health_now(ctx, &ctx.cell.load_full(), &live);
            routes::bytes(200, serde_json::to_vec(&h).unwrap_or_default(), "application/json")
        }),
        Err(reason) => unavailable(reason),
    }
}

/// `/metrics`, with the health gauges when the writer answers in time; a scrape never fails for want of them (an
/// alert on `absent(namesrv_health_status)` notices).
async fn metrics_text(ctx: &HttpContext) -> Reply {
    let live = ask_live(ctx).await;
    contained(ctx, "/metrics", || {
        let snap = ctx.cell.load_full();
        let mut text = ctx.metrics.render(&snap, ctx.writer.len());
        if let Ok(live) = &live {
            crate::health::render_metrics(&super::health_now(ctx, &snap, live), &mut text);
        }
        routes::text(200, text, "text/plain; version=0.0.4")
    })
}

/// Runs an answer; a panic in it becomes a 500 for this request alone, logged and counted.
fn contained(ctx: &HttpContext, path: &str, answer: impl FnOnce() -> Reply) -> Reply {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(answer)) {
        Ok(reply) => reply,
        Err(_) => {
            ctx.metrics.http.panics.fetch_add(1, Ordering::Relaxed);
            error!(path, "HTTP answer panicked; this request gets 500, nothing else is affected");
            routes::text(500, "internal error\n".into(), "text/plain")
        }
    }
}

fn full(reply: Reply) -> Response<Body> {
    let mut r = Response::new(Either::Left(Full::new(Bytes::from(reply.body))));
    *r.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    if reply.csp {
        r.headers_mut().insert("Content-Security-Policy", HeaderValue::from_static(routes::CONSOLE_CSP));
    }
    r
}

fn event_stream(body: EventBody) -> Response<Body> {
    let mut r = Response::new(Either::Right(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("Cache-Control", HeaderValue::from_static("no-cache"));
    // Tells nginx not to buffer the stream.
    h.insert("X-Accel-Buffering", HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_answer_is_a_500_and_is_counted() {
        let ctx = super::super::test_context::context();
        let reply = contained(&ctx, "/x", || panic!("a bug in one answer"));
        assert_eq!(reply.status, 500);
        assert_eq!(ctx.metrics.http.panics.load(Ordering::Relaxed), 1);
        let reply = contained(&ctx, "/x", || routes::text(200, "ok".into(), "text/plain"));
        assert_eq!(reply.status, 200);
        assert_eq!(ctx.metrics.http.panics.load(Ordering::Relaxed), 1);
    }
}
