//! Encoded GET_ROUTEINFO_BY_TOPIC bodies, kept per reactor across snapshots.
//!
//! Building and encoding a route is most of the cost of the hottest request, and routes change rarely. Each reactor
//! keeps the encoded body per topic and dialect with the `RouteStamp` it was built from; a later request reuses it
//! while `RouteView::stamp_matches` holds, so a publish that changes k topics invalidates exactly those k (plus the
//! topics of a changed BrokerData), never the whole cache. The cache is per reactor (no locks, no sharing) and
//! bounded in bytes, each shared body counted once (`Ledger`); past the bound, arbitrary entries are dropped.
//!
//! A route does not name its topic, and the topics a cluster's brokers all carry have the same route. So the cache
//! also keeps one body per route kin (`RouteKin`): a topic it has no entry for takes its kin's body when
//! `RouteView::stamp_like` says that body is the topic's route now, without building it. In a big cluster, where
//! queries spread over more topics than the cache holds, that is most misses: a lookup and a few pointer compares
//! instead of building and encoding a route of every broker. The topic then keeps an entry of its own holding the
//! same body, which costs the cache its key and bookkeeping only, so the cache holds many more topics than bodies.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::config::Config;
use crate::protocol::json::Dialect;
use crate::state::routes::{RouteKin, RouteStamp};
use crate::state::RouteView;

/// Bookkeeping per entry beyond its key and the shared parts it holds (stamp, map slot), for the byte bound.
const ENTRY_OVERHEAD: usize = 160;

pub struct RouteCache {
    /// Per topic. A body taken from `kin` is the same allocation as the kin's.
    entries: HashMap<Arc<str>, Cached, ahash::RandomState>,
    /// Per route kin: the stamp of the topic whose route was built, and its bodies (`checked` unused: every use
    /// checks the stamp against the topic's entry, `stamp_like`).
    kin: HashMap<RouteKin, Cached, ahash::RandomState>,
    ledger: Ledger,
    budget: usize,
    /// The config the bodies were built under (support_acting_master shapes routes); a new one empties the cache.
    config: Option<Arc<Config>>,
}

struct Cached {
    stamp: RouteStamp,
    /// The snapshot generation the stamp was last found valid in: within one snapshot nothing changes, so only
    /// the first request per topic after a publish pays for `stamp_matches`.
    checked: u64,
    /// Indexed by `dialect_index`.
    bodies: [Option<Bytes>; 2],
}

fn dialect_index(d: Dialect) -> usize {
    match d {
        Dialect::Default => 0,
        Dialect::Standard => 1,
    }
}

