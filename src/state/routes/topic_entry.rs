//! One topic's queue data: brokerName → QueueData (a row of Java's `topicQueueTable`), in two shared parts.
//!
//! - The shape: the broker names the topic has, as interned ids (`names`) sorted by name, with when each was added
//!   and how many the topic ever held.
//! - The queues: one `Queue` for all names when they are equal — what the brokers of a cluster carrying the same
//!   topics send — otherwise one per name.
//!
//! Topics with the same history have the same shape, and share it. A broker joining (or leaving) k topics that had
//! one shape builds the next shape once (`Shapes`, a memo the writer keeps for one operation); every other topic
//! takes it with a reference count. So the entry copied on write is a few words whatever the number of brokers
//! sharing the topic, and a registration filing k topics costs O(k) entries, not O(k × brokers per topic).
//!
//! Java keeps the row in a `HashMap`, and where it takes "the first" QueueData of a topic (the unit-topic lists,
//! 311–313, judge a topic by it) that is the first in the map's iteration order: by bin of the broker name, names
//! sharing a bin in the order they were added. So a shape remembers when each name was added and how many it ever
//! held (a `HashMap` grows and never shrinks).

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::QueueData;

use super::java_order;
use super::names::{NameId, Names};

/// A QueueData without its broker name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Queue {
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

impl Queue {
    /// What an empty entry's `Queues::Same` holds, so that equal entries compare equal.
    const NONE: Queue = Queue { read_queue_nums: 0, write_queue_nums: 0, perm: 0, topic_sys_flag: 0 };

    pub(crate) fn of(qd: &QueueData) -> Queue {
        Queue {
            read_queue_nums: qd.read_queue_nums,
            write_queue_nums: qd.write_queue_nums,
            perm: qd.perm,
            topic_sys_flag: qd.topic_sys_flag,
        }
    }

    pub(crate) fn data(self, broker_name: Arc<str>) -> QueueData {
        QueueData {
            broker_name,
            read_queue_nums: self.read_queue_nums,
            write_queue_nums: self.write_queue_nums,
            perm: self.perm,
            topic_sys_flag: self.topic_sys_flag,
        }
    }
}

/// The names of a topic and their history. Never changed once shared; `joined` and `left` build the next one.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// (name, when it was added to the topic), sorted by name. Replacing a name's queue keeps its place, as
    /// `HashMap.put` does.
    slots: Box<[(NameId, u32)]>,
    /// The next "when added".
    added: u32,
    /// The most names the topic ever held.
    peak: u32,
}

impl Shape {
    fn empty() -> Arc<Shape> {
        Arc::new(Shape { slots: Box::new([]), added: 0, peak: 0 })
    }

    /// With `id` inserted at `i`.
    fn joined(&self, i: usize, id: NameId) -> Shape {
        let mut slots = Vec::with_capacity(self.slots.len() + 1);
        slots.extend_from_slice(&self.slots[..i]);
        slots.push((id, self.added));
        slots.extend_from_slice(&self.slots[i..]);
        let peak = self.peak.max(slots.len() as u32);
        Shape { slots: slots.into_boxed_slice(), added: self.added + 1, peak }
    }

    /// Without the name at `i`.
    fn left(&self, i: usize) -> Shape {
        let mut slots = self.slots.to_vec();
        slots.remove(i);
        Shape { slots: slots.into_boxed_slice(), added: self.added, peak: self.peak }
    }
}

/// (the shape's address, the name, joined or left) → (that shape, the shape after).
type Memo = HashMap<MemoKey, (Arc<Shape>, Arc<Shape>), ahash::RandomState>;

/// A change to one slot of a topic's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Edit {
    Set(Queue),
    Insert(Queue),
    Remove,
}

/// What a topic's queues were: `Same` by its shape's address (which fixes the length) and the queue, `Each` by the
/// list's address.
type QueuesKey = (usize, Option<Queue>, u32, Edit);

/// (the queues before, the slot, the edit) → (the entry they came from, the queues after).
type QueuesMemo = HashMap<QueuesKey, (TopicEntry, Queues), ahash::RandomState>;

