//! topic → entry (`topicQueueTable`): a persistent B-tree keyed by a hash of the topic name.
//!
//! Why not by name: a registration looks up each of its topics, and with names ordered as strings every step of
//! the descent (~12 per lookup at 10k topics) compares against a name stored elsewhere on the heap — a cache miss
//! and a memcmp across the prefix topic names usually share. Profiled on a cold load, that was 45 % of the writer.
//! Keyed by a 64-bit hash, the descent compares integers within the node and reads one name at the end.
//!
//! Names with equal hashes share a slot, searched in turn. The hash is keyed with a random per-process seed
//! (`ahash`), so nobody can craft topic names that pile into one slot. Nothing may depend on the order of the map,
//! which changes from run to run: callers that show topics sort them by name (`sorted_names`); Java shows them in
//! its own hash order anyway.

use std::sync::{Arc, OnceLock};

use imbl::OrdMap;
use smallvec::SmallVec;

/// The topics whose names hash to one value: almost always one.
type Slot<V> = SmallVec<[(Arc<str>, V); 1]>;

fn hash(name: &str) -> u64 {
    static SEED: OnceLock<ahash::RandomState> = OnceLock::new();
    SEED.get_or_init(ahash::RandomState::new).hash_one(name)
}

/// The map (of `Arc<TopicEntry>` in the tables). Cloning is O(1) and shares every node.
#[derive(Clone, Debug)]
pub struct TopicMap<V> {
    slots: OrdMap<u64, Slot<V>>,
    len: usize,
}

impl<V> Default for TopicMap<V> {
    fn default() -> Self {
        TopicMap { slots: OrdMap::new(), len: 0 }
    }
}

impl<V: Clone> TopicMap<V> {
    pub fn get(&self, topic: &str) -> Option<&V> {
        self.get_key_value(topic).map(|(_, v)| v)
    }

    /// The entry with the map's own copy of the name.
    pub fn get_key_value(&self, topic: &str) -> Option<(&Arc<str>, &V)> {
        self.find(hash(topic), topic)
    }

    /// `get_key_value` for replacing the entry in place: the path to it becomes the writer's own on the way down,
    /// so one descent instead of a lookup and an insert (wasted copying when the entry then does not change).
    pub fn get_mut(&mut self, topic: &str) -> Option<(&Arc<str>, &mut V)> {
        self.find_mut(hash(topic), topic)
    }

    pub fn contains_key(&self, topic: &str) -> bool {
        self.get_key_value(topic).is_some()
    }

    pub fn insert(&mut self, topic: Arc<str>, entry: V) {
        self.insert_at(hash(&topic), topic, entry)
    }

    pub fn remove(&mut self, topic: &str) {
        self.remove_at(hash(topic), topic)
    }

    // The same four under a given hash, so tests can make names share a slot.

    fn find(&self, h: u64, topic: &str) -> Option<(&Arc<str>, &V)> {
        self.slots.get(&h)?.iter().find(|(k, _)| **k == *topic).map(|(k, v)| (k, v))
    }

    fn find_mut(&mut self, h: u64, topic: &str) -> Option<(&Arc<str>, &mut V)> {
        self.slots.get_mut(&h)?.iter_mut().find(|(k, _)| **k == *topic).map(|(k, v)| (&*k, v))
    }

    fn insert_at(&mut self, h: u64, topic: Arc<str>, entry: V) {
        let slot = self.slots.entry(h).or_default();
        match slot.iter_mut().find(|(k, _)| *k == topic) {
            Some((_, v)) => *v = entry,
            None => {
                slot.push((topic, entry));
                self.len += 1;
            }
        }
    }

    fn remove_at(&mut self, h: u64, topic: &str) {
        let Some(slot) = self.slots.get_mut(&h) else { return };
        let Some(at) = slot.iter().position(|(k, _)| **k == *topic) else { return };
        slot.remove(at);
        self.len -= 1;
        if slot.is_empty() {
            self.slots.remove(&h);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every topic in no particular order (it changes from run to run).
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.slots.values().flat_map(|s| s.iter().map(|(k, v)| (k, v)))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// The names whose entry `keep` accepts, sorted: O(n log n), for admin answers and the console, never on the
    /// write path.
    pub fn sorted_names(&self, mut keep: impl FnMut(&V) -> bool) -> Vec<Arc<str>> {
        let mut names: Vec<Arc<str>> = self.iter().filter(|(_, e)| keep(e)).map(|(t, _)| t.clone()).collect();
        names.sort_unstable();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_name_and_no_other() {
        let mut m = TopicMap::default();
        let names: Vec<String> = (0..5_000).map(|i| format!("topic-{i:06}")).collect();
        for (i, n) in names.iter().enumerate() {
            m.insert(Arc::from(n.as_str()), i);
        }
        m.insert(Arc::from("topic-000007"), 70);
        assert_eq!(m.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            let want = if i == 7 { 70 } else { i };
            assert_eq!(m.get_key_value(n).map(|(k, v)| (&**k, *v)), Some((n.as_str(), want)));
            assert!(m.contains_key(n));
            let (k, v) = m.get_mut(n).expect("present");
            assert_eq!(&**k, n);
            *v += 1;
            assert_eq!(m.get(n), Some(&(want + 1)));
        }
        for absent in ["", "topic-", "topic-005000", "topic-00000", "TOPIC-000001"] {
            assert!(m.get(absent).is_none() && m.get_mut(absent).is_none(), "{absent}");
        }
        m.remove("topic-000042");
        m.remove("topic-000042");
        m.remove("absent");
        assert!(m.get("topic-000042").is_none());
        assert_eq!((m.len(), m.iter().count()), (names.len() - 1, names.len() - 1));
    }

    #[test]
    fn sorted_names_are_sorted_by_name() {
        let mut m = TopicMap::default();
        for (i, n) in ["b", "a", "c", "ab", "%RETRY%x", "Z"].into_iter().enumerate() {
            m.insert(Arc::from(n), i);
        }
        let all: Vec<String> = m.sorted_names(|_| true).iter().map(|t| t.to_string()).collect();
        assert_eq!(all, ["%RETRY%x", "Z", "a", "ab", "b", "c"]);
        let some: Vec<String> = m.sorted_names(|&i| i % 2 == 0).iter().map(|t| t.to_string()).collect();
        assert_eq!(some, ["%RETRY%x", "b", "c"]);
    }

    /// Names sharing a hash (what a collision does) are told apart by name; removing one keeps the others.
    #[test]
    fn names_sharing_a_hash_are_told_apart() {
        let mut m = TopicMap::default();
        for (i, n) in ["x", "y", "z"].into_iter().enumerate() {
            m.insert_at(7, Arc::from(n), i);
        }
        m.insert_at(7, Arc::from("y"), 10);
        assert_eq!((m.slots.len(), m.len()), (1, 3));
        assert_eq!(m.find(7, "y").map(|(_, v)| *v), Some(10));
        assert!(m.find(7, "w").is_none() && m.find(8, "y").is_none());
        *m.find_mut(7, "z").expect("z").1 += 1;
        m.remove_at(7, "y");
        m.remove_at(7, "w");
        assert_eq!(
            (m.find(7, "x").map(|(_, v)| *v), m.find(7, "y"), m.find(7, "z").map(|(_, v)| *v)),
            (Some(0), None, Some(3))
        );
        assert_eq!(m.len(), 2);
        m.remove_at(7, "x");
        m.remove_at(7, "z");
        assert!(m.is_empty() && m.slots.is_empty());
    }
}
