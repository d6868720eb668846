//! One topic's queue data: brokerName → QueueData (a row of Java's `topicQueueTable`), compact.
//!
//! An entry is a boxed slice of 24-byte slots sorted by broker name: an interned name id (`names`), the four
//! integers of a QueueData and when the name was added. The writer never edits an entry a reader may hold; it
//! builds the changed copy (`with`, `without`) — one allocation and a `memcpy` of the slots, no per-slot reference
//! counts or allocations — so a registration's cost per topic barely grows with the brokers sharing the topic.
//!
//! Java keeps the row in a `HashMap`, and where it takes "the first" QueueData of a topic (the unit-topic lists,
//! 311–313, judge a topic by it) that is the first in the map's iteration order: by bin of the broker name, names
//! sharing a bin in the order they were added. So an entry remembers when each name was added and how many it ever
//! held (a `HashMap` grows and never shrinks).

use std::sync::Arc;

use crate::model::QueueData;

use super::java_order;
use super::names::{NameId, Names};

/// A QueueData without its broker name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Queue {
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

impl Queue {
    pub fn of(qd: &QueueData) -> Queue {
        Queue {
            read_queue_nums: qd.read_queue_nums,
            write_queue_nums: qd.write_queue_nums,
            perm: qd.perm,
            topic_sys_flag: qd.topic_sys_flag,
        }
    }

    pub fn data(self, broker_name: Arc<str>) -> QueueData {
        QueueData {
            broker_name,
            read_queue_nums: self.read_queue_nums,
            write_queue_nums: self.write_queue_nums,
            perm: self.perm,
            topic_sys_flag: self.topic_sys_flag,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    name: NameId,
    /// When the name was added to this topic (replacing its queue keeps its place, as `HashMap.put` does).
    added: u32,
    queue: Queue,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicEntry {
    /// Sorted by broker name.
    slots: Box<[Slot]>,
    /// The next `Slot::added`.
    added: u32,
    /// The most names the entry ever held.
    peak: u32,
}

impl TopicEntry {
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, name: &str, names: &Names) -> Result<usize, usize> {
        self.slots.binary_search_by(|s| (**names.name(s.name)).cmp(name))
    }

    pub fn queue(&self, name: &str, names: &Names) -> Option<Queue> {
        self.find(name, names).ok().map(|i| self.slots[i].queue)
    }

    pub fn contains(&self, name: &str, names: &Names) -> bool {
        self.find(name, names).is_ok()
    }

    /// Broker names, in name order.
    pub fn names<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = &'a Arc<str>> + 'a {
        self.slots.iter().map(|s| names.name(s.name))
    }

    /// (name, queue), in name order.
    pub fn queues<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = (&'a Arc<str>, Queue)> + 'a {
        self.slots.iter().map(|s| (names.name(s.name), s.queue))
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A copy with `queue` under `id` (whose name is `names.name(id)`) and whether the name is new to the topic;
    /// `None` when the topic already has that very queue under the name. One search for both.
    pub fn put(&self, id: NameId, queue: Queue, names: &Names) -> Option<(TopicEntry, bool)> {
        match self.find(names.name(id), names) {
            Ok(i) if self.slots[i].queue == queue => None,
            Ok(i) => {
                let mut slots = self.slots.clone();
                slots[i].queue = queue;
                Some((TopicEntry { slots, ..*self }, false))
            }
            Err(i) => {
                let mut slots = Vec::with_capacity(self.slots.len() + 1);
                slots.extend_from_slice(&self.slots[..i]);
                slots.push(Slot { name: id, added: self.added, queue });
                slots.extend_from_slice(&self.slots[i..]);
                let peak = self.peak.max(slots.len() as u32);
                Some((TopicEntry { slots: slots.into_boxed_slice(), added: self.added + 1, peak }, true))
            }
        }
    }

    /// A copy without `name`; `None` when the topic has no queue of it.
    pub fn without(&self, name: &str, names: &Names) -> Option<TopicEntry> {
        let i = self.find(name, names).ok()?;
        let mut slots = Vec::with_capacity(self.slots.len() - 1);
        slots.extend_from_slice(&self.slots[..i]);
        slots.extend_from_slice(&self.slots[i + 1..]);
        Some(TopicEntry { slots: slots.into_boxed_slice(), ..*self })
    }

    /// The queue Java's `HashMap` iteration yields first (`queueDatas.values().iterator().next()`).
    pub fn java_first<'a>(&'a self, names: &'a Names) -> Option<(&'a Arc<str>, Queue)> {
        self.slots
            .iter()
            .min_by_key(|s| (java_order::hash_map_bin(names.name(s.name), self.peak as usize), s.added))
            .map(|s| (names.name(s.name), s.queue))
    }
}

#[cfg(test)]
mod tests {
    use super::super::names::Interner;
    use super::*;

    fn q(flag: i32) -> Queue {
        Queue { read_queue_nums: 1, write_queue_nums: 1, perm: 6, topic_sys_flag: flag }
    }

    struct Fixture {
        names: Names,
        interner: Interner,
        e: TopicEntry,
    }

    impl Fixture {
        fn put(&mut self, name: &str, flag: i32) -> bool {
            let id = self.interner.intern(&mut self.names, &Arc::from(name));
            match self.e.put(id, q(flag), &self.names) {
                Some((e, new)) => {
                    self.e = e;
                    new
                }
                None => false,
            }
        }
        fn remove(&mut self, name: &str) {
            self.e = self.e.without(name, &self.names).expect("present");
        }
        fn first(&self) -> (String, i32) {
            let (n, q) = self.e.java_first(&self.names).expect("not empty");
            (n.to_string(), q.topic_sys_flag)
        }
    }

    #[test]
    fn java_first_is_by_bin_then_by_insertion() {
        // Bins of 16: b-0 → 4, b-1 and b-a → 7.
        let mut f = Fixture { names: Names::default(), interner: Interner::default(), e: TopicEntry::new() };
        assert!(f.put("b-a", 2));
        assert!(f.put("b-1", 0));
        assert_eq!(f.first().0, "b-a", "same bin: the one added first");
        // Replacing keeps the place.
        assert!(!f.put("b-a", 3));
        assert_eq!(f.first(), ("b-a".into(), 3));
        f.put("b-0", 1);
        assert_eq!(f.first().0, "b-0", "a smaller bin");
        f.remove("b-0");
        f.remove("b-a");
        f.put("b-a", 2);
        assert_eq!(f.first().0, "b-1", "added again: last of its bin");
        let listed: Vec<&str> = f.e.names(&f.names).map(|n| &**n).collect();
        assert_eq!(listed, ["b-1", "b-a"], "name order");
        assert!(f.e.without("b-0", &f.names).is_none());
    }

    #[test]
    fn the_hash_map_grows_past_twelve_names_and_never_shrinks() {
        assert_eq!(java_order::hash_map_bin("b-3", 12), 9);
        // 13 names: 32 bins.
        let h = java_order::java_string_hash("b-3");
        assert_eq!(java_order::hash_map_bin("b-3", 13), (h ^ ((h as u32) >> 16) as i32) as usize & 31);
    }

    #[test]
    fn a_slot_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 24);
    }
}
