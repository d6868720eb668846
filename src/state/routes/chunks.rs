//! Changed re-registrations that change few topics. A broker re-registers its whole topic table every 30 s; when
//! the table differs from last time (a perm flipped, a queue count raised, a topic added) the body is decoded, and
//! the DataVersion has changed, so Java re-puts every topic. Putting an equal queue changes nothing, but finding
//! that out costs a descent of the topic map per topic: for a body that changed one perm, the writer's time
//! grows with the whole table (perf/results/2026-12-06-numbers-from-comments.md).
//!
//! Instead the writer keeps, with the record of a broker's last applied body (`same`), a digest of each run of
//! topics of it. A run of the new body whose digest is among the last body's holds topics with the queues that
//! body gave them; if the name's epoch has not moved since (no queue filed under the name was put or removed, by
//! anyone) and the body is applied the same way, each of those topics still has exactly that queue, and putting it
//! again would change nothing: the run is skipped.
//!
//! Runs end after a topic whose name hashes to a multiple of `RUN` (so ~`RUN` topics long), not at fixed counts:
//! a topic added or removed then changes only the run it falls in, instead of shifting every run after it.
//!
//! Only for a body whose topics are in strictly increasing name order (the decoder sorts them, decision 0022):
//! then no name is sent twice, so the queue a topic was left with is the one its run holds, not a later duplicate's.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64};

use crate::model::{digest_seed, TopicConfig};

/// Mean topics per run: a 10k-topic body keeps ~600 digests (10 KB), and one changed topic costs ~16 puts.
/// Tests use 4, so that their small bodies span several runs.
#[cfg(not(test))]
const RUN: u64 = 16;
#[cfg(test)]
const RUN: u64 = 4;

/// A body's runs of topics: where each ends (exclusive) and its digest.
pub(super) struct Runs(Vec<(usize, u128)>);

impl Runs {
    /// `None` when the topics are not in strictly increasing name order.
    pub(super) fn of(topics: &[TopicConfig]) -> Option<Runs> {
        if topics.windows(2).any(|w| w[0].topic_name >= w[1].topic_name) {
            return None;
        }
        // The marks' seed, random per process (decision 0012): a run is only ever compared with the runs of the same
        // broker address's last body, kept in this process, so a crafted collision could at most keep that broker's
        // own earlier queues, which whoever may register the broker could register anyway.
        let seed = digest_seed();
        let mut runs = Vec::with_capacity(topics.len() / RUN as usize + 1);
        let mut bytes = Vec::with_capacity(64 * RUN as usize);
        for (i, t) in topics.iter().enumerate() {
            let name = t.topic_name.name().as_bytes();
            // The length first, so that no two runs of names and numbers encode to the same bytes.
            bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
            bytes.extend_from_slice(name);
            for n in [t.read_queue_nums, t.write_queue_nums, t.perm, t.topic_sys_flag] {
                bytes.extend_from_slice(&n.to_le_bytes());
            }
            if xxh3_64(name).is_multiple_of(RUN) || i + 1 == topics.len() {
                runs.push((i + 1, xxh3_128_with_seed(&bytes, seed)));
                bytes.clear();
            }
        }
        Some(Runs(runs))
    }

    /// The digests, sorted, to keep for the next body.
    pub(super) fn digests(&self) -> Vec<u128> {
        let mut d: Vec<u128> = self.0.iter().map(|r| r.1).collect();
        d.sort_unstable();
        d
    }

    /// Per topic, whether its run is among the `kept` digests of the last body (as `digests` returned them).
    pub(super) fn unchanged(&self, kept: &[u128]) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.0.last().map_or(0, |r| r.0));
        for &(end, digest) in &self.0 {
            let same = kept.binary_search(&digest).is_ok();
            out.resize(end, same);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::TopicKey;

    fn topic(name: &str, perm: i32) -> TopicConfig {
        TopicConfig {
            topic_name: TopicKey::new(Arc::from(name)),
            read_queue_nums: 8,
            write_queue_nums: 8,
            perm,
            topic_sys_flag: 0,
        }
    }

    fn sorted(n: usize) -> Vec<TopicConfig> {
        let mut v: Vec<_> = (0..n).map(|i| topic(&format!("topic-{i:05}"), 6)).collect();
        v.sort_by(|a, b| a.topic_name.cmp(&b.topic_name));
        v
    }

    /// The topics of `body` that are not skipped against `last`, as index ranges.
    fn put(body: &[TopicConfig], last: &[TopicConfig]) -> Vec<std::ops::Range<usize>> {
        let skip = Runs::of(body).unwrap().unchanged(&Runs::of(last).unwrap().digests());
        assert_eq!(skip.len(), body.len());
        let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
        for i in (0..body.len()).filter(|&i| !skip[i]) {
            match ranges.last_mut() {
                Some(r) if r.end == i => r.end += 1,
                _ => ranges.push(i..i + 1),
            }
        }
        ranges
    }

    #[test]
    fn the_same_body_skips_everything_and_a_changed_queue_only_its_run() {
        let last = sorted(200);
        assert!(Runs::of(&last).unwrap().0.len() > 10, "runs of ~{RUN}");
        assert!(put(&last, &last).is_empty());
        for field in 0..4 {
            let mut body = sorted(200);
            let t = &mut body[120];
            match field {
                0 => t.read_queue_nums = 9,
                1 => t.write_queue_nums = 9,
                2 => t.perm = 4,
                _ => t.topic_sys_flag = 1,
            }
            let ranges = put(&body, &last);
            assert_eq!(ranges.len(), 1, "field {field}: {ranges:?}");
            assert!(ranges[0].contains(&120) && ranges[0].len() < 40, "field {field}: {ranges:?}");
        }
    }

    #[test]
    fn an_added_or_removed_topic_changes_only_the_run_it_falls_in() {
        let last = sorted(200);
        let mut added = sorted(200);
        added.insert(101, topic(&format!("{}a", added[100].topic_name.name()), 6));
        let ranges = put(&added, &last);
        assert!(ranges.len() == 1 && ranges[0].contains(&101) && ranges[0].len() < 40, "{ranges:?}");
        let mut removed = sorted(200);
        removed.remove(100);
        let ranges = put(&removed, &last);
        assert!(ranges.len() <= 1 && ranges.iter().all(|r| r.len() < 40), "{ranges:?}");
    }

    #[test]
    fn a_body_out_of_order_or_with_a_name_twice_has_no_runs() {
        let mut body = sorted(10);
        body.swap(3, 4);
        assert!(Runs::of(&body).is_none());
        let mut body = sorted(10);
        let name = body[3].topic_name.name().clone();
        body[4] = topic(&name, 2);
        assert!(Runs::of(&body).is_none());
        assert_eq!(Runs::of(&[]).unwrap().unchanged(&[]), Vec::<bool>::new());
    }
}
