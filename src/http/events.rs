//! `/events`: the change feed as Server-Sent Events, one task per stream (at most `eventFeedStreams`).
//!
//! Each event is `id: <bootMs>-<seq>`, `event: <type>`, `data: <one-line JSON>`. A stream starts after the
//! `Last-Event-ID` it was given (EventSource sends it when it reconnects), or with the last `?replay=N` events, or
//! with what comes next. Two control events: `lost` (the resume point is older than the ring: `missed` events are
//! gone; the stream goes on from the oldest kept) and `dropped` (this stream fell behind the ring while it was
//! open; the server closes it, and a reconnecting EventSource gets `lost`). An id from another process (another
//! `bootMs`) counts as lost too. A comment line every `KEEPALIVE` finds dead peers and keeps proxies from timing
//! the stream out.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::feed::{Change, Event, Feed, NameSample, Read};

const KEEPALIVE: Duration = Duration::from_secs(15);
/// Events written per wake-up before the position is checked again.
const BATCH: usize = 256;

/// What `/events` answers: the stream, or why there is none.
pub(super) enum Opened {
    Stream(EventBody),
    /// The feed is off (`eventFeedSize=0`): 404.
    Off,
    /// `eventFeedStreams` streams are open: 503, at once.
    Full {
        max: usize,
    },
}

/// Opens a stream for a request with these `Last-Event-ID` and query: a task of its own fills it, holding one of
/// the `max` slots until the stream ends — the feed closes, the stream falls behind, or the client goes away (the
/// connection drops the body, the task sees its channel closed and ends at once, whatever it was waiting for).
pub(super) fn open(
    feed: &Arc<Feed>,
    open: &Arc<AtomicUsize>,
    max: usize,
    last_event_id: Option<&str>,
    query: &str,
) -> Opened {
    if !feed.is_on() {
        return Opened::Off;
    }
    if open.fetch_add(1, Ordering::AcqRel) >= max {
        open.fetch_sub(1, Ordering::AcqRel);
        return Opened::Full { max };
    }
    let slot = Slot(open.clone());
    let replay = super::query::param(query, "replay").and_then(|n| n.parse::<u64>().ok());
    let after = start_after(feed, last_event_id, replay);
    // Small: a client that does not read leaves the task waiting here, and the connection's write deadline ends it.
    let (tx, rx) = mpsc::channel(2);
    let feed = feed.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let mut out = Channel(tx);
        let gone = out.0.clone();
        tokio::select! {
            _ = gone.closed() => {}
            _ = stream(&feed, &mut out, after) => {}
        }
    });
    Opened::Stream(EventBody(rx))
}

/// One of the `eventFeedStreams` places, given back when the stream's task ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The response body: what the stream's task sends, chunk by chunk, until it ends.
pub(super) struct EventBody(mpsc::Receiver<Bytes>);

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// The client went away.
#[derive(Debug)]
struct Gone;

/// Where a stream's text goes.
trait Sink {
    async fn send(&mut self, text: String) -> Result<(), Gone>;
}

struct Channel(mpsc::Sender<Bytes>);

impl Sink for Channel {
    async fn send(&mut self, text: String) -> Result<(), Gone> {
        self.0.send(Bytes::from(text)).await.map_err(|_| Gone)
    }
}

