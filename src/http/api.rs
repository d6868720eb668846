//! The JSON the web console reads (`/api/...`): a view of one snapshot, plus the writer-private live table asked
//! of the writer over a side channel. Built with serde_json on the HTTP thread: nothing here is on a hot path.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::HttpContext;
use crate::state::Snapshot;
use crate::write_command::LiveRow;

/// Most topics `/api/topics` lists unless asked for fewer.
const TOPICS_DEFAULT_LIMIT: usize = 200;
const TOPICS_MAX_LIMIT: usize = 5000;

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

/// Clusters → broker groups → members, with each member's liveness (`rows`, the writer's live table).
pub fn brokers(ctx: &HttpContext, snap: &Snapshot, rows: &[LiveRow]) -> Value {
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
    json!({ "nowMs": now, "clusters": clusters })
}

/// Topic names containing `q` (case-insensitive), sorted, at most `limit`.
pub fn topics(snap: &Snapshot, query: &str) -> Value {
    let q = super::query::param(query, "q").unwrap_or_default().to_lowercase();
    let limit = super::query::param(query, "limit")
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

/// KV namespaces with their entries. With `aclEnable` only accounts get here (`auth`), as only accounts may read
/// KV on the remoting port.
pub fn kv(snap: &Snapshot) -> Value {
    let namespaces: Vec<Value> = snap
        .kv
        .to_map()
        .into_iter()
        .map(|(ns, table)| {
            let entries: Vec<Value> = table.into_iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
            json!({ "namespace": ns, "entries": entries })
        })
        .collect();
    json!({ "namespaces": namespaces })
}

/// Every key with its value (`-p`'s list) except secrets, which are not served at all; `hidden` names them, so
/// the operator sees that they are set.
pub fn config(snap: &Snapshot) -> Value {
    let (hidden, shown): (Vec<_>, Vec<_>) =
        snap.config.all_entries().into_iter().partition(|(k, _)| crate::config::is_secret_key(k));
    let entries: Vec<Value> = shown.into_iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
    let hidden: Vec<String> = hidden.into_iter().map(|(k, _)| k).collect();
    json!({ "entries": entries, "hidden": hidden })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_served() {
        use crate::config::is_secret_key;
        for k in
            ["tls.server.keyPassword", "secretKey", "accessKey", "innerClientAuthenticationCredentials", "authToken"]
        {
            assert!(is_secret_key(k), "{k}");
        }
        assert!(!is_secret_key("listenPort") && !is_secret_key("aclEnable"));
        let mut config = crate::config::Config::default();
        config.extra.insert("secretKey".into(), "s3cret".into());
        config.extra.insert("productEnvNote".into(), "visible".into());
        let snap = crate::writer::Writer::initial_snapshot(Default::default(), std::sync::Arc::new(config));
        let text = config_json(&snap);
        assert!(!text.contains("s3cret") && text.contains("visible"), "{text}");
        let hidden = super::config(&snap)["hidden"].clone();
        for key in ["secretKey", "tls.server.keyPassword", "innerClientAuthenticationCredentials"] {
            assert!(hidden.as_array().unwrap().contains(&json!(key)), "{key} not named as hidden: {text}");
        }
    }

    fn config_json(snap: &Snapshot) -> String {
        config(snap).to_string()
    }
}
