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
