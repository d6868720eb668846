//! The broker live table (Java `brokerLiveTable`): writer-private, keyed by (clusterName, brokerAddr). Heartbeats
//! and unchanged re-registrations touch only this table, so they never publish a snapshot.
//!
//! An index connection → keys lets a closed connection find its brokers without scanning the table (client
//! connections close far more often than broker ones, and never match).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::DataVersion;

use super::ConnId;

/// Java's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`.
pub(crate) const DEFAULT_HEARTBEAT_TIMEOUT_MS: i64 = 120_000;

/// (clusterName, brokerAddr).
pub(crate) type LiveKey = (Arc<str>, Arc<str>);

/// One broker's liveness (Java `BrokerLiveInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BrokerLive {
    pub last_update_ms: i64,
    pub timeout_ms: i64,
    pub data_version: DataVersion,
    pub conn: Option<ConnId>,
    pub ha_server_addr: String,
}

impl BrokerLive {
    /// Java's test is `last + timeout < now`: an entry exactly at its deadline survives.
    pub(crate) fn is_expired(&self, now_ms: i64) -> bool {
        self.last_update_ms.saturating_add(self.timeout_ms) < now_ms
    }
}

/// One live entry as operators see it (the console's broker table, the health verdicts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRow {
    pub cluster: Arc<str>,
    pub addr: Arc<str>,
    pub last_update_ms: i64,
    pub timeout_ms: i64,
    pub data_version: DataVersion,
    pub ha_server_addr: String,
}

/// A broker that left the tables: when, and why (`EvictionCause::name`). The writer keeps the last few for the
/// health verdicts ("a cluster lost brokers lately").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub at_ms: i64,
    pub cluster: Arc<str>,
    pub broker_name: Arc<str>,
    pub broker_id: i64,
    pub addr: Arc<str>,
    pub cause: &'static str,
}

/// The live table: cluster → address → entry, plus the connection index.
#[derive(Clone, Debug, Default)]
pub(crate) struct LiveTable {
    by_cluster: HashMap<Arc<str>, HashMap<Arc<str>, BrokerLive>>,
    by_conn: HashMap<ConnId, BTreeSet<LiveKey>>,
    len: usize,
}

impl LiveTable {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn get(&self, cluster: &str, addr: &str) -> Option<&BrokerLive> {
        self.by_cluster.get(cluster)?.get(addr)
    }

    /// Refreshes `last_update_ms`; `false` when there is no such entry.
    pub(crate) fn touch(&mut self, cluster: &str, addr: &str, now_ms: i64) -> bool {
        match self.by_cluster.get_mut(cluster).and_then(|m| m.get_mut(addr)) {
            Some(live) => {
                live.last_update_ms = now_ms;
                true
            }
            None => false,
        }
    }

    /// Replaces the whole entry (including its connection), returning the previous one.
    pub(crate) fn insert(&mut self, cluster: &Arc<str>, addr: &Arc<str>, live: BrokerLive) -> Option<BrokerLive> {
        let conn = live.conn;
        let prev = self.by_cluster.entry(cluster.clone()).or_default().insert(addr.clone(), live);
        match &prev {
            Some(p) => self.unindex(p.conn, cluster, addr),
            None => self.len += 1,
        }
        if let Some(c) = conn {
            self.by_conn.entry(c).or_default().insert((cluster.clone(), addr.clone()));
        }
        prev
    }

    pub(crate) fn remove(&mut self, cluster: &str, addr: &str) -> Option<BrokerLive> {
        let m = self.by_cluster.get_mut(cluster)?;
        let (key_addr, live) = m.remove_entry(addr)?;
        let key_cluster = self.by_cluster.get_key_value(cluster).map(|(k, _)| k.clone()).expect("cluster present");
        if self.by_cluster[cluster].is_empty() {
            self.by_cluster.remove(cluster);
        }
        self.len -= 1;
        self.unindex(live.conn, &key_cluster, &key_addr);
        Some(live)
    }

    fn unindex(&mut self, conn: Option<ConnId>, cluster: &Arc<str>, addr: &Arc<str>) {
        let Some(c) = conn else { return };
        if let Some(keys) = self.by_conn.get_mut(&c) {
            keys.remove(&(cluster.clone(), addr.clone()));
            if keys.is_empty() {
                self.by_conn.remove(&c);
            }
        }
    }

    /// Every entry: (cluster, address, liveness).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, &BrokerLive)> {
        self.by_cluster.iter().flat_map(|(c, m)| m.iter().map(move |(a, l)| (c, a, l)))
    }

    /// Keys of the entries that hold exactly this connection, sorted.
    pub(crate) fn keys_of_conn(&self, conn: ConnId) -> Vec<LiveKey> {
        self.by_conn.get(&conn).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// Keys of the entries past their deadline at `now_ms`, sorted.
    pub(crate) fn expired(&self, now_ms: i64) -> Vec<LiveKey> {
        let mut keys: Vec<LiveKey> = self
            .by_cluster
            .iter()
            .flat_map(|(c, m)| m.iter().filter(|(_, l)| l.is_expired(now_ms)).map(|(a, _)| (c.clone(), a.clone())))
            .collect();
        keys.sort();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(now: i64, conn: Option<ConnId>) -> BrokerLive {
        BrokerLive {
            last_update_ms: now,
            timeout_ms: 1000,
            data_version: DataVersion::default(),
            conn,
            ha_server_addr: String::new(),
        }
    }

    fn conn(token: u32) -> ConnId {
        ConnId { reactor: 0, token, gen: 0 }
    }

    #[test]
    fn insert_replace_remove_keep_the_conn_index() {
        let mut t = LiveTable::new();
        let (c, a): (Arc<str>, Arc<str>) = ("c".into(), "a:1".into());
        assert!(t.insert(&c, &a, live(0, Some(conn(1)))).is_none());
        assert_eq!(t.keys_of_conn(conn(1)), vec![(c.clone(), a.clone())]);
        assert!(t.insert(&c, &a, live(5, Some(conn(2)))).is_some());
        assert!(t.keys_of_conn(conn(1)).is_empty());
        assert_eq!(t.keys_of_conn(conn(2)).len(), 1);
        assert_eq!(t.len(), 1);
        assert!(t.remove("c", "a:1").is_some());
        assert!(t.keys_of_conn(conn(2)).is_empty());
        assert!(t.is_empty());
        assert!(t.remove("c", "a:1").is_none());
    }

    #[test]
    fn expiry_is_strictly_after_the_deadline() {
        let mut t = LiveTable::new();
        t.insert(&"c".into(), &"a".into(), live(0, None));
        assert!(t.expired(1000).is_empty());
        assert_eq!(t.expired(1001).len(), 1);
        assert!(t.touch("c", "a", 500));
        assert!(t.expired(1001).is_empty());
        assert!(!t.touch("c", "b", 500));
    }
}