impl RouteCache {
    /// `budget` bytes of bodies and bookkeeping; 0 turns caching off.
    pub fn new(budget: usize) -> RouteCache {
        RouteCache {
            entries: HashMap::default(),
            kin: HashMap::default(),
            ledger: Ledger::default(),
            budget,
            config: None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.ledger.bytes
    }

    /// The body of `topic`'s route in `dialect`: cached if still valid, else built by `build` from `view` (None =
    /// no route; else the body and the stamp of the route it encodes, `RouteView::route_stamped`) and cached.
    /// `generation` identifies the snapshot `view` belongs to.
    pub fn body(
        &mut self,
        generation: u64,
        view: &RouteView,
        config: &Arc<Config>,
        topic: &str,
        dialect: Dialect,
        build: impl FnOnce() -> Option<(Bytes, RouteStamp)>,
    ) -> Option<Bytes> {
        if self.budget == 0 {
            return build().map(|(body, _)| body);
        }
        if !self.config.as_ref().is_some_and(|c| Arc::ptr_eq(c, config)) {
            self.clear();
            self.config = Some(config.clone());
        }
        let d = dialect_index(dialect);
        let acting = config.support_acting_master;
        if let Some(c) = self.entries.get_mut(topic) {
            if c.checked == generation || view.stamp_matches(topic, &c.stamp) {
                c.checked = generation;
                if let Some(b) = &c.bodies[d] {
                    return Some(b.clone());
                }
                let (body, _) = self.made(generation, view, topic, acting, d, build)?;
                if let Some(c) = self.entries.get_mut(topic).filter(|c| c.bodies[d].is_none()) {
                    self.ledger.hold(body_part(&body));
                    c.bodies[d] = Some(body.clone());
                }
                self.trim();
                return Some(body);
            }
            self.remove(topic);
        }
        let (body, stamp) = self.made(generation, view, topic, acting, d, build)?;
        let mut bodies = [None, None];
        bodies[d] = Some(body.clone());
        let c = Cached { stamp, checked: generation, bodies };
        self.ledger.add(topic.len(), &c);
        self.entries.insert(Arc::from(topic), c);
        self.trim();
        Some(body)
    }

    /// `topic`'s body in dialect `d` and its stamp, from its kin's entry when that holds `topic`'s route, else
    /// built (and kept as its kin's, if it has one).
    fn made(
        &mut self,
        generation: u64,
        view: &RouteView,
        topic: &str,
        acting: bool,
        d: usize,
        build: impl FnOnce() -> Option<(Bytes, RouteStamp)>,
    ) -> Option<(Bytes, RouteStamp)> {
        match self.kin_has(view, topic, acting, d) {
            FromKin::Body(body, stamp) => Some((body, stamp)),
            FromKin::NoBody(stamp) => {
                let (body, _) = build()?;
                let kin = stamp.kin(topic, acting).and_then(|k| self.kin.get_mut(&k));
                if let Some(c) = kin.filter(|c| c.bodies[d].is_none()) {
                    self.ledger.hold(body_part(&body));
                    c.bodies[d] = Some(body.clone());
                }
                Some((body, stamp))
            }
            FromKin::None => {
                // The stamp comes from the same immutable view as the body, so a kept body is never older than its
                // stamp.
                let (body, stamp) = build()?;
                if let Some(k) = stamp.kin(topic, acting) {
                    let mut bodies = [None, None];
                    bodies[d] = Some(body.clone());
                    let c = Cached { stamp: stamp.clone(), checked: generation, bodies };
                    self.ledger.add(0, &c);
                    if let Some(old) = self.kin.insert(k, c) {
                        self.ledger.drop(0, &old);
                    }
                }
                Some((body, stamp))
            }
        }
    }

    /// `topic`'s stamp taken from its kin's entry, when that entry's route is `topic`'s now (`stamp_like`), with
    /// the kin's body in dialect `d` if there is one.
    fn kin_has(&self, view: &RouteView, topic: &str, acting: bool, d: usize) -> FromKin {
        let mut kin = None;
        let Some(stamp) = view.stamp_like(topic, acting, |k| {
            kin = Some(k);
            self.kin.get(&k).map(|c| &c.stamp)
        }) else {
            return FromKin::None;
        };
        let c = kin.and_then(|k| self.kin.get(&k)).expect("stamp_like took the kin's stamp");
        match &c.bodies[d] {
            Some(body) => FromKin::Body(body.clone(), stamp),
            None => FromKin::NoBody(stamp),
        }
    }

    fn remove(&mut self, topic: &str) {
        if let Some((k, c)) = self.entries.remove_entry(topic) {
            self.ledger.drop(k.len(), &c);
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.kin.clear();
        self.ledger = Ledger::default();
    }

    /// Drops entries (in hash order, i.e. arbitrary ones) until a quarter of the budget is free, so a working set
    /// larger than the budget costs one trim per many inserts, not one per insert.
    fn trim(&mut self) {
        if self.ledger.bytes <= self.budget {
            return;
        }
        let target = self.budget / 4 * 3;
        let ledger = &mut self.ledger;
        self.entries.retain(|k, c| {
            if ledger.bytes <= target {
                return true;
            }
            ledger.drop(k.len(), c);
            false
        });
        // Topics whose kin is kept cost little to ask again; the kin's entries go only when that was not enough.
        self.kin.retain(|_, c| {
            if ledger.bytes <= target {
                return true;
            }
            ledger.drop(0, c);
            false
        });
    }
}

/// The cache's byte count: per entry, `ENTRY_OVERHEAD` and its key; and each allocation entries share (a kin's
/// body, a kin's broker list) once, however many entries hold it, for as long as one does. Allocations are told
/// apart by address, which cannot be reused while an entry holds them.
#[derive(Default)]
struct Ledger {
    bytes: usize,
    /// Address → (entries holding it, its size).
    held: HashMap<usize, (usize, usize), ahash::RandomState>,
}

impl Ledger {
    /// An entry with a key of `key_len` bytes (0 for a kin's), and the parts it holds.
    fn add(&mut self, key_len: usize, c: &Cached) {
        self.bytes += ENTRY_OVERHEAD + key_len;
        for part in parts(c) {
            self.hold(part);
        }
    }

    fn drop(&mut self, key_len: usize, c: &Cached) {
        self.bytes -= ENTRY_OVERHEAD + key_len;
        for part in parts(c) {
            self.release(part);
        }
    }

    fn hold(&mut self, (addr, len): (usize, usize)) {
        if len == 0 {
            return;
        }
        let held = self.held.entry(addr).or_insert((0, len));
        if held.0 == 0 {
            self.bytes += len;
        }
        held.0 += 1;
    }

    fn release(&mut self, (addr, len): (usize, usize)) {
        if len == 0 {
            return;
        }
        let Some(held) = self.held.get_mut(&addr) else {
            debug_assert!(false, "released an allocation never held");
            return;
        };
        held.0 -= 1;
        if held.0 == 0 {
            self.bytes -= held.1;
            self.held.remove(&addr);
        }
    }
}

/// The shared allocations an entry holds, as (address, size).
fn parts(c: &Cached) -> impl Iterator<Item = (usize, usize)> + '_ {
    c.bodies.iter().flatten().map(body_part).chain(std::iter::once(c.stamp.shared_brokers()))
}

fn body_part(b: &Bytes) -> (usize, usize) {
    (b.as_ptr() as usize, b.len())
}

/// What a topic's kin has for it (`RouteCache::kin_has`).
enum FromKin {
    /// The body in the dialect asked for, and the topic's stamp.
    Body(Bytes, RouteStamp),
    /// The topic's stamp; the body in that dialect is still to be built.
    NoBody(RouteStamp),
    None,
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::state::routes::test_util::{reg, S};
    use crate::state::RouteTables;

