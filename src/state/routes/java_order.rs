//! Java's iteration order of `RouteInfoManager.brokerAddrTable`, a `ConcurrentHashMap<String, BrokerData>(128)`,
//! where it decides something a client can see: which group's address GET_SYSTEM_TOPIC_LIST_FROM_NS (304) returns,
//! and which group an expired or disconnected broker is evicted from when two groups of its cluster hold its address
//! (`setupUnRegisterRequest` takes the first). Also the order a Java broker writes its topics in
//! (`java_broker_topic_order`), for the perf harness and the benches.
//!
//! A `ConcurrentHashMap` visits its bins in index order, and the keys of a bin in insertion order (a key removed and
//! added again goes last). Two things can reorder a bin, and we do not follow them: a resize (at 192 groups and
//! every doubling after), which may reverse part of a bin, and a bin of nine or more keys, which becomes a tree
//! that lists later keys first.

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{BrokerData, BrokerId};

/// For each (cluster, broker address), the first of `groups` (in Java's order) that lists it, with the broker's id
/// there — what `setupUnRegisterRequest` finds by scanning the groups once per broker. Built in one pass, so that
/// evicting many brokers, or saving a table of many groups, costs O(groups + addresses) and not their product (a
/// peer can register thousands of groups).
pub(super) fn first_groups<'a>(
    groups: &[&'a Arc<BrokerData>],
) -> HashMap<(&'a str, &'a str), (&'a Arc<BrokerData>, BrokerId)> {
    let mut first = HashMap::new();
    for bd in groups {
        for (id, addr) in &bd.broker_addrs {
            first.entry((&*bd.cluster, addr.as_str())).or_insert((*bd, *id));
        }
    }
    first
}

/// `String.hashCode` over UTF-16 units.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// The bin a `ConcurrentHashMap` of `table_len` bins puts `key` in (`spread(h) & (n - 1)`).
pub(crate) fn java_chm_bucket(key: &str, table_len: usize) -> usize {
    let h = java_string_hash(key);
    let spread = (h ^ ((h as u32) >> 16) as i32) & 0x7FFF_FFFF;
    spread as usize & (table_len - 1)
}

/// The table length of `new ConcurrentHashMap<>(initial)` (JDK 17: next power of two of `1 + initial / 0.75`) once
/// it has held `peak` entries: it doubles when its size reaches three quarters of the length (`addCount`:
/// `s >= sizeCtl`), and never shrinks.
pub(crate) fn java_chm_table_len(initial: usize, peak: usize) -> usize {
    let mut n = ((1.0 + initial as f64 / 0.75) as usize).next_power_of_two();
    while peak >= n - (n >> 2) {
        n <<= 1;
    }
    n
}

/// The bin of `key` in a `java.util.HashMap` created with the default capacity (16 bins, doubled whenever it holds
/// more than three quarters of its bins) that has held `peak` keys: `(h ^ h >>> 16) & (n - 1)`. Keys of a bin come
/// in insertion order, resizes keep it; a bin of eight keys or more in a table of 64 bins or more becomes a tree,
/// whose order we do not follow.
pub(crate) fn hash_map_bin(key: &str, peak: usize) -> usize {
    let mut n = 16;
    while peak > n - (n >> 2) {
        n <<= 1;
    }
    let h = java_string_hash(key);
    (h ^ ((h as u32) >> 16) as i32) as u32 as usize & (n - 1)
}

/// Puts topic names in the order a Java broker writes them into its registration body: its
/// `TopicConfigManager.topicConfigTable` is a `new ConcurrentHashMap<>(TOPIC_TABLE_CAPACITY)`, iterated bin by bin, a bin's keys in
/// insertion order (kept by the stable sort; a resize can reorder a bin, which this ignores). For the perf harness
/// and the benches, which send what a broker sends: names in name order flattered the writer.
pub fn java_broker_topic_order<S: AsRef<str>>(names: &mut [S]) {
    let bins = java_chm_table_len(TOPIC_TABLE_CAPACITY, names.len());
    names.sort_by_cached_key(|n| java_chm_bucket(n.as_ref(), bins));
}

/// A broker's `topicConfigTable`'s initial capacity.
const TOPIC_TABLE_CAPACITY: usize = 1024;

/// `brokerAddrTable`'s initial capacity.
pub(crate) const BROKER_TABLE_CAPACITY: usize = 128;

/// The bin of broker group `name` in Java's `brokerAddrTable`, which has held `peak` groups.
pub(crate) fn broker_table_bin(name: &str, peak: usize) -> usize {
    java_chm_bucket(name, java_chm_table_len(BROKER_TABLE_CAPACITY, peak))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_order_of_broker_names() {
        assert_eq!(java_string_hash("surf-a"), "surf-a".chars().fold(0i32, |h, c| h.wrapping_mul(31) + c as i32));
        assert_eq!(java_chm_table_len(128, 0), 256);
        assert_eq!(java_chm_table_len(128, 191), 256);
        assert_eq!(java_chm_table_len(128, 192), 512);
        assert_eq!(java_chm_table_len(128, 384), 1024);
        // Observed on Java 5.5.0: surf-b is visited before surf-a and surf-c.
        let order: Vec<usize> = ["surf-a", "surf-b", "surf-c"].iter().map(|n| java_chm_bucket(n, 256)).collect();
        assert_eq!(order, vec![137, 136, 143]);
    }

    #[test]
    fn a_java_broker_writes_its_topics_bin_by_bin() {
        // "Aa" and "BB" share Java's hash 2112, so they share a bin and keep their insertion order.
        let mut names = ["b", "BB", "a", "Aa"];
        java_broker_topic_order(&mut names);
        // Hashes: "a" 97, "b" 98, both well below 2048 bins; 2112 & 2047 = 64. (perf's topology test checks a
        // 10k-topic table against Java 17.)
        assert_eq!(names, ["BB", "Aa", "a", "b"]);
    }
}
