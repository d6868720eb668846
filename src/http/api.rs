//! The JSON the web console reads (`/api/...`): a view of one snapshot, plus the writer-private live table asked
//! of the writer over a side channel. Built with serde_json on the HTTP thread: nothing here is on a hot path.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use super::HttpContext;
use crate::state::Snapshot;
use crate::writer::command::{LiveQuery, LiveRow};

/// Most topics `/api/topics` lists unless asked for fewer.
const TOPICS_DEFAULT_LIMIT: usize = 200;
const TOPICS_MAX_LIMIT: usize = 5000;
/// How long the console waits for the writer: it answers between batches, so this only runs out when the writer
/// is stuck or the machine is overloaded.
const LIVE_WAIT: Duration = Duration::from_secs(2);

/// Config keys whose values the console never shows.
fn is_secret(key: &str) -> bool {
    key.to_ascii_lowercase().contains("password")
}

pub fn overview(ctx: &HttpContext, snap: &Snapshot) -> Value {
    let reason = ctx.not_ready_reason(snap);
    let mut v = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("NAMESRV_COMMIT"),
        "startedMs": ctx.started_ms,
        "nowMs": ctx.clock.now_ms(),
        "generation": snap.generation,
        "topics": snap.routes.topic_count(),
        "brokers": ctx.metrics.writer.live_brokers.load(Ordering::Relaxed),
        "ready": reason.is_none(),
        "events": ctx.feed.is_on(),
    });
    if let Some(r) = reason {
        v["reason"] = json!(r);
    }
    v
}

/// Clusters → broker groups → members, with each member's liveness. `Err` when the writer did not answer in time.
pub fn brokers(ctx: &HttpContext, snap: &Snapshot) -> Result<Value, &'static str> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    ctx.live.try_send(LiveQuery { reply: tx }).map_err(|_| "the writer has too many questions queued")?;
    let rows = rx.recv_timeout(LIVE_WAIT).map_err(|_| "the writer did not answer in time")?;
    let live: HashMap<(&str, &str), &LiveRow> = rows.iter().map(|r| ((&*r.cluster, &*r.addr), r)).collect();
    let info = snap.routes.cluster_info();
    let now = ctx.clock.now_ms();
    let clusters: Vec<Value> = info
        .cluster_addr_table
        .iter()
        .map(|(cluster, names)| {
            let mut members = Vec::new();
            for name in names {
                let Some(bd) = info.broker_addr_table.get(name) else { continue };
                let topic_count = snap.routes.broker_topic_count(name);
                for (id, addr) in &bd.broker_addrs {
                    let mut m = json!({
                        "brokerName": &**name,
                        "brokerId": id,
                        "addr": addr,
                        "topicCount": topic_count,
                        "live": false,
                    });
                    if let Some(l) = live.get(&(&**cluster, addr.as_str())) {
                        m["live"] = json!(true);
                        m["heartbeatAgeMs"] = json!((now - l.last_update_ms).max(0));
                        m["timeoutMs"] = json!(l.timeout_ms);
                        m["haServerAddr"] = json!(l.ha_server_addr);
                        m["dataVersion"] = json!({
                            "stateVersion": l.data_version.state_version,
                            "timestamp": l.data_version.timestamp,
                            "counter": l.data_version.counter,
                        });
                    }
                    members.push(m);
                }
            }
            json!({ "name": &**cluster, "brokers": members })
        })
        .collect();
    Ok(json!({ "nowMs": now, "clusters": clusters }))
}

/// Topic names containing `q` (case-insensitive), sorted, at most `limit`.
pub fn topics(snap: &Snapshot, query: &str) -> Value {
    let q = param(query, "q").unwrap_or_default().to_lowercase();
    let limit = param(query, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(TOPICS_DEFAULT_LIMIT)
        .min(TOPICS_MAX_LIMIT);
    let mut matched = 0;
    let mut names = Vec::new();
    for t in snap.routes.topic_names() {
        if q.is_empty() || t.to_lowercase().contains(&q) {
            matched += 1;
            if names.len() < limit {
                names.push(&**t);
            }
        }
    }
    json!({ "total": snap.routes.topic_count(), "matched": matched, "topics": names })
}

/// KV namespaces. With `aclEnable` the remoting port answers KV reads only to accounts, so the console shows keys
/// without values.
pub fn kv(snap: &Snapshot) -> Value {
    let hide = snap.config.acl_enable;
    let namespaces: Vec<Value> = snap
        .kv
        .to_map()
        .into_iter()
        .map(|(ns, table)| {
            let entries: Vec<Value> = table
                .into_iter()
                .map(|(k, v)| if hide { json!({ "key": k }) } else { json!({ "key": k, "value": v }) })
                .collect();
            json!({ "namespace": ns, "entries": entries })
        })
        .collect();
    let mut v = json!({ "namespaces": namespaces });
    if hide {
        v["valuesHidden"] = json!(true);
    }
    v
}

/// Every key with its value (`-p`'s list), secrets masked.
pub fn config(snap: &Snapshot) -> Value {
    let entries: Vec<Value> = snap
        .config
        .all_entries()
        .into_iter()
        .map(|(k, v)| {
            let v = if is_secret(&k) && !v.is_empty() { "******".to_string() } else { v };
            json!({ "key": k, "value": v })
        })
        .collect();
    json!({ "entries": entries })
}

/// `name`'s value in a query string, percent-decoded (`+` is a space, as forms send it).
pub fn param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| super::percent_decode(&v.replace('+', " ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        assert_eq!(param("q=Topic%20A&limit=5", "q").as_deref(), Some("Topic A"));
        assert_eq!(param("q=a+b", "q").as_deref(), Some("a b"));
        assert_eq!(param("limit=5", "q"), None);
        assert_eq!(param("q", "q").as_deref(), Some(""));
    }

    #[test]
    fn passwords_are_secret() {
        assert!(is_secret("tls.server.keyPassword"));
        assert!(!is_secret("listenPort"));
    }
}