/// Where a stream starts: `Some(seq)` to go on after `seq` (0 = from the oldest kept), or `None` for "after an id
/// we cannot place", which the stream reports as lost before going on from the oldest kept.
fn start_after(feed: &Feed, last_event_id: Option<&str>, replay: Option<u64>) -> Position {
    match last_event_id {
        Some(id) => {
            match id.split_once('-').and_then(|(b, s)| Some((b.parse::<i64>().ok()?, s.parse::<u64>().ok()?))) {
                Some((boot, seq)) if boot == feed.boot_ms && seq <= feed.head() => Position::After(seq),
                _ => Position::Unknown,
            }
        }
        None => Position::After(feed.replay_from(replay.unwrap_or(0))),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    After(u64),
    Unknown,
}

/// The body: writes until the peer goes away, the stream falls behind or the feed closes.
async fn stream(feed: &Feed, out: &mut impl Sink, start: Position) -> Result<(), Gone> {
    // Tells EventSource how long to wait before reconnecting.
    out.send("retry: 2000\n\n".into()).await?;
    let mut after = match start {
        Position::After(seq) => seq,
        Position::Unknown => {
            let from = feed.replay_from(u64::MAX);
            out.send(control("lost", json!({ "missed": null, "from": from + 1 }))).await?;
            from
        }
    };
    let mut resumed = matches!(start, Position::After(_));
    loop {
        let events = match feed.next(after, BATCH, KEEPALIVE).await {
            Read::Closed => return Ok(()),
            Read::Events(e) if e.is_empty() => {
                out.send(": keepalive\n\n".into()).await?;
                continue;
            }
            Read::Events(e) => e,
            // Behind on the first read: the resume point was older than the ring.
            Read::Behind { missed, events } if resumed => {
                let from = events.first().map_or(after + missed + 1, |e| e.seq);
                out.send(control("lost", json!({ "missed": missed, "from": from }))).await?;
                events
            }
            Read::Behind { missed, .. } => {
                let reason = format!("this stream fell {missed} events behind the ring (eventFeedSize)");
                out.send(control("dropped", json!({ "missed": missed, "reason": reason }))).await?;
                return Ok(());
            }
        };
        resumed = false;
        let mut text = String::new();
        for e in &events {
            text.push_str(&sse(feed.boot_ms, e));
            after = e.seq;
        }
        out.send(text).await?;
    }
}

fn control(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// One event in SSE framing. serde_json escapes newlines, so `data` is one line whatever the names hold.
pub(super) fn sse(boot_ms: i64, e: &Event) -> String {
    let (kind, data) = render(e);
    format!("id: {boot_ms}-{}\nevent: {kind}\ndata: {data}\n\n", e.seq)
}

/// The event's type and JSON.
pub(super) fn render(e: &Event) -> (&'static str, Value) {
    let mut m = Map::new();
    m.insert("seq".into(), json!(e.seq));
    m.insert("timeMs".into(), json!(e.time_ms));
    match &e.change {
        Change::BrokerRegistered { cluster, broker_name, broker_id, addr, first, added, removed, updated } => {
            broker(&mut m, cluster, broker_name, *broker_id, addr);
            m.insert("first".into(), json!(first));
            sample(&mut m, "topicsAdded", added);
            sample(&mut m, "topicsRemoved", removed);
            m.insert("topicsUpdatedCount".into(), json!(updated));
        }
        Change::BrokerRemoved { cluster, broker_name, broker_id, addr, cause } => {
            broker(&mut m, cluster, broker_name, *broker_id, addr);
            m.insert("cause".into(), json!(cause));
        }
        Change::TopicsCreated(t) | Change::TopicsDeleted(t) => sample(&mut m, "topics", t),
        Change::WritePermWiped { broker_name, count } | Change::WritePermAdded { broker_name, count } => {
            m.insert("brokerName".into(), json!(broker_name));
            m.insert("count".into(), json!(count));
        }
        Change::KvPut { namespace, key } | Change::KvDeleted { namespace, key } => {
            m.insert("namespace".into(), json!(namespace));
            m.insert("key".into(), json!(key));
        }
        Change::ConfigUpdated { keys } => {
            m.insert("keys".into(), json!(keys));
        }
    }
    let kind = kind(&e.change);
    m.insert("type".into(), json!(kind));
    (kind, Value::Object(m))
}

/// The SSE event type, also the JSON's `type`.
fn kind(c: &Change) -> &'static str {
    match c {
        Change::BrokerRegistered { .. } => "brokerRegistered",
        Change::BrokerRemoved { .. } => "brokerRemoved",
        Change::TopicsCreated(_) => "topicsCreated",
        Change::TopicsDeleted(_) => "topicsDeleted",
        Change::WritePermWiped { .. } => "writePermWiped",
        Change::WritePermAdded { .. } => "writePermAdded",
        Change::KvPut { .. } => "kvPut",
        Change::KvDeleted { .. } => "kvDeleted",
        Change::ConfigUpdated { .. } => "configUpdated",
    }
}

fn broker(m: &mut Map<String, Value>, cluster: &str, name: &str, id: i64, addr: &str) {
    m.insert("cluster".into(), json!(cluster));
    m.insert("brokerName".into(), json!(name));
    m.insert("brokerId".into(), json!(id));
    m.insert("addr".into(), json!(addr));
}

/// `<key>` lists the sampled names, `<key>Count` says how many there were.
fn sample(m: &mut Map<String, Value>, key: &str, s: &NameSample) {
    let names: Vec<&str> = s.names.iter().map(|n| &**n).collect();
    m.insert(key.into(), json!(names));
    m.insert(format!("{key}Count"), json!(s.count));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str) -> Change {
        Change::KvPut { namespace: "ns".into(), key: key.into() }
    }

    /// Collects what a stream sends.
    struct Text<'a> {
        out: String,
        /// With a feed: the first event written lets the writer run `ahead` events past the stream, then closes it.
        slow: Option<(&'a Feed, usize)>,
    }

    impl Sink for Text<'_> {
        async fn send(&mut self, text: String) -> Result<(), Gone> {
            if let Some((feed, ahead)) = self.slow.as_mut() {
                if *ahead > 0 && text.starts_with("id: ") {
                    feed.append(2, (0..std::mem::take(ahead)).map(|i| kv(&i.to_string())));
                    feed.close();
                }
            }
            self.out.push_str(&text);
            Ok(())
        }
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
    }

    fn run_with(feed: &Feed, start: Position, slow: Option<usize>) -> String {
        let mut out = Text { out: String::new(), slow: slow.map(|n| (feed, n)) };
        block_on(stream(feed, &mut out, start)).unwrap();
        out.out
    }

    fn run(feed: &Feed, start: Position) -> String {
        run_with(feed, start, None)
    }

    #[test]
    fn a_name_with_a_newline_stays_on_one_data_line() {
        let e = Event { seq: 7, time_ms: 1, change: kv("a\nevent: fake\n\nb") };
        let text = sse(5, &e);
        assert_eq!(text.lines().filter(|l| l.starts_with("data: ")).count(), 1, "{text}");
        assert!(text.starts_with("id: 5-7\nevent: kvPut\ndata: {"), "{text}");
        assert_eq!(text.matches("\n\n").count(), 1);
    }

    #[test]
    fn resume_points_are_placed_or_reported_lost() {
        let f = Feed::new(2, 100);
        f.append(1, [kv("a"), kv("b"), kv("c")]);
        assert_eq!(start_after(&f, Some("100-2"), None), Position::After(2));
        // Another process's id, a seq beyond the head, garbage: lost.
        assert_eq!(start_after(&f, Some("99-2"), None), Position::Unknown);
        assert_eq!(start_after(&f, Some("100-9"), None), Position::Unknown);
        assert_eq!(start_after(&f, Some("x"), None), Position::Unknown);
        assert_eq!(start_after(&f, None, None), Position::After(3));
        assert_eq!(start_after(&f, None, Some(1)), Position::After(2));
        assert_eq!(start_after(&f, None, Some(50)), Position::After(1));
    }

    #[test]
    fn a_stale_resume_says_lost_then_goes_on_until_the_feed_closes() {
        let f = Feed::new(2, 100);
        f.append(1, [kv("a"), kv("b"), kv("c")]);
        f.close();
        let text = run(&f, Position::After(0));
        let lost = text.find("event: lost\ndata: {\"from\":2,\"missed\":1}").expect(&text);
        let b = text.find("id: 100-2\nevent: kvPut").expect(&text);
        let c = text.find("id: 100-3\nevent: kvPut").expect(&text);
        assert!(lost < b && b < c, "{text}");
        assert!(!text.contains("id: 100-1"), "{text}");
        let text = run(&f, Position::Unknown);
        assert!(text.contains("event: lost\ndata: {\"from\":2,\"missed\":null}"), "{text}");
    }

    #[test]
    fn an_open_stream_that_falls_behind_is_told_and_dropped() {
        let f = Feed::new(4, 100);
        f.append(1, [kv("a")]);
        let text = run_with(&f, Position::After(0), Some(10));
        assert!(text.contains("id: 100-1\nevent: kvPut"), "{text}");
        // 2..=7 were pushed out before it read them; it gets none of 8..=11.
        assert!(text.contains("event: dropped\ndata: {\"missed\":6,"), "{text}");
        assert!(!text.contains("id: 100-8"), "{text}");
        // Kept up: not dropped.
        let f = Feed::new(64, 100);
        f.append(1, [kv("a")]);
        let text = run_with(&f, Position::After(0), Some(10));
        assert!(!text.contains("dropped") && text.contains("id: 100-11\n"), "{text}");
    }
}
