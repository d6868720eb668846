//! `/events`: the change feed as Server-Sent Events, one thread per stream (at most `eventFeedStreams`).
//!
//! Each event is `id: <bootMs>-<seq>`, `event: <type>`, `data: <one-line JSON>`. A stream starts after the
//! `Last-Event-ID` it was given (EventSource sends it when it reconnects), or with the last `?replay=N` events, or
//! with what comes next. Two control events: `lost` (the resume point is older than the ring: `missed` events are
//! gone; the stream goes on from the oldest kept) and `dropped` (this stream fell behind the ring while it was
//! open; the server closes it, and a reconnecting EventSource gets `lost`). An id from another process (another
//! `bootMs`) counts as lost too. A comment line every `KEEPALIVE` finds dead peers and keeps proxies from timing
//! the stream out.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tiny_http::Request;

use crate::feed::{Change, Event, Feed, NameSample, Read};

const KEEPALIVE: Duration = Duration::from_secs(15);
/// Events written per wake-up before the position is checked again.
const BATCH: usize = 256;
/// The response head, written by hand: tiny_http's responses end, this one streams. HTTP/1.1 streams are chunked,
/// so that ending one (feed closed, stream dropped) is a clean end of the response that EventSource reconnects
/// after, while tiny_http keeps the connection; an HTTP/1.0 stream ends with the connection.
const HEAD: &str = "200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n";

/// Hands the request to a stream thread of its own, or answers 503 when `max` streams are open.
pub fn start(req: Request, feed: Arc<Feed>, open: Arc<AtomicUsize>, max: usize, query: &str) {
    if !feed.is_on() {
        let _ = req.respond(super::text(404, "the change feed is off (eventFeedSize=0)\n".into(), "text/plain"));
        return;
    }
    if open.fetch_add(1, Ordering::AcqRel) >= max {
        open.fetch_sub(1, Ordering::AcqRel);
        let _ = req.respond(super::text(
            503,
            format!("too many event streams open (eventFeedStreams={max})\n"),
            "text/plain",
        ));
        return;
    }
    let last = req.headers().iter().find(|h| h.field.equiv("Last-Event-ID")).map(|h| h.value.as_str().to_string());
    let replay = super::api::param(query, "replay").and_then(|n| n.parse::<u64>().ok());
    let after = start_after(&feed, last.as_deref(), replay);
    let chunked = *req.http_version() >= tiny_http::HTTPVersion(1, 1);
    let spawned = std::thread::Builder::new().name("namesrv-events".into()).spawn({
        let open = open.clone();
        move || {
            let mut out = req.into_writer();
            let _ = respond(&feed, &mut out, after, chunked);
            open.fetch_sub(1, Ordering::AcqRel);
        }
    });
    if spawned.is_err() {
        open.fetch_sub(1, Ordering::AcqRel);
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

fn respond(feed: &Feed, out: &mut dyn Write, start: Position, chunked: bool) -> std::io::Result<()> {
    if !chunked {
        write!(out, "HTTP/1.0 {HEAD}Connection: close\r\n\r\n")?;
        return stream(feed, out, start);
    }
    write!(out, "HTTP/1.1 {HEAD}Transfer-Encoding: chunked\r\n\r\n")?;
    let mut encoder = chunked_transfer::Encoder::new(&mut *out);
    let streamed = stream(feed, &mut Chunked(&mut encoder), start);
    // Dropping the encoder writes the last chunk; then it leaves tiny_http's buffer.
    drop(encoder);
    out.flush()?;
    streamed
}

/// The chunked encoder with a flush that reaches the socket: one chunk per batch of events.
struct Chunked<'a, W: Write>(&'a mut chunked_transfer::Encoder<W>);

impl<W: Write> Write for Chunked<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.0.get_mut().flush()
    }
}

/// The body: writes until the peer goes away, the stream falls behind or the feed closes.
fn stream(feed: &Feed, out: &mut dyn Write, start: Position) -> std::io::Result<()> {
    // Tells EventSource how long to wait before reconnecting.
    out.write_all(b"retry: 2000\n\n")?;
    out.flush()?;
    let mut after = match start {
        Position::After(seq) => seq,
        Position::Unknown => {
            let from = feed.replay_from(u64::MAX);
            out.write_all(control("lost", json!({ "missed": null, "from": from + 1 })).as_bytes())?;
            from
        }
    };
    let mut resumed = matches!(start, Position::After(_));
    loop {
        let events = match feed.read(after, BATCH, KEEPALIVE) {
            Read::Closed => return Ok(()),
            Read::Events(e) if e.is_empty() => {
                out.write_all(b": keepalive\n\n")?;
                out.flush()?;
                continue;
            }
            Read::Events(e) => e,
            // Behind on the first read: the resume point was older than the ring.
            Read::Behind { missed, events } if resumed => {
                let from = events.first().map_or(after + missed + 1, |e| e.seq);
                out.write_all(control("lost", json!({ "missed": missed, "from": from })).as_bytes())?;
                events
            }
            Read::Behind { missed, .. } => {
                let reason = format!("this stream fell {missed} events behind the ring (eventFeedSize)");
                out.write_all(control("dropped", json!({ "missed": missed, "reason": reason })).as_bytes())?;
                out.flush()?;
                return Ok(());
            }
        };
        resumed = false;
        let mut text = String::new();
        for e in &events {
            text.push_str(&sse(feed.boot_ms, e));
            after = e.seq;
        }
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
}

fn control(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// One event in SSE framing. serde_json escapes newlines, so `data` is one line whatever the names hold.
pub fn sse(boot_ms: i64, e: &Event) -> String {
    let (kind, data) = render(e);
    format!("id: {boot_ms}-{}\nevent: {kind}\ndata: {data}\n\n", e.seq)
}

/// The event's type and JSON.
pub fn render(e: &Event) -> (&'static str, Value) {
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

    fn run(feed: &Feed, start: Position) -> String {
        let mut out = Vec::new();
        stream(feed, &mut out, start).unwrap();
        String::from_utf8(out).unwrap()
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

    /// A peer whose first event write lets the writer run `ahead` events past it.
    struct Slow<'a> {
        feed: &'a Feed,
        ahead: usize,
        out: Vec<u8>,
    }

    impl Write for Slow<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.ahead > 0 && buf.starts_with(b"id: ") {
                self.feed.append(2, (0..std::mem::take(&mut self.ahead)).map(|i| kv(&i.to_string())));
                self.feed.close();
            }
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_open_stream_that_falls_behind_is_told_and_dropped() {
        let f = Feed::new(4, 100);
        f.append(1, [kv("a")]);
        let mut slow = Slow { feed: &f, ahead: 10, out: Vec::new() };
        stream(&f, &mut slow, Position::After(0)).unwrap();
        let text = String::from_utf8(slow.out).unwrap();
        assert!(text.contains("id: 100-1\nevent: kvPut"), "{text}");
        // 2..=7 were pushed out before it read them; it gets none of 8..=11.
        assert!(text.contains("event: dropped\ndata: {\"missed\":6,"), "{text}");
        assert!(!text.contains("id: 100-8"), "{text}");
        // Kept up: not dropped.
        let f = Feed::new(64, 100);
        f.append(1, [kv("a")]);
        let mut slow = Slow { feed: &f, ahead: 10, out: Vec::new() };
        stream(&f, &mut slow, Position::After(0)).unwrap();
        let text = String::from_utf8(slow.out).unwrap();
        assert!(!text.contains("dropped") && text.contains("id: 100-11\n"), "{text}");
    }
}
