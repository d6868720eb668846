//! Invariant 7: publishing costs O(what changed). A registration that changes k topics (k = 1, 10, 100), then the
//! view and the `ArcSwap::store` the writer does, with 1k / 10k / 100k topics in the table: time must grow with k,
//! not with the table. And a 10k-topic re-registration with an unchanged and with a changed DataVersion. And the
//! cold load of a cluster whose brokers all carry the same topics: its cost must follow the topic-queue entries, not
//! entries × brokers per topic.

mod common;

use std::sync::Arc;

use arc_swap::ArcSwap;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use namesrv::model::{BodyMark, TopicConfig};
use namesrv::state::routes::RegisterBroker;
use namesrv::state::RouteTables;

/// Two registrations of the "hot" master that differ in DataVersion and in the perm of all their k topics, so
/// applying them alternately changes exactly k topics each time.
fn flip_pair(k: usize) -> [RegisterBroker; 2] {
    let names = || (0..k).map(common::topic_name);
    [
        common::registration("hot-cluster", "hot", common::topic_configs(names(), 6), 10),
        common::registration("hot-cluster", "hot", common::topic_configs(names(), 4), 11),
    ]
}

fn publish_k_of_n(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish_changed_k");
    for n in [1_000, 10_000, 100_000] {
        let mut tables = common::tables_with(n);
        for k in [1, 10, 100] {
            let pair = flip_pair(k);
            // A new broker's one-topic registration is refused (§5.3 step 7): introduce "hot" with two topics first.
            let intro =
                common::registration("hot-cluster", "hot", common::topic_configs((0..2).map(common::topic_name), 6), 9);
            tables.register_broker(intro, 0, common::settings()).expect("registered");
            tables.register_broker(pair[0].clone(), 0, common::settings()).expect("registered");
            let cell = ArcSwap::from_pointee(tables.view());
            let before = tables.generation();
            let mut i = 0;
            g.bench_with_input(BenchmarkId::new(format!("k={k}"), format!("n={n}")), &k, |b, _| {
                b.iter(|| {
                    i += 1;
                    apply_and_publish(&mut tables, pair[i % 2].clone(), &cell);
                })
            });
            // Every iteration really changed k topics (the first one may find one topic already flipped by the
            // previous k).
            // (`i` is 0 when a filter skipped this benchmark.)
            assert!(
                i == 0 || tables.generation() - before >= (i as u64 - 1) * k as u64,
                "k={k} n={n}: fewer changes than expected"
            );
        }
    }
    g.finish();
}

/// What the writer does per registration in a batch of one: apply, take the view, store it.
fn apply_and_publish(tables: &mut RouteTables, req: RegisterBroker, cell: &ArcSwap<namesrv::state::RouteView>) {
    let generation = tables.generation();
    black_box(tables.register_broker(req, 0, common::settings()));
    if tables.generation() != generation {
        cell.store(Arc::new(tables.view()));
    }
}

