//! KV config namespaces (Java `KVConfigManager`): namespace → key → value. Pure; the writer persists it.
//! Each namespace map sits behind an `Arc` so publishing a change copies one small namespace, not the table.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Immutable KV table as readers see it; the writer edits a clone and publishes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvTable {
    namespaces: BTreeMap<String, Arc<BTreeMap<String, String>>>,
}

impl KvTable {
    pub(crate) fn from_map(map: BTreeMap<String, BTreeMap<String, String>>) -> Self {
        KvTable { namespaces: map.into_iter().map(|(ns, kv)| (ns, Arc::new(kv))).collect() }
    }

    /// The whole table as plain maps (for the file).
    pub(crate) fn to_map(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.namespaces.iter().map(|(ns, kv)| (ns.clone(), (**kv).clone())).collect()
    }

    pub(crate) fn namespace(&self, namespace: &str) -> Option<&BTreeMap<String, String>> {
        self.namespaces.get(namespace).map(|m| &**m)
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.namespace(namespace).and_then(|m| m.get(key)).map(String::as_str)
    }

    /// PUT_KV_CONFIG. A `None` value removes the key but keeps (or creates) the namespace: Java stores a null that
    /// reads as "not found" and is never written to the file. Returns whether anything changed.
    pub(crate) fn put(&mut self, namespace: &str, key: &str, value: Option<&str>) -> bool {
        let ns = self.namespaces.entry(namespace.to_string()).or_default();
        let old = ns.get(key).map(String::as_str);
        if old == value {
            return false;
        }
        let ns = Arc::make_mut(ns);
        match value {
            Some(v) => ns.insert(key.to_string(), v.to_string()),
            None => ns.remove(key),
        };
        true
    }

    /// DELETE_KV_CONFIG: an emptied namespace is kept (it then lists as `{"table":{}}`). Returns whether it changed.
    pub(crate) fn delete(&mut self, namespace: &str, key: &str) -> bool {
        match self.namespaces.get_mut(namespace) {
            Some(ns) if ns.contains_key(key) => {
                Arc::make_mut(ns).remove(key);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.namespaces.values().map(|m| m.len()).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_keeps_emptied_namespace() {
        let mut kv = KvTable::default();
        assert!(kv.put("NS", "k", Some("v")));
        assert!(!kv.put("NS", "k", Some("v")));
        assert_eq!(kv.get("NS", "k"), Some("v"));
        assert!(kv.delete("NS", "k"));
        assert!(!kv.delete("NS", "k"));
        assert_eq!(kv.get("NS", "k"), None);
        assert!(kv.namespace("NS").is_some_and(|m| m.is_empty()));
        assert!(!kv.delete("other", "k"));
        assert!(kv.namespace("other").is_none());
    }

    #[test]
    fn null_value_creates_namespace_without_key() {
        let mut kv = KvTable::default();
        kv.put("NS", "k", None);
        assert!(kv.namespace("NS").is_some());
        assert_eq!(kv.get("NS", "k"), None);
    }

    #[test]
    fn publishing_copies_only_the_changed_namespace() {
        let mut kv = KvTable::from_map(
            [("A".to_string(), BTreeMap::from([("k".into(), "v".into())])), ("B".to_string(), BTreeMap::new())].into(),
        );
        let before = kv.clone();
        kv.put("B", "x", Some("y"));
        assert!(Arc::ptr_eq(&before.namespaces["A"], &kv.namespaces["A"]));
        assert!(!Arc::ptr_eq(&before.namespaces["B"], &kv.namespaces["B"]));
        assert_eq!(kv.to_map()["B"]["x"], "y");
    }
}
