//! UPDATE_NAMESRV_CONFIG (318): which updates are refused and why, what an accepted one changes, and the text the
//! config file is rewritten with.

use std::fmt;

use super::{bounds, update_policy, Config, UnknownKey, Update};
use crate::protocol::props;

/// Java's remark when an update names a key of its black list.
pub(crate) const BLACK_LISTED: &str = "Can not update config in black list.";

/// Java's fixed black list (`DefaultRequestProcessor.initConfigBlackList`); the `configBlackList` setting adds to it.
const JAVA_FIXED_BLACK_LIST: [&str; 4] = ["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"];

/// Keys named in a remark: at most this many per reason, each shortened to `KEY_CHARS` characters. The peer chooses
/// the keys; the remark is bounded whatever it sends.
const LISTED_KEYS: usize = 5;
const KEY_CHARS: usize = 64;

/// Why an update is refused: NO_PERMISSION, nothing applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A key of Java's own black list: Java refuses the update the same way, so the remark is Java's, byte for byte.
    JavaBlackList,
    /// Only keys Java would have accepted: keys not changeable at runtime here (`Update::Start`, and keys an operator
    /// added to `configBlackList` with blanks around them), and keys whose key or value holds a control character
    /// (`props::is_control`). Each list sorted, without repeats.
    Ours { start_only: Vec<String>, control: Vec<String> },
    /// Only keys Java would have accepted, with a value outside its key's range (`bounds.rs`): each as
    /// `key=value (allowed lo..=hi)`, sorted.
    OutOfRange(Vec<String>),
}

impl Refused {
    /// The response remark.
    pub(crate) fn remark(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::JavaBlackList => f.write_str(BLACK_LISTED),
            Refused::Ours { start_only, control } => {
                // Java's sentence first for start-only keys: scripts that look for Java's remark still find it.
                if !start_only.is_empty() {
                    write!(f, "{BLACK_LISTED} Not changeable at runtime: {}", KeyList(start_only))?;
                }
                if !control.is_empty() {
                    if !start_only.is_empty() {
                        f.write_str(". ")?;
                    }
                    write!(f, "A line break or other control character in the key or value of: {}", KeyList(control))?;
                }
                Ok(())
            }
            Refused::OutOfRange(list) => write!(f, "Value out of range, nothing applied: {}", list.join(", ")),
        }
    }
}

impl std::error::Error for Refused {}

/// Keys as a remark shows them: comma-separated, the first `LISTED_KEYS`, each `shown`.
struct KeyList<'a>(&'a [String]);

impl fmt::Display for KeyList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.0.iter().take(LISTED_KEYS).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&shown(key))?;
        }
        if self.0.len() > LISTED_KEYS {
            write!(f, " and {} more", self.0.len() - LISTED_KEYS)?;
        }
        Ok(())
    }
}

/// A peer-chosen key for a remark: control characters written as Rust escapes (a remark is one line in a log),
/// cut at `KEY_CHARS` characters with the original length said, e.g. `aaaa…(200 chars)`.
fn shown(key: &str) -> String {
    let mut out = String::new();
    let mut used = 0;
    for ch in key.chars() {
        let piece: String = if props::is_control(ch) { ch.escape_debug().collect() } else { ch.to_string() };
        let len = piece.chars().count();
        if used + len > KEY_CHARS {
            out.push_str(&format!("…({} chars)", key.chars().count()));
            return out;
        }
        used += len;
        out.push_str(&piece);
    }
    out
}

/// What an accepted update did: the new configuration, and the keys it took and ignored.
#[derive(Debug)]
pub struct Updated {
    pub config: Config,
    pub keys: Vec<String>,
    pub ignored: Vec<String>,
}

