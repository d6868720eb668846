//! GET_ROUTEINFO_BY_TOPIC's work without the socket: one snapshot load, the route build and the body encode, in both
//! JSON dialects; idle, and while a writer thread publishes a new view continuously. `route_cached_*` is what a
//! reactor does: the encoded body from its route cache, rebuilt only when the route's stamp no longer matches.
//! `lookup_big_cluster` asks over more topics than the cache holds, as in `namesrv-perf big-cluster`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use namesrv::handlers::route_cache::RouteCache;
use namesrv::protocol::body;
use namesrv::protocol::json::Dialect;
use namesrv::state::RouteView;

/// 10k topics, each hosted by the 8 masters of one cluster (a route with 8 groups, ~1.3 KB).
const TOPICS: usize = 10_000;
const BROKERS: usize = 8;
/// The big routes: 1,000 topics on 30 masters.
const BIG_TOPICS: usize = 1_000;
const BIG_BROKERS: usize = 30;
/// Topics a churning registration changes each time.
const CHURN_TOPICS: usize = 100;

/// What the writer publishes, as far as route lookups care: the view and its snapshot generation.
struct Published {
    generation: u64,
    view: RouteView,
}

fn lookups(c: &mut Criterion, g_name: &str, cell: &ArcSwap<Published>) {
    lookups_of(c, g_name, cell, TOPICS)
}

fn lookups_of(c: &mut Criterion, g_name: &str, cell: &ArcSwap<Published>, topic_count: usize) {
    let mut g = c.benchmark_group(g_name);
    g.throughput(Throughput::Elements(1));
    let topics: Vec<String> = (0..topic_count).step_by(97).map(common::topic_name).collect();
    let mut i = 0usize;
    let mut next = move || {
        i = (i + 1) % topics.len();
        topics[i].clone()
    };
    g.bench_function("route", |b| {
        b.iter(|| {
            let t = next();
            let p = cell.load();
            black_box(p.view.route(&t, false).expect("route"))
        })
    });
    let mut out = Vec::with_capacity(4096);
    for (d_name, dialect) in [("default", Dialect::Default), ("standard", Dialect::Standard)] {
        g.bench_function(format!("route_encode_{d_name}"), |b| {
            b.iter(|| {
                let t = next();
                let p = cell.load();
                let route = p.view.route(&t, false).expect("route");
                out.clear();
                body::encode_topic_route(&route, dialect, &mut out);
                black_box(out.len())
            })
        });
    }
    let config = Arc::new(namesrv::config::Config::default());
    for (d_name, dialect) in [("default", Dialect::Default), ("standard", Dialect::Standard)] {
        let mut cache = RouteCache::new(64 << 20);
        g.bench_function(format!("route_cached_{d_name}"), |b| {
            b.iter(|| {
                let t = next();
                let p = cell.load();
                let body = cache.body(p.generation, &p.view, &config, &t, dialect, || {
                    let (route, stamp) = p.view.route_stamped(&t, false)?;
                    let mut out = Vec::new();
                    body::encode_topic_route(&route, dialect, &mut out);
                    Some((bytes::Bytes::from(out), stamp))
                });
                black_box(body.expect("route").len())
            })
        });
    }
    g.finish();
}

fn idle(c: &mut Criterion) {
    let tables = common::tables_shared(TOPICS, BROKERS);
    let cell = ArcSwap::from_pointee(Published { generation: 0, view: tables.view() });
    lookups(c, "lookup_idle", &cell);
}

/// The big-cluster scenario's routes: each topic on 30 masters of one cluster (~7 KB of JSON), as `namesrv-perf
/// big-cluster` queries them, where nearly every query misses the route cache.
fn idle_big_routes(c: &mut Criterion) {
    let tables = common::tables_shared(BIG_TOPICS, BIG_BROKERS);
    let cell = ArcSwap::from_pointee(Published { generation: 0, view: tables.view() });
    lookups_of(c, "lookup_idle_30_brokers", &cell, BIG_TOPICS);
}

