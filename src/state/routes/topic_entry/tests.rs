//! `TopicEntry` against Java's `HashMap` order and a plain map, and what entries share: shapes and queue lists.

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
    assert_eq!(f.all(), [("b-0".into(), usual), ("b-1".into(), usual), ("b-4".into(), usual), ("b-9".into(), usual)]);
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