    /// Asks the cache for `topic` and reports whether it had to encode.
    fn ask(cache: &mut RouteCache, t: &RouteTables, config: &Arc<Config>, topic: &str, d: Dialect) -> (bool, Bytes) {
        let built = Cell::new(false);
        let view = t.view();
        let body = cache
            .body(t.generation(), &view, config, topic, d, || {
                built.set(true);
                let (r, stamp) = view.route_stamped(topic, config.support_acting_master)?;
                let mut out = Vec::new();
                crate::protocol::body::encode_topic_route(&r, d, &mut out);
                Some((Bytes::from(out), stamp))
            })
            .unwrap();
        (built.get(), body)
    }

    /// The byte count recomputed from the entries: each distinct shared allocation once.
    fn recount(cache: &RouteCache) -> usize {
        let mut seen = std::collections::HashSet::new();
        let topics = cache.entries.iter().map(|(k, c)| (k.len(), c));
        let all = topics.chain(cache.kin.values().map(|c| (0, c)));
        all.map(|(key, c)| ENTRY_OVERHEAD + key + parts(c).filter(|p| seen.insert(*p)).map(|p| p.1).sum::<usize>())
            .sum()
    }

    fn fresh(t: &RouteTables, topic: &str, d: Dialect) -> Bytes {
        let mut out = Vec::new();
        crate::protocol::body::encode_topic_route(&t.view().route(topic, false).unwrap(), d, &mut out);
        Bytes::from(out)
    }

    #[test]
    fn a_change_rebuilds_only_the_routes_it_touches() {
        let config = Arc::new(Config::default());
        let mut t = RouteTables::new();
        t.register_broker(reg("c", "a", 0, "A:1", &["T", "U"], 1), 0, S);
        t.register_broker(reg("c", "b", 0, "B:1", &["V", "W"], 1), 0, S);
        let mut cache = RouteCache::new(1 << 20);
        // U has T's route (the same broker, the same queue): it takes T's body.
        for (topic, builds) in [("T", true), ("U", false), ("V", true)] {
            let (built, body) = ask(&mut cache, &t, &config, topic, Dialect::Default);
            assert_eq!((built, body), (builds, fresh(&t, topic, Dialect::Default)), "first ask of {topic}");
            assert!(!ask(&mut cache, &t, &config, topic, Dialect::Default).0, "second ask of {topic} is cached");
        }
        // The other dialect is built once too.
        assert!(ask(&mut cache, &t, &config, "T", Dialect::Standard).0);
        assert!(!ask(&mut cache, &t, &config, "T", Dialect::Standard).0);
        // Broker b now also hosts T: T's entry changes; U's and V's do not.
        t.register_broker(reg("c", "b", 0, "B:1", &["T", "V", "W"], 2), 0, S);
        let (built, body) = ask(&mut cache, &t, &config, "T", Dialect::Default);
        assert!(built);
        assert_eq!(body, fresh(&t, "T", Dialect::Default));
        assert!(!ask(&mut cache, &t, &config, "U", Dialect::Default).0);
        assert!(!ask(&mut cache, &t, &config, "V", Dialect::Default).0);
        // A new address for broker a (its BrokerData changes) invalidates every topic of a, and only those.
        t.register_broker(reg("c", "a", 1, "A:2", &["T", "U"], 1), 0, S);
        for (topic, rebuilt) in [("T", true), ("U", true), ("V", false)] {
            let (built, body) = ask(&mut cache, &t, &config, topic, Dialect::Default);
            assert_eq!(built, rebuilt, "{topic}");
            assert_eq!(body, fresh(&t, topic, Dialect::Default), "{topic}");
        }
        // A deleted topic is not served from the cache.
        t.delete_topic("U", None);
        let view = t.view();
        assert!(cache.body(t.generation(), &view, &config, "U", Dialect::Default, || None).is_none());
    }