/// The whole big-cluster scenario as one reactor sees it: 10 clusters × 30 masters × 10k topics (3M topic-queue
/// entries), queried in a fixed pseudo-random order over all 100k topics through a route cache of the default
/// `routeCacheBytes` (16 MiB), which holds a few thousand of these routes: most asks miss, and take their body from
/// the topic's route kin (`RouteView::stamp_like`) instead of building it.
fn big_cluster_through_the_cache(c: &mut Criterion) {
    let (tables, topics) = big_cluster();
    let view = tables.view();
    let config = Arc::new(namesrv::config::Config::default());
    let mut cache = RouteCache::new(16 << 20);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut g = c.benchmark_group("lookup_big_cluster");
    g.throughput(Throughput::Elements(1));
    g.bench_function("route_cached_default_100k_topics", |b| {
        b.iter(|| {
            // xorshift: the same order every run, spread over every topic.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = &topics[(x % topics.len() as u64) as usize];
            let body = cache.body(tables.generation(), &view, &config, t, Dialect::Default, || {
                let (route, stamp) = view.route_stamped(t, false)?;
                let mut out = Vec::new();
                body::encode_topic_route(&route, Dialect::Default, &mut out);
                Some((bytes::Bytes::from(out), stamp))
            });
            black_box(body.expect("route").len())
        })
    });
    g.finish();
    eprintln!("route cache after lookup_big_cluster: {} topics, {} bytes", cache.len(), cache.bytes());
}

fn under_publishing(c: &mut Criterion) {
    let mut tables = common::tables_shared(TOPICS, BROKERS);
    let cell = Arc::new(ArcSwap::from_pointee(Published { generation: 0, view: tables.view() }));
    let stop = Arc::new(AtomicBool::new(false));
    let publishes = Arc::new(AtomicU64::new(0));
    let writer = {
        let (cell, stop, publishes) = (cell.clone(), stop.clone(), publishes.clone());
        std::thread::Builder::new()
            .name("bench-writer".into())
            .spawn(move || {
                // broker-0 flips the perm of CHURN_TOPICS topics with a new DataVersion each time.
                let names: Vec<String> = (0..CHURN_TOPICS).map(|i| common::topic_name(i * 37 % TOPICS)).collect();
                let mut counter = 2;
                while !stop.load(Ordering::Relaxed) {
                    let perm = if counter % 2 == 0 { 4 } else { 6 };
                    let req =
                        common::registration("c0", "broker-0", common::topic_configs(names.clone(), perm), counter);
                    tables.register_broker(req, counter, common::settings()).expect("registered");
                    cell.store(Arc::new(Published { generation: counter as u64, view: tables.view() }));
                    publishes.fetch_add(1, Ordering::Relaxed);
                    counter += 1;
                }
            })
            .expect("spawn writer")
    };
    lookups(c, "lookup_while_publishing", &cell);
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    eprintln!("writer thread published {} views during lookup_while_publishing", publishes.load(Ordering::Relaxed));
}

/// The big cluster of `big_cluster_through_the_cache`, and its topic names.
fn big_cluster() -> (namesrv::state::RouteTables, Vec<String>) {
    let mut tables = namesrv::state::RouteTables::new();
    let mut topics = Vec::new();
    for cluster in 0..10 {
        let names: Vec<String> = (0..10_000).map(|i| format!("perf-c{cluster}-{i:06}")).collect();
        for b in 0..BIG_BROKERS {
            let configs = common::as_sent(names.iter().cloned(), 6);
            let req = common::registration(&format!("perf-c{cluster}"), &format!("perf-c{cluster}-b{b}"), configs, 1);
            tables.register_broker(req, 0, common::settings()).expect("registered");
        }
        topics.extend(names);
    }
    (tables, topics)
}

/// The health verdicts of the big cluster (100k topics, 3M queue entries): what one `/api/health` poll or one
/// `/metrics` scrape costs the HTTP thread. The write census walks every topic; the rest is per broker.
fn health_of_the_big_cluster(c: &mut Criterion) {
    let (tables, _) = big_cluster();
    let view = tables.view();
    let mut g = c.benchmark_group("health");
    g.bench_function("verdicts_100k_topics_300_groups", |b| {
        b.iter(|| {
            let census = view.write_census(namesrv::health::TOPIC_SAMPLE);
            let h = namesrv::health::verdicts(&namesrv::health::Inputs {
                census: &census,
                view: &view,
                support_acting_master: false,
                live: &[],
                removed: &[],
                fleet: &[],
                now_ms: 0,
                loss_window_ms: 600_000,
            });
            black_box(h.verdicts.len())
        })
    });
    g.finish();
}

criterion_group! { name = benches; config = common::quick(); targets = idle, idle_big_routes, big_cluster_through_the_cache, under_publishing, health_of_the_big_cluster }
criterion_main!(benches);