fn reregister_10k(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut g = c.benchmark_group("reregister_10k");
    g.sample_size(20);
    let topics = || common::topic_configs((0..N).map(common::topic_name), 6);
    let base = common::registration("c0", "broker-0", topics(), 1);
    let mut tables = RouteTables::new();
    tables.register_broker(base.clone(), 0, common::settings()).expect("registered");
    let cell = ArcSwap::from_pointee(tables.view());

    // The request clone is setup (the writer clones it too, see the README); dropping it is in the measurement.
    let gen = tables.generation();
    g.bench_function("unchanged_data_version", |b| {
        b.iter_batched(|| base.clone(), |req| apply_and_publish(&mut tables, req, &cell), BatchSize::LargeInput)
    });
    assert_eq!(tables.generation(), gen, "an unchanged re-registration must not change the view");

    let mut counter = 1;
    g.bench_function("changed_data_version_same_topics", |b| {
        b.iter_batched(
            || {
                counter += 1;
                let mut r = base.clone();
                r.body.data_version.counter = counter;
                r
            },
            |req| apply_and_publish(&mut tables, req, &cell),
            BatchSize::LargeInput,
        )
    });
    assert_eq!(tables.generation(), gen, "same topic configs: nothing visible changes");

    let flipped = common::registration("c0", "broker-0", common::topic_configs((0..N).map(common::topic_name), 4), 0);
    g.bench_function("changed_data_version_all_topics_changed", |b| {
        b.iter_batched(
            || {
                counter += 1;
                let mut r = if counter % 2 == 0 { flipped.clone() } else { base.clone() };
                r.body.data_version.counter = counter;
                r
            },
            |req| apply_and_publish(&mut tables, req, &cell),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("clone_request_only", |b| b.iter(|| black_box(base.clone())));

    // The writer's side of a recognised body (decision 0012): the request carries only its DataVersion. The mark
    // is opaque to the tables; the decoder's side (CRC + recognising 1.7 MB) is in `cargo bench --bench codec`.
    let mark = BodyMark { dv_start: 64, digest: 7 };
    let mut tables = RouteTables::new();
    tables.register_marked(&base, Some(mark), 513, 0, common::settings()).expect("registered");
    let gen = tables.generation();
    let lean = RegisterBroker { body: Default::default(), ..base.clone() };
    g.bench_function("same_body_new_data_version", |b| {
        b.iter_batched(
            || {
                counter += 1;
                let mut r = Box::new(lean.clone());
                r.body.data_version.counter = counter;
                r
            },
            |mut req| black_box(tables.register_same(&mut req, &mark, 513, 0, common::settings()).expect("recognised")),
            BatchSize::SmallInput,
        )
    });
    assert_eq!(tables.generation(), gen, "a recognised body changes nothing visible");
    g.finish();
}

/// A 10k-topic broker whose body changed since last time, as the decoder hands it over (marked, topics in name
/// order), alternating between two bodies at a new DataVersion each time: `k_changed` flips the perm of k topics
/// spread over the table; `topic_added` adds one topic in the middle. Only the changed topics' runs should cost
/// puts (`state::routes::chunks`); `all_put` is the same alternation with bodies in an order that has no runs.
fn reregister_10k_decoded(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut g = c.benchmark_group("reregister_10k_decoded");
    g.sample_size(20);
    let base = || common::topic_configs((0..N).map(common::topic_name), 6);
    let flipped = |k: usize| {
        let mut t = base();
        for i in 0..k {
            t[i * N / k].perm = 4;
        }
        t
    };
    let mut added = base();
    // Right after the name it extends, so the body stays in name order.
    added.insert(
        N / 2 + 1,
        TopicConfig { perm: 6, ..TopicConfig::with_defaults(format!("{}a", common::topic_name(N / 2))) },
    );
    let mut unordered = [base(), flipped(100)];
    for t in &mut unordered {
        t.reverse();
    }
    let [u0, u1] = unordered;
    let cases = [
        ("k_changed/1", base(), flipped(1)),
        ("k_changed/100", base(), flipped(100)),
        ("topic_added", base(), added),
        ("all_put/k_changed/100", u0, u1),
    ];
    for (label, a, b) in cases {
        let pair = [common::registration("c0", "broker-0", a, 1), common::registration("c0", "broker-0", b, 2)];
        let marks = [BodyMark { dv_start: 64, digest: 1 }, BodyMark { dv_start: 64, digest: 2 }];
        let mut tables = RouteTables::new();
        tables.register_marked(&pair[0], Some(marks[0]), 513, 0, common::settings()).expect("registered");
        let cell = ArcSwap::from_pointee(tables.view());
        let mut counter = 2;
        g.bench_function(label, |b| {
            b.iter_batched(
                || {
                    counter += 1;
                    let i = (counter % 2) as usize;
                    let mut r = pair[i].clone();
                    r.body.data_version.counter = counter;
                    (r, marks[i])
                },
                |(req, mark)| {
                    let generation = tables.generation();
                    black_box(tables.register_marked(&req, Some(mark), 513, 0, common::settings()));
                    if tables.generation() != generation {
                        cell.store(Arc::new(tables.view()));
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// All `brokers` masters of one cluster registering `topics` shared topics into empty tables, one publish after each
/// (the writer's worst case: a batch of one), with the previous view still held by a reader. Every shape is 100k
/// topic-queue entries, so the time per entry should not grow with the brokers per topic. `_as_sent`: the topics
/// in a Java broker's order, as they arrive.
fn cold_load(c: &mut Criterion) {
    let mut g = c.benchmark_group("cold_load_100k_entries");
    g.sample_size(10);
    // In name order, and once in the order a Java broker sends them (hash order), which costs the writer more.
    let shapes = [(10, 10_000, false), (50, 2_000, false), (100, 1_000, false), (200, 500, false), (10, 10_000, true)];
    for (brokers, topics, as_sent) in shapes {
        let names = (0..topics).map(common::topic_name);
        let configs = if as_sent { common::as_sent(names, 6) } else { common::topic_configs(names, 6) };
        let regs: Vec<RegisterBroker> = (0..brokers)
            .map(|b| {
                let dv = namesrv::model::DataVersion { counter: 1, state_version: 0, timestamp: 1 };
                let addr = format!("10.0.{}.{}:10911", b / 250, b % 250);
                RegisterBroker::new("c0", &format!("broker-{b:03}"), 0, &addr, configs.clone(), dv)
            })
            .collect();
        let order = if as_sent { "_as_sent" } else { "" };
        g.bench_function(format!("{brokers}x{topics}{order}"), |b| {
            b.iter_batched(
                || regs.clone(),
                |regs| {
                    let mut tables = RouteTables::new();
                    let cell = ArcSwap::from_pointee(tables.view());
                    for r in regs {
                        apply_and_publish(&mut tables, r, &cell);
                    }
                    assert_eq!(tables.view().queue_entry_count(), brokers * topics);
                    tables
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// One broker of a cluster whose `brokers` masters share 5k topics re-registers with every topic's perm flipped
/// (6 ↔ 4, as after a write-perm wipe), one publish after each. It changes 5k entries whatever the brokers per topic,
/// so the time should not grow with them.
fn perm_change(c: &mut Criterion) {
    const TOPICS: usize = 5_000;
    let mut g = c.benchmark_group("perm_change_5k_topics");
    g.sample_size(20);
    for brokers in [10, 200] {
        let configs = |perm| common::topic_configs((0..TOPICS).map(common::topic_name), perm);
        let dv = |counter| namesrv::model::DataVersion { counter, state_version: 0, timestamp: 1 };
        let reg = |b: usize, perm, counter| {
            let addr = format!("10.0.{}.{}:10911", b / 250, b % 250);
            RegisterBroker::new("c0", &format!("broker-{b:03}"), 0, &addr, configs(perm), dv(counter))
        };
        let mut tables = RouteTables::new();
        for b in 0..brokers {
            tables.register_broker(reg(b, 6, 1), 0, common::settings()).expect("registered");
        }
        let cell = ArcSwap::from_pointee(tables.view());
        let (read_write, read_only) = (reg(7, 6, 0), reg(7, 4, 0));
        let mut counter = 1;
        g.bench_function(format!("{brokers}_brokers"), |b| {
            b.iter_batched(
                || {
                    counter += 1;
                    let mut r = if counter % 2 == 0 { read_only.clone() } else { read_write.clone() };
                    r.body.data_version.counter = counter;
                    r
                },
                |req| apply_and_publish(&mut tables, req, &cell),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group! { name = benches; config = common::quick(); targets = publish_k_of_n, reregister_10k, reregister_10k_decoded, cold_load, perm_change }
criterion_main!(benches);