    #[test]
    fn the_topics_of_one_kin_build_their_route_once() {
        let topics: Vec<String> = (0..50).map(|i| format!("topic-{i}")).collect();
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let mut t = RouteTables::new();
        t.register_broker(reg("c", "a", 0, "A:1", &names, 1), 0, S);
        t.register_broker(reg("c", "b", 0, "B:1", &names, 1), 0, S);
        let config = Arc::new(Config::default());
        let mut cache = RouteCache::new(1 << 20);
        let ask_all = |cache: &mut RouteCache, t: &RouteTables, d: Dialect| {
            let mut builds = 0;
            for topic in &names {
                let (built, body) = ask(cache, t, &config, topic, d);
                assert_eq!(body, fresh(t, topic, d), "{topic}");
                assert_eq!(cache.bytes(), recount(cache), "after {topic}");
                builds += built as usize;
            }
            builds
        };
        assert_eq!(ask_all(&mut cache, &t, Dialect::Default), 1);
        // One body, and per topic its key and bookkeeping: the body is not counted again for every topic.
        let body = fresh(&t, "topic-0", Dialect::Default).len();
        let per_topic: usize = names.iter().map(|n| ENTRY_OVERHEAD + n.len()).sum();
        let brokers = cache.kin.values().next().unwrap().stamp.shared_brokers().1;
        assert_eq!(cache.bytes(), per_topic + ENTRY_OVERHEAD + body + brokers);
        assert_eq!(ask_all(&mut cache, &t, Dialect::Standard), 1, "the other dialect once");
        assert_eq!(ask_all(&mut cache, &t, Dialect::Default), 0);
        // A new address for b: every route changes, and is built once again.
        t.register_broker(reg("c", "b", 1, "B:2", &names, 1), 0, S);
        assert_eq!(ask_all(&mut cache, &t, Dialect::Default), 1);
        assert_eq!(ask_all(&mut cache, &t, Dialect::Standard), 1);
        // A topic that leaves the kin builds its own route; the others keep theirs.
        let mut fewer = reg("c", "a", 0, "A:1", &names, 2);
        fewer.body.topic_configs[7].perm = 4;
        t.register_broker(fewer, 0, S);
        assert_eq!(ask_all(&mut cache, &t, Dialect::Default), 1, "topic-7 alone");
    }

    #[test]
    fn a_new_config_empties_the_cache() {
        let mut t = RouteTables::new();
        t.register_broker(reg("c", "a", 0, "A:1", &["T", "U"], 1), 0, S);
        let mut cache = RouteCache::new(1 << 20);
        let config = Arc::new(Config::default());
        ask(&mut cache, &t, &config, "T", Dialect::Default);
        assert!(!ask(&mut cache, &t, &config, "T", Dialect::Default).0);
        let other = Arc::new(Config::default());
        assert!(ask(&mut cache, &t, &other, "T", Dialect::Default).0);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_zero_turns_it_off() {
        let topics: Vec<String> = (0..500).map(|i| format!("topic-{i}")).collect();
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let mut t = RouteTables::new();
        // 50 kin of 10 topics each: trimming drops topics' entries, kin entries and shared bodies.
        let mut r = reg("c", "a", 0, "A:1", &names, 1);
        for (i, tc) in r.body.topic_configs.iter_mut().enumerate() {
            tc.read_queue_nums = 1 + (i % 50) as i32;
        }
        t.register_broker(r, 0, S);
        let config = Arc::new(Config::default());
        let budget = 16 * 1024;
        let mut cache = RouteCache::new(budget);
        for topic in &names {
            let (_, body) = ask(&mut cache, &t, &config, topic, Dialect::Default);
            assert_eq!(body, fresh(&t, topic, Dialect::Default));
            assert!(cache.bytes() <= budget, "{} bytes cached", cache.bytes());
            assert_eq!(cache.bytes(), recount(&cache), "after {topic}");
        }
        // Which entries a trim keeps depends on hash order: when the kin's own entries fill most of the budget, a
        // trim may drop every topic's entry and keep only kin (which answer the next asks without a build).
        assert!(cache.len() < names.len());
        assert!(!cache.is_empty() || !cache.kin.is_empty(), "a trim keeps what fits");
        let mut off = RouteCache::new(0);
        assert!(ask(&mut off, &t, &config, "topic-1", Dialect::Default).0);
        assert!(ask(&mut off, &t, &config, "topic-1", Dialect::Default).0);
        assert!(off.is_empty());
    }
}