/// The shapes and queue lists built during one operation, so that topics which were alike stay alike and share:
/// (shape, name, joined or left) → the shape after, and (queues, slot, edit) → the queues after. The writer clears
/// both at the end of every operation (`clear`). Each holds what it started from too, so that an address cannot
/// be freed and reused while it is a key.
#[derive(Clone, Debug)]
pub(crate) struct Shapes {
    memo: Memo,
    queues: QueuesMemo,
    /// The shape new topics start from: one for all, so that the topics a broker creates share their next shape.
    empty: Arc<Shape>,
    /// The last name looked up in a shape and where it was, and the last `memo` hit: a registration meets the same
    /// shape topic after topic, and these two answer it without a binary search or a hash lookup. `last_find` holds
    /// its shape, so that address cannot be reused meanwhile; `last_after`'s key is a shape `memo` holds, and the
    /// two are cleared together.
    last_find: Option<(Arc<Shape>, NameId, Result<usize, usize>)>,
    last_after: Option<(MemoKey, Arc<Shape>)>,
}

type MemoKey = (usize, NameId, bool);

impl Default for Shapes {
    fn default() -> Self {
        Shapes {
            memo: HashMap::default(),
            queues: HashMap::default(),
            empty: Shape::empty(),
            last_find: None,
            last_after: None,
        }
    }
}

impl Shapes {
    /// More than any operation needs in practice (one per distinct shape it meets); a bound, not a tuning knob.
    const MAX: usize = 1 << 16;

    pub(crate) fn clear(&mut self) {
        self.memo.clear();
        self.queues.clear();
        self.last_find = None;
        self.last_after = None;
    }

    /// Where `id` is in `shape`, or would go: `TopicEntry::find` for an interned name, by rank.
    fn locate(&mut self, shape: &Arc<Shape>, id: NameId, names: &Names) -> Result<usize, usize> {
        if let Some((s, i, found)) = &self.last_find {
            if Arc::ptr_eq(s, shape) && *i == id {
                return *found;
            }
        }
        let rank = names.rank(id);
        let found = shape.slots.binary_search_by(|(s, _)| names.rank(*s).cmp(&rank));
        self.last_find = Some((shape.clone(), id, found));
        found
    }

    /// A new topic's entry: `queue` under `id`.
    pub(crate) fn first(&mut self, id: NameId, queue: Queue) -> TopicEntry {
        let shape = self.after(&self.empty.clone(), id, true, |s| s.joined(0, id));
        TopicEntry { shape, queues: Queues::Same(queue) }
    }

    fn after(&mut self, from: &Arc<Shape>, id: NameId, join: bool, build: impl FnOnce(&Shape) -> Shape) -> Arc<Shape> {
        let key = (Arc::as_ptr(from) as usize, id, join);
        if let Some((k, to)) = &self.last_after {
            if *k == key {
                return to.clone();
            }
        }
        let to = match self.memo.get(&key) {
            Some((_, to)) => to.clone(),
            None => {
                if self.memo.len() >= Self::MAX {
                    self.memo.clear();
                    self.last_after = None;
                }
                let to = Arc::new(build(from));
                self.memo.insert(key, (from.clone(), to.clone()));
                to
            }
        };
        self.last_after = Some((key, to.clone()));
        to
    }

    /// `from`'s queues with `edit` at slot `i`: a perm change of one broker over k topics of one shape builds one
    /// list, not k.
    fn edited(&mut self, from: &TopicEntry, i: usize, edit: Edit) -> Queues {
        let key = match &from.queues {
            Queues::Same(q) => (Arc::as_ptr(&from.shape) as usize, Some(*q), i as u32, edit),
            Queues::Each(qs) => (Arc::as_ptr(qs) as *const Queue as usize, None, i as u32, edit),
        };
        if let Some((_, to)) = self.queues.get(&key) {
            return to.clone();
        }
        if self.queues.len() >= Self::MAX {
            self.queues.clear();
        }
        let to = from.queues.edited(from.len(), |qs| match edit {
            Edit::Set(q) => qs[i] = q,
            Edit::Insert(q) => qs.insert(i, q),
            Edit::Remove => {
                qs.remove(i);
            }
        });
        self.queues.insert(key, (from.clone(), to.clone()));
        to
    }
}

