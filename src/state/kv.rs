//! KV config namespaces (Java `KVConfigManager`): namespace → key → value. Pure; the writer persists it.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Immutable KV table; the writer replaces a namespace's map when it changes (namespaces are small).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvTable {
    pub namespaces: BTreeMap<String, Arc<BTreeMap<String, String>>>,
}
