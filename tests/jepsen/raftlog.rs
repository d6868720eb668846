//! Reads a stopped controller node's Raft files (`controllerStorePath`, src/controller/raft/log_store.rs) for the
//! checker's rule 7: `raft-log` is a sequence of records `[length: u32 LE][crc32 of length][crc32 of payload][entry
//! as JSON]`, and `raft-meta.json` holds the committed and purged log ids. Read without the product's code, from
//! the file format alone, so that a bug in the store's own reader cannot hide one in its writer.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::checker::NodeLog;

const HEADER_LEN: usize = 12;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn index_of(id: Option<&Value>) -> Option<u64> {
    id.and_then(|id| id.get("index")).and_then(Value::as_u64)
}

/// The log of node `node` in `store`: every whole record (a torn or damaged tail ends it; entries past the
/// committed index are not compared anyway), and the committed and purged indexes of `raft-meta.json`.
pub fn read(node: &str, store: &Path) -> Result<NodeLog, String> {
    let meta_path = store.join("raft-meta.json");
    let meta: Value = match std::fs::read(&meta_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", meta_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(e) => return Err(format!("{}: {e}", meta_path.display())),
    };
    let log_path = store.join("raft-log");
    let bytes = std::fs::read(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let purged = index_of(meta.get("purged"));
    let mut entries = BTreeMap::new();
    let mut pos = 0;
    while bytes.len() >= pos + HEADER_LEN {
        let len = u32_at(&bytes, pos) as usize;
        let Some(payload) = bytes.get(pos + HEADER_LEN..pos + HEADER_LEN + len) else { break };
        if crc32fast::hash(payload) != u32_at(&bytes, pos + 8) {
            break;
        }
        let entry: Value =
            serde_json::from_slice(payload).map_err(|e| format!("{} at {pos}: {e}", log_path.display()))?;
        let index =
            index_of(entry.get("log_id")).ok_or_else(|| format!("{} at {pos}: no log_id", log_path.display()))?;
        // Records a purge had covered when the node was killed before rewriting the file.
        if purged.is_none_or(|p| index > p) {
            entries.insert(index, entry.to_string());
        }
        pos += HEADER_LEN + len;
    }
    Ok(NodeLog { node: node.to_string(), committed: index_of(meta.get("committed")), purged, entries })
}

/// The elections of `group` in the committed part of `log`, in log order, for rule 6 (`checker::Election`, times in
/// ms since the epoch as the leader's clock read them). An entry is openraft's `{"log_id":…,"payload":{"Normal":
/// {"events":[…],"at_ms":…}}}`; an `ElectMaster` event names the new master by id (`null`: nobody replaced the old
/// one), and the address of an id is the last one the log registered for it before (`ApplyBrokerId`,
/// `UpdateBrokerAddress`). Empty — the checker then falls back to the recorder's reads — when any committed election
/// has no time (a log written before the leader's time was kept) or names an id whose address the log no longer
/// holds (purged): an election missing from the list would make the one before it look current, and a made-up
/// address would excuse the real master's acknowledgements.
pub fn elections(log: &NodeLog, group: &str) -> Vec<(u64, Option<String>)> {
    let mut addrs: BTreeMap<i64, String> = BTreeMap::new();
    let mut found = Vec::new();
    let Some(committed) = log.committed else { return Vec::new() };
    for text in log.entries.range(..=committed).map(|(_, text)| text) {
        let Ok(entry) = serde_json::from_str::<Value>(text) else { continue };
        let Some(normal) = entry.get("payload").and_then(|p| p.get("Normal")) else { continue };
        let at_ms = normal.get("at_ms").and_then(Value::as_u64);
        for event in normal.get("events").and_then(Value::as_array).into_iter().flatten() {
            let Some((kind, body)) = event.as_object().and_then(|o| o.iter().next()) else { continue };
            if body.get("broker_name").and_then(Value::as_str) != Some(group) {
                continue;
            }
            let (id, addr) = match kind.as_str() {
                "ApplyBrokerId" => (body.get("new_broker_id"), body.get("broker_address")),
                "UpdateBrokerAddress" => (body.get("broker_id"), body.get("broker_address")),
                "ElectMaster" => {
                    let Some(at_ms) = at_ms else { return Vec::new() };
                    let master = match body.get("new_master").and_then(Value::as_i64) {
                        Some(id) => match addrs.get(&id) {
                            Some(addr) => Some(addr.clone()),
                            None => return Vec::new(),
                        },
                        None => None,
                    };
                    found.push((at_ms, master));
                    continue;
                }
                _ => continue,
            };
            if let (Some(id), Some(addr)) = (id.and_then(Value::as_i64), addr.and_then(Value::as_str)) {
                addrs.insert(id, addr.to_string());
            }
        }
    }
    found
}
