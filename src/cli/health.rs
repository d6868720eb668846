//! `health --http HOST:PORT`: the server's health verdicts ([`crate::health`], read from `/api/health` on its HTTP
//! endpoint, `httpAddress`), one line each. Exit 0 when there is none, 1 when there is any (the first column says
//! warning or critical), 2 when the endpoint cannot be read: for cron jobs and probes. With several `--http`, every
//! server is read and the worst exit code wins.
//!
//! The verdicts need the writer's live table, which no RocketMQ request code carries, so this command reads the
//! HTTP endpoint rather than the remoting port. Plain HTTP only: a server whose HTTP port is TLS-only
//! (`tls.server.mode=enforcing`) is read with curl instead (docs/operations.md). With `aclEnable` or
//! `authenticationEnabled` the account of `--accessKey/--secretKey` (or tools.yml) goes as HTTP Basic credentials.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::header::{AUTHORIZATION, HOST};
use serde_json::Value;

use super::table::Table;
use super::{json_text, CliError, Output};

/// The most of an answer read: the verdicts are a few KiB even for a large cluster (topic names are sampled).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Reads and prints the verdicts of every server in `http`.
pub(super) fn health(
    http: &[String],
    basic: Option<&(String, String)>,
    timeout: Duration,
    json: bool,
) -> Result<Output, CliError> {
    if http.is_empty() {
        return Err(CliError::Usage(
            "health reads the HTTP endpoint: give its address with --http HOST:PORT (the server's httpAddress) or \
             set NAMESRV_HTTP"
                .into(),
        ));
    }
    let mut text = String::new();
    let mut code = 0;
    let mut all = Vec::new();
    for addr in http {
        match fetch(addr, basic, timeout) {
            Ok(h) => {
                let wrong = h["verdicts"].as_array().is_some_and(|v| !v.is_empty());
                code = code.max(u8::from(wrong));
                text.push_str(&describe(addr, &h));
                all.push(serde_json::json!({ "server": addr, "health": h }));
            }
            Err(e) => {
                code = 2;
                text.push_str(&format!("{addr}  UNKNOWN  {}\n", e.reason()));
                all.push(serde_json::json!({ "server": addr, "error": e.reason() }));
            }
        }
    }
    let text = if json { json_text(&Value::Array(all)) } else { text };
    Ok(Output { text, code })
}

/// `addr  CRITICAL  2 verdicts` and a row per verdict.
fn describe(addr: &str, h: &Value) -> String {
    let verdicts = h["verdicts"].as_array().cloned().unwrap_or_default();
    let status = h["status"].as_str().unwrap_or("unknown").to_uppercase();
    let mut out = match verdicts.len() {
        0 => format!("{addr}  {status}  no verdicts\n"),
        n => format!("{addr}  {status}  {n} verdict{}\n", if n == 1 { "" } else { "s" }),
    };
    if !verdicts.is_empty() {
        let mut t = Table::new(&["SEVERITY", "KIND", "WHAT"]);
        for v in &verdicts {
            let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
            t.row(vec![s("severity"), s("kind"), s("title")]);
        }
        out.push_str(&t.render());
    }
    out
}

fn fetch(addr: &str, basic: Option<&(String, String)>, timeout: Duration) -> Result<Value, CliError> {
    let io = |reason: String| CliError::Io { addr: addr.to_string(), reason };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io(format!("cannot start the HTTP client: {e}")))?;
    let (status, body) = rt.block_on(async {
        match tokio::time::timeout(timeout, get(addr, "/api/health", basic)).await {
            Ok(r) => r,
            Err(_) => Err(io(format!("no answer within {} ms", timeout.as_millis()))),
        }
    })?;
    match status {
        200 => serde_json::from_slice(&body)
            .map_err(|e| CliError::BadBody { addr: addr.to_string(), reason: format!("not the verdicts' JSON: {e}") }),
        401 => Err(io("HTTP 401: the endpoint wants an account (--accessKey/--secretKey)".into())),
        404 => Err(io("HTTP 404: no /api/health here (not a namesrv of this version, or not its httpAddress?)".into())),
        s => Err(io(format!("HTTP {s}: {}", String::from_utf8_lossy(&body).trim()))),
    }
}

async fn get(addr: &str, path: &str, basic: Option<&(String, String)>) -> Result<(u16, Bytes), CliError> {
    let unreachable = |reason: String| CliError::Unreachable { addr: addr.to_string(), reason };
    let io = |reason: String| CliError::Io { addr: addr.to_string(), reason };
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| unreachable(e.to_string()))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| io(e.to_string()))?;
    tokio::spawn(conn);
    let mut req = hyper::Request::get(path).header(HOST, addr);
    if let Some((user, password)) = basic {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        req = req.header(AUTHORIZATION, format!("Basic {token}"));
    }
    let req = req.body(Empty::<Bytes>::new()).map_err(|e| io(e.to_string()))?;
    let resp = sender.send_request(req).await.map_err(|e| io(e.to_string()))?;
    let status = resp.status().as_u16();
    let body = Limited::new(resp.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| io(format!("reading the answer: {e}")))?
        .to_bytes();
    Ok((status, body))
}