impl Config {
    /// Java's black list: the fixed names plus `configBlackList` split at `;` exactly as Java's `String.split` does
    /// (entries not trimmed; trailing empty entries dropped; an empty setting is the one entry "").
    fn java_black_listed(&self, key: &str) -> bool {
        if JAVA_FIXED_BLACK_LIST.contains(&key) {
            return true;
        }
        let list = self.config_black_list.as_str();
        if !list.contains(';') {
            return key == list;
        }
        let entries: Vec<&str> = list.split(';').collect();
        let kept = entries.iter().rposition(|e| !e.is_empty()).map_or(0, |last| last + 1);
        entries[..kept].contains(&key)
    }

    /// The keys of an UPDATE_NAMESRV_CONFIG that must be refused, sorted and without repeats: every known key that
    /// is not runtime-updatable (files, listeners, limits, TLS, ACL, …), and every key of Java's black list and of
    /// the `configBlackList` setting (an operator may add to it). Keys nobody knows are not refused: Java ignores
    /// them and answers SUCCESS, and so do we. The extra keys of the `-c` file may be updated (Java keeps and
    /// rewrites them; they mean nothing to us).
    pub(crate) fn refused_updates<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let configured: Vec<&str> =
            self.config_black_list.split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
        let mut refused: Vec<String> = keys
            .into_iter()
            .filter(|k| configured.contains(k) || self.java_black_listed(k) || update_policy(k) == Some(Update::Start))
            .map(String::from)
            .collect();
        refused.sort();
        refused.dedup();
        refused
    }

    /// Whether an UPDATE_NAMESRV_CONFIG may be applied. Java's black list is checked first, as Java does, so such an
    /// update gets Java's answer whatever else it holds. A control character is refused in any key or value (Java
    /// would take it): a line break in a value would otherwise be a line break in the rewritten config file. Last, a
    /// number outside its key's range (`bounds.rs`; Java has none) is refused.
    pub fn screen_update(&self, pairs: &[(String, String)]) -> Result<(), Refused> {
        if pairs.iter().any(|(k, _)| self.java_black_listed(k)) {
            return Err(Refused::JavaBlackList);
        }
        let start_only = self.refused_updates(pairs.iter().map(|(k, _)| k.as_str()));
        let mut control: Vec<String> = pairs
            .iter()
            .filter(|(k, v)| k.chars().chain(v.chars()).any(props::is_control))
            .map(|(k, _)| k.clone())
            .collect();
        control.sort();
        control.dedup();
        if !(start_only.is_empty() && control.is_empty()) {
            return Err(Refused::Ours { start_only, control });
        }
        // A key may appear twice; Java takes the last, but either one out of range refuses the whole update.
        let mut out: Vec<String> = pairs.iter().filter_map(|(k, v)| bounds::out_of_range(k, v)).collect();
        out.sort();
        out.dedup();
        if out.is_empty() {
            Ok(())
        } else {
            Err(Refused::OutOfRange(out))
        }
    }

    /// Applies a screened update. Java merges only keys it already knows (`Configuration.mergeIfExist`); the extra
    /// keys of the `-c` file count as known. An unparsable value of a known key is taken and changes nothing, as in
    /// Java.
    pub fn with_update(&self, pairs: Vec<(String, String)>) -> Updated {
        let mut config = self.clone();
        let (mut keys, mut ignored) = (Vec::new(), Vec::new());
        for (k, v) in pairs {
            match config.set(&k, &v) {
                Ok(_) => keys.push(k),
                Err(UnknownKey) if config.extra.contains_key(&k) => {
                    config.extra.insert(k.clone(), v.trim().to_string());
                    keys.push(k);
                }
                Err(UnknownKey) => ignored.push(k),
            }
        }
        Updated { config, keys, ignored }
    }

    /// The text an accepted update writes to `configStorePath`: `persisted_entries`, escaped as
    /// `Properties.store` escapes, so whatever a value holds it stays one value of one line, and reading the file
    /// back gives this configuration.
    pub fn file_text(&self) -> String {
        props::store(&self.persisted_entries())
    }
}

#[cfg(test)]
mod tests;
