//! A Server-Sent Events client for the change feed (`/events`): opens an HTTP/1.1 stream (chunked) and reads
//! events one by one, each with a read timeout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// One SSE event: `id`, `event`, and `data` parsed.
#[derive(Debug)]
pub struct Sse {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// An open `/events` stream (HTTP/1.1: chunked).
pub struct Stream {
    pub reader: BufReader<chunked_transfer::Decoder<TcpStream>>,
}

impl Stream {
    /// Connects and reads the response head and the `retry:` line: from here on, every change is on this stream.
    pub fn open(http: SocketAddr, path: &str, last_event_id: Option<&str>) -> Stream {
        Self::open_with(http, path, last_event_id, Duration::from_secs(10))
    }

    /// `open`, with reads that give up after `timeout` (more than the server's 15 s keepalive for a stream that may
    /// be quiet).
    pub fn open_with(http: SocketAddr, path: &str, last_event_id: Option<&str>, timeout: Duration) -> Stream {
        let mut s = TcpStream::connect(http).expect("connect HTTP");
        s.set_read_timeout(Some(timeout)).unwrap();
        let resume = last_event_id.map(|id| format!("Last-Event-ID: {id}\r\n")).unwrap_or_default();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n{resume}\r\n").unwrap();
        // The head byte by byte, so that nothing of the body is read before the decoder takes over.
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8];
            s.read_exact(&mut b).expect("read head");
            head.push(b[0]);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("Content-Type: text/event-stream"), "{head}");
        assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
        let mut reader = BufReader::new(chunked_transfer::Decoder::new(s));
        let mut line = String::new();
        reader.read_line(&mut line).expect("the retry line");
        assert!(line.starts_with("retry: "), "{line}");
        Stream { reader }
    }

    /// The next event (comments and blank lines skipped); panics after the read timeout.
    pub fn next(&mut self) -> Sse {
        self.try_next().expect("an event before the read timeout, the stream open")
    }

    /// The next event, or `None` if the stream ended or a read timed out.
    pub fn try_next(&mut self) -> Option<Sse> {
        let (mut id, mut event, mut data) = (None, None, None);
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).ok()?;
            if n == 0 {
                return None;
            }
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if let (Some(event), Some(data)) = (event.take(), data.take()) {
                    return Some(Sse { id, event, data });
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str::<Value>(v).expect("data is JSON"));
            }
        }
    }

    /// Whether the server ended the response (the last chunk) after what was already read.
    pub fn ended(&mut self) -> bool {
        let mut rest = String::new();
        self.reader.read_to_string(&mut rest).is_ok() && rest.trim().is_empty()
    }
}