/// A topic's queues, one per slot of its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Queues {
    /// Every name has this queue (`Queue::NONE` when there is no name).
    Same(Queue),
    /// Not all equal: one per slot.
    Each(Arc<[Queue]>),
}

impl Queues {
    fn get(&self, i: usize) -> Queue {
        match self {
            Queues::Same(q) => *q,
            Queues::Each(qs) => qs[i],
        }
    }

    /// `len` queues with `edit` applied, `Same` when they come out equal, so equal entries compare equal.
    fn edited(&self, len: usize, edit: impl FnOnce(&mut Vec<Queue>)) -> Queues {
        let mut qs = match self {
            Queues::Same(q) => vec![*q; len],
            Queues::Each(qs) => qs.to_vec(),
        };
        edit(&mut qs);
        match qs.first() {
            None => Queues::Same(Queue::NONE),
            Some(first) if qs.iter().all(|q| q == first) => Queues::Same(*first),
            Some(_) => Queues::Each(qs.into()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicEntry {
    shape: Arc<Shape>,
    queues: Queues,
}

impl Default for TopicEntry {
    fn default() -> Self {
        TopicEntry { shape: Shape::empty(), queues: Queues::Same(Queue::NONE) }
    }
}

impl TopicEntry {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn find(&self, name: &str, names: &Names) -> Result<usize, usize> {
        self.shape.slots.binary_search_by(|(id, _)| (**names.name(*id)).cmp(name))
    }

    pub(crate) fn queue(&self, name: &str, names: &Names) -> Option<Queue> {
        self.find(name, names).ok().map(|i| self.queues.get(i))
    }

    pub(crate) fn contains(&self, name: &str, names: &Names) -> bool {
        self.find(name, names).is_ok()
    }

    /// The shape's address and the one queue every broker name has, if they all have the same: the two decide the
    /// route with the BrokerData of the names (`RouteKin`).
    pub(crate) fn kin(&self) -> Option<(usize, Queue)> {
        match self.queues {
            Queues::Same(q) => Some((Arc::as_ptr(&self.shape) as usize, q)),
            Queues::Each(_) => None,
        }
    }

    /// The same shape (by identity: the same names, each added when it was) and the same queues.
    pub(crate) fn same_route_as(&self, other: &TopicEntry) -> bool {
        Arc::ptr_eq(&self.shape, &other.shape) && self.queues == other.queues
    }

    /// The ids of the broker names, in name order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = NameId> + '_ {
        self.shape.slots.iter().map(|(id, _)| *id)
    }

    /// Broker names, in name order.
    pub(crate) fn names<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = &'a Arc<str>> + 'a {
        self.shape.slots.iter().map(|(id, _)| names.name(*id))
    }

    /// (name, queue), in name order.
    pub(crate) fn queues<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = (&'a Arc<str>, Queue)> + 'a {
        self.shape.slots.iter().enumerate().map(|(i, (id, _))| (names.name(*id), self.queues.get(i)))
    }

    /// The queue of the `i`th name in name order (`i < len()`).
    pub(crate) fn queue_at(&self, i: usize) -> Queue {
        self.queues.get(i)
    }

    pub(crate) fn len(&self) -> usize {
        self.shape.slots.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.shape.slots.is_empty()
    }

    /// A copy with `queue` under `id` (whose name is `names.name(id)`) and whether the name is new to the topic;
    /// `None` when the topic already has that very queue under the name. One search for both; a new name's shape
    /// comes from `shapes` when another topic of the same shape was joined already.
    pub(crate) fn put(
        &self,
        id: NameId,
        queue: Queue,
        names: &Names,
        shapes: &mut Shapes,
    ) -> Option<(TopicEntry, bool)> {
        let len = self.len();
        match shapes.locate(&self.shape, id, names) {
            Ok(i) if self.queues.get(i) == queue => None,
            Ok(i) => {
                let queues = shapes.edited(self, i, Edit::Set(queue));
                Some((TopicEntry { shape: self.shape.clone(), queues }, false))
            }
            Err(i) => {
                let shape = shapes.after(&self.shape, id, true, |s| s.joined(i, id));
                let queues = match self.queues {
                    // The usual join: the broker files the queue the others have.
                    Queues::Same(q) if q == queue || len == 0 => Queues::Same(queue),
                    _ => shapes.edited(self, i, Edit::Insert(queue)),
                };
                Some((TopicEntry { shape, queues }, true))
            }
        }
    }

    /// A copy without `name`; `None` when the topic has no queue of it.
    pub(crate) fn without(&self, name: &str, names: &Names, shapes: &mut Shapes) -> Option<TopicEntry> {
        let i = self.find(name, names).ok()?;
        let id = self.shape.slots[i].0;
        let shape = shapes.after(&self.shape, id, false, |s| s.left(i));
        let queues = match self.queues {
            Queues::Same(q) if self.len() > 1 => Queues::Same(q),
            _ => shapes.edited(self, i, Edit::Remove),
        };
        Some(TopicEntry { shape, queues })
    }

    /// The queue Java's `HashMap` iteration yields first (`queueDatas.values().iterator().next()`).
    pub(crate) fn java_first<'a>(&'a self, names: &'a Names) -> Option<(&'a Arc<str>, Queue)> {
        let peak = self.shape.peak as usize;
        (0..self.len())
            .min_by_key(|&i| {
                let (id, added) = self.shape.slots[i];
                (java_order::hash_map_bin(names.name(id), peak), added)
            })
            .map(|i| (names.name(self.shape.slots[i].0), self.queues.get(i)))
    }

    /// Whether two entries share their shape (tests of sharing).
    #[cfg(test)]
    pub(crate) fn same_shape(&self, other: &TopicEntry) -> bool {
        Arc::ptr_eq(&self.shape, &other.shape)
    }

    /// Whether two entries share one list of per-name queues (tests of sharing).
    #[cfg(test)]
    fn same_queue_list(&self, other: &TopicEntry) -> bool {
        matches!((&self.queues, &other.queues), (Queues::Each(a), Queues::Each(b)) if Arc::ptr_eq(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::super::names::Interner;
    use super::*;

    fn q(flag: i32) -> Queue {
        Queue { read_queue_nums: 1, write_queue_nums: 1, perm: 6, topic_sys_flag: flag }
    }

    #[derive(Default)]
    struct Fixture {
        names: Names,
        interner: Interner,
        shapes: Shapes,
        e: TopicEntry,
    }

    impl Fixture {
        fn id(&mut self, name: &str) -> NameId {
            self.interner.intern(&mut self.names, &Arc::from(name))
        }
        fn put_queue(&mut self, name: &str, queue: Queue) -> bool {
            let id = self.id(name);
            match self.e.put(id, queue, &self.names, &mut self.shapes) {
                Some((e, new)) => {
                    self.e = e;
                    new
                }
                None => false,
            }
        }
        fn put(&mut self, name: &str, flag: i32) -> bool {
            self.put_queue(name, q(flag))
        }
        fn remove(&mut self, name: &str) {
            self.e = self.e.without(name, &self.names, &mut self.shapes).expect("present");
        }
        fn first(&self) -> (String, i32) {
            let (n, q) = self.e.java_first(&self.names).expect("not empty");
            (n.to_string(), q.topic_sys_flag)
        }
        fn all(&self) -> Vec<(String, Queue)> {
            self.e.queues(&self.names).map(|(n, q)| (n.to_string(), q)).collect()
        }
    }

    #[test]
    fn java_first_is_by_bin_then_by_insertion() {
        // Bins of 16: b-0 → 4, b-1 and b-a → 7.
        let mut f = Fixture::default();
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
        assert!(f.e.without("b-0", &f.names, &mut f.shapes).is_none());
    }

    #[test]
    fn the_hash_map_grows_past_twelve_names_and_never_shrinks() {
        assert_eq!(java_order::hash_map_bin("b-3", 12), 9);
        // 13 names: 32 bins.
        let h = java_order::java_string_hash("b-3");
        assert_eq!(java_order::hash_map_bin("b-3", 13), (h ^ ((h as u32) >> 16) as i32) as usize & 31);
    }

    #[test]
    fn an_entry_is_a_few_words_whatever_its_brokers() {
        assert_eq!(std::mem::size_of::<TopicEntry>(), 32);
    }

    #[test]
    fn queues_are_kept_once_when_equal_and_per_name_otherwise() {
        let mut f = Fixture::default();
        let usual = Queue { read_queue_nums: 8, write_queue_nums: 8, perm: 6, topic_sys_flag: 0 };
        let odd = [
            Queue { read_queue_nums: 65_536, ..usual },
            Queue { perm: 16, ..usual },
            Queue { topic_sys_flag: -1, ..usual },
            Queue { read_queue_nums: i32::MIN, write_queue_nums: i32::MAX, perm: -6, topic_sys_flag: 1 << 30 },
        ];
        f.put_queue("b-0", usual);
        f.put_queue("b-9", usual);
        assert_eq!(f.e.queues, Queues::Same(usual));
        for (k, q) in odd.iter().enumerate() {
            f.put_queue(&format!("b-{}", k + 1), *q);
        }
        assert!(matches!(f.e.queues, Queues::Each(_)));
        assert_eq!(f.e.queue("b-0", &f.names), Some(usual));
        assert_eq!(f.e.queue("b-9", &f.names), Some(usual));
        for (k, q) in odd.iter().enumerate() {
            assert_eq!(f.e.queue(&format!("b-{}", k + 1), &f.names), Some(*q));
        }
        assert!(!f.put_queue("b-3", odd[2]), "the same queue is no change");
        let b3 = f.id("b-3");
        assert!(f.e.put(b3, odd[2], &f.names, &mut f.shapes).is_none());
        // Removing and replacing odd queues keeps the others right, and one queue is kept again without them.
        f.remove("b-2");
        f.put_queue("b-1", usual);
        assert_eq!(f.e.queue("b-3", &f.names), Some(odd[2]));
        assert_eq!(f.e.queue("b-4", &f.names), Some(odd[3]));
        assert_eq!(f.e.java_first(&f.names).map(|(n, _)| n.to_string()).as_deref(), Some("b-0"));
        f.remove("b-3");
        f.put_queue("b-4", usual);
        assert_eq!(f.e.queues, Queues::Same(usual), "no odd queue left");
        assert_eq!(
            f.all(),
            [("b-0".into(), usual), ("b-1".into(), usual), ("b-4".into(), usual), ("b-9".into(), usual)]
        );
        for n in ["b-0", "b-1", "b-4", "b-9"] {
            f.remove(n);
        }
        assert!(f.e.is_empty());
        assert_eq!(f.e.queues, Queues::Same(Queue::NONE));
    }

    #[test]
    fn topics_with_the_same_history_share_one_shape() {
        let mut f = Fixture::default();
        let ids: Vec<NameId> = (0..50).map(|b| f.id(&format!("broker-{b}"))).collect();
        let mut topics = vec![TopicEntry::new(); 1_000];
        for (b, id) in ids.iter().enumerate() {
            for (t, e) in topics.iter_mut().enumerate() {
                // Every tenth topic gets its own queue from the third broker on: the queues differ, the shape not.
                let flag = if t % 10 == 0 && b >= 2 { b as i32 } else { 0 };
                *e = e.put(*id, q(flag), &f.names, &mut f.shapes).expect("a new name").0;
            }
            f.shapes.clear();
        }
        assert!(topics.iter().all(|e| e.same_shape(&topics[0]) && e.len() == 50));
        assert_eq!(topics[0].queue("broker-7", &f.names), Some(q(7)));
        assert_eq!(topics[1].queue("broker-7", &f.names), Some(q(0)));
        assert_eq!(Arc::strong_count(&topics[0].shape), 1_000, "one shape, held by every topic and nothing else");
        // Leaving shares too; a topic with another history gets its own shape.
        let gone: Vec<TopicEntry> =
            topics.iter().map(|e| e.without("broker-3", &f.names, &mut f.shapes).expect("present")).collect();
        assert!(gone.iter().all(|e| e.same_shape(&gone[0]) && e.len() == 49));
        let other = topics[5].without("broker-4", &f.names, &mut f.shapes).expect("present");
        assert!(!other.same_shape(&gone[0]));
        f.shapes.clear();
        // One broker's queue changed over every topic (a perm change): one list for the topics whose queues were
        // all equal, one for those that had their own, and none copied per topic.
        let b7 = f.id("broker-7");
        let changed: Vec<TopicEntry> =
            topics.iter().map(|e| e.put(b7, q(99), &f.names, &mut f.shapes).expect("a change").0).collect();
        assert!(changed.iter().all(|e| e.same_shape(&topics[0]) && e.queue("broker-7", &f.names) == Some(q(99))));
        assert!(changed.iter().enumerate().all(|(t, e)| e.same_queue_list(&changed[t % 10])));
        assert!(!changed[0].same_queue_list(&changed[1]));
        assert_eq!(changed[0].queue("broker-8", &f.names), Some(q(8)));
        assert_eq!(changed[1].queue("broker-8", &f.names), Some(q(0)));
    }

    proptest::proptest! {
        /// Against a model that keeps (name → queue, when added) in a `BTreeMap`: the contents and Java's "first"
        /// agree after any sequence of puts and removals on several topics sharing shapes. An op is (topic, name,
        /// 0 = remove or 1–3 = put a queue, whether the writer's operation ends here).
        #[test]
        fn entries_agree_with_a_plain_map(ops in proptest::collection::vec((0..4usize, 0..20u32, 0..4i32, 0..8u8), 1..600)) {
            use std::collections::BTreeMap;
            let mut f = Fixture::default();
            let mut entries = vec![TopicEntry::new(); 4];
            // Per topic: name → (queue, when added), the next "when added", the most names held.
            type Model = (BTreeMap<String, (Queue, u32)>, u32, u32);
            let mut models: Vec<Model> = vec![Default::default(); 4];
            for (step, (t, n, kind, end)) in ops.into_iter().enumerate() {
                let name = format!("b-{n}");
                let (model, added, peak) = &mut models[t];
                if kind == 0 {
                    let had = model.remove(&name).is_some();
                    let after = entries[t].without(&name, &f.names, &mut f.shapes);
                    proptest::prop_assert_eq!(after.is_some(), had, "step {}", step);
                    if let Some(e) = after {
                        entries[t] = e;
                    }
                } else {
                    let queue = q(kind);
                    let id = f.id(&name);
                    let new = !model.contains_key(&name);
                    let changed = model.get(&name).is_none_or(|(old, _)| *old != queue);
                    let at = model.get(&name).map_or(*added, |(_, a)| *a);
                    model.insert(name.clone(), (queue, at));
                    if new {
                        *added += 1;
                        *peak = (*peak).max(model.len() as u32);
                    }
                    match entries[t].put(id, queue, &f.names, &mut f.shapes) {
                        Some((e, was_new)) => {
                            proptest::prop_assert!(changed && was_new == new, "step {}", step);
                            entries[t] = e;
                        }
                        None => proptest::prop_assert!(!changed, "step {}", step),
                    }
                }
                if end == 0 {
                    f.shapes.clear();
                }
                let (model, _, peak) = &models[t];
                let got: Vec<(String, Queue)> = entries[t].queues(&f.names).map(|(n, q)| (n.to_string(), q)).collect();
                let want: Vec<(String, Queue)> = model.iter().map(|(n, (q, _))| (n.clone(), *q)).collect();
                proptest::prop_assert_eq!(got, want, "step {}", step);
                let first = model.iter().min_by_key(|(n, (_, a))| (java_order::hash_map_bin(n, *peak as usize), *a));
                let got_first = entries[t].java_first(&f.names).map(|(n, q)| (n.to_string(), q));
                proptest::prop_assert_eq!(got_first, first.map(|(n, (q, _))| (n.clone(), *q)), "step {}", step);
            }
        }
    }
}
