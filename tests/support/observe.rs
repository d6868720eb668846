//! Watching a server process from outside: its Prometheus gauges over the HTTP endpoint (`httpAddress`) and its
//! resident memory from /proc. For the load and fault tests, which must not read the server's insides.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// GET `path` over HTTP/1.0: status, head and body.
pub fn http_response(addr: SocketAddr, path: &str) -> Result<(u16, String, String), String> {
    http_exchange(addr, &format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n"))
}

/// GET `path` over HTTP/1.0 as an account (HTTP Basic, the access key and secret key): status, head and body.
pub fn http_response_as(
    addr: SocketAddr,
    path: &str,
    user: &str,
    password: &str,
) -> Result<(u16, String, String), String> {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    http_exchange(addr, &format!("GET {path} HTTP/1.0\r\nHost: x\r\nAuthorization: Basic {token}\r\n\r\n"))
}

/// Sends `request` as it is and reads the answer to the end of the connection: status, head and body.
pub fn http_exchange(addr: SocketAddr, request: &str) -> Result<(u16, String, String), String> {
    let mut s =
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let first = request.lines().next().unwrap_or("");
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("{first}: no head in {text:?}"))?;
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| format!("{first}: {head}"))?;
    Ok((status, head.to_string(), body.to_string()))
}

/// GET `path` over HTTP/1.0; the body of a 200 answer, or the failure as text.
pub fn http_get(addr: SocketAddr, path: &str) -> Result<String, String> {
    match http_response(addr, path)? {
        (200, _, body) => Ok(body),
        (_, head, _) => Err(format!("GET {path}: {}", head.lines().next().unwrap_or(""))),
    }
}

/// The value of the sample line `name` (with its labels, e.g. `namesrv_evictions_total{cause="expired"}`).
pub fn metric(http: SocketAddr, name: &str) -> f64 {
    let text = http_get(http, "/metrics").unwrap_or_else(|e| panic!("/metrics: {e}"));
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in /metrics:\n{text}"))
}

/// Polls `name` until it equals `want` (the server applies closes asynchronously); returns the last value seen,
/// which the caller asserts on. `limit` only bounds the test's runtime — nothing here judges speed.
pub fn wait_for_metric(http: SocketAddr, name: &str, want: f64, limit: Duration) -> f64 {
    let mut v = metric(http, name);
    super::eventually(limit, || {
        v = metric(http, name);
        v == want
    });
    v
}

/// VmRSS of `pid` in bytes, from /proc/PID/status.
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb * 1024
}

/// Bytes → MiB, for messages.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// The load average (1, 5, 15 min) as text, for the figures a test prints.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
