//! What the health verdicts need of the route table, counted in one pass over the topics: per broker group how
//! many of its queue entries a producer may write to, and the topics no producer can write to at all.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::model::perm;

use super::{Queue, RouteView, TopicEntry};

const MASTER_ID: i64 = 0;

/// One broker group's queue entries (one per topic it carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupWrites {
    pub queues: usize,
    /// Entries whose perm has the write bit and which have write queues.
    pub writable: usize,
}

/// The result of `RouteView::write_census`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteCensus {
    /// brokerName → its entries.
    pub groups: BTreeMap<Arc<str>, GroupWrites>,
    /// Topics with no entry a producer can write to: none with the write bit and write queues on a group that has a
    /// master. Topics whose every entry has neither read nor write (a broker's own cluster or name topic when
    /// `clusterTopicEnable`/`brokerTopicEnable` are off: inherit-only by design) are left out.
    pub unwritable: usize,
    /// Of those, the ones that would be writable if their groups had a master: an outage, not a setting.
    pub unwritable_headless: usize,
    /// The first `sample` unwritable topics in name order.
    pub unwritable_sample: Vec<Arc<str>>,
}

fn writable(q: Queue) -> bool {
    q.perm & perm::WRITE != 0 && q.write_queue_nums > 0
}

/// What one topic's entry says: whether a producer can write to it, and whether its queues would let one if its
/// groups had masters.
#[derive(Clone, Copy)]
struct TopicWrites {
    writable: bool,
    perm_writable: bool,
    by_design: bool,
}

impl RouteView {
    /// For an operator's look (health verdicts), not for requests. Topics of one route kin (the same shape and
    /// queues: a cluster's brokers carrying the same topics) are judged once and counted, so the pass costs
    /// O(topics) hash lookups plus O(kins × groups), not O(topics × groups).
    pub fn write_census(&self, sample: usize) -> WriteCensus {
        // Whether each interned name's group has a master, looked up by id.
        let mastered: Vec<bool> = (0..self.brokers_by_id.len())
            .map(|id| self.broker_by_id(id as u32).is_some_and(|bd| bd.broker_addrs.contains_key(&MASTER_ID)))
            .collect();
        let mut per_id: Vec<GroupWrites> = vec![GroupWrites::default(); mastered.len()];
        let judge = |entry: &TopicEntry| {
            let mut t = TopicWrites { writable: false, perm_writable: false, by_design: true };
            for (i, id) in entry.ids().enumerate() {
                let q = entry.queue_at(i);
                t.by_design &= q.perm & (perm::READ | perm::WRITE) == 0;
                t.perm_writable |= writable(q);
                t.writable |= writable(q) && mastered.get(id as usize).copied().unwrap_or(false);
            }
            t
        };
        let count = |entry: &TopicEntry, topics: usize, per_id: &mut [GroupWrites]| {
            for (i, id) in entry.ids().enumerate() {
                if let Some(g) = per_id.get_mut(id as usize) {
                    g.queues += topics;
                    g.writable += topics * usize::from(writable(entry.queue_at(i)));
                }
            }
        };
        // kin → (a topic's entry, how many topics share it, the judgement).
        let mut kins: HashMap<RouteKinKey, (&TopicEntry, usize, TopicWrites), ahash::RandomState> = HashMap::default();
        let mut census = WriteCensus::default();
        for (key, entry) in &self.topics {
            let t = match entry.kin() {
                Some(kin) => {
                    let slot = kins.entry(kin).or_insert_with(|| (&**entry, 0, judge(entry)));
                    slot.1 += 1;
                    slot.2
                }
                None => {
                    count(entry, 1, &mut per_id);
                    judge(entry)
                }
            };
            if !t.writable && !t.by_design && !entry.is_empty() {
                census.unwritable += 1;
                census.unwritable_headless += usize::from(t.perm_writable);
                if census.unwritable_sample.len() < sample {
                    census.unwritable_sample.push(key.name().clone());
                }
            }
        }
        for (entry, topics, _) in kins.into_values() {
            count(entry, topics, &mut per_id);
        }
        for (id, g) in per_id.into_iter().enumerate() {
            if g.queues > 0 {
                census.groups.insert(self.names.name(id as u32).clone(), g);
            }
        }
        census
    }
}

/// `TopicEntry::kin`: the shape's address and the one queue all its names have.
type RouteKinKey = (usize, Queue);

#[cfg(test)]
mod tests {
    use super::super::test_util::{dv, reg, tc};
    use super::super::RouteTables;
    use super::*;
    use crate::state::routes::RegisterBroker;
    use crate::state::routes::RouteSettings;

    fn tables(regs: Vec<crate::state::routes::RegisterBroker>) -> RouteTables {
        let mut t = RouteTables::new();
        for r in regs {
            t.register_broker(r, 0, RouteSettings::default());
        }
        t
    }

    #[test]
    fn a_topic_on_a_group_without_master_is_unwritable_and_counted_as_an_outage() {
        let t = tables(vec![
            reg("c", "a", 0, "10.0.0.1:10911", &["T1", "T2"], 1),
            reg("c", "b", 1, "10.0.0.2:10911", &["T2", "T3"], 1),
        ]);
        let c = t.view().write_census(10);
        // T1 on a's master; T2 on a's master and b's slave; T3 only on b's slave.
        assert_eq!(c.unwritable, 1, "{c:?}");
        assert_eq!(c.unwritable_headless, 1);
        assert_eq!(c.unwritable_sample, vec![Arc::<str>::from("T3")]);
        assert_eq!(c.groups[&Arc::<str>::from("a")], GroupWrites { queues: 2, writable: 2 });
    }

    #[test]
    fn wiped_write_perm_makes_every_entry_of_the_group_read_only() {
        let mut t = tables(vec![reg("c", "a", 0, "10.0.0.1:10911", &["T1", "T2"], 1)]);
        t.wipe_write_perm("a");
        let c = t.view().write_census(1);
        assert_eq!(c.groups[&Arc::<str>::from("a")], GroupWrites { queues: 2, writable: 0 });
        assert_eq!((c.unwritable, c.unwritable_headless), (2, 0), "a setting, not an outage: {c:?}");
        assert_eq!(c.unwritable_sample.len(), 1, "the sample is bounded");
    }

    #[test]
    fn inherit_only_topics_are_by_design() {
        let r = RegisterBroker::new("c", "a", 0, "10.0.0.1:10911", vec![tc("c", perm::INHERIT)], dv(1));
        let c = tables(vec![r]).view().write_census(10);
        assert_eq!(c.unwritable, 0, "{c:?}");
    }
}
