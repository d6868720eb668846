//! The writer thread: the only code that mutates routing state, KV and runtime config.
//!
//! Loop: wait for a command, a connection event or the expiry tick → drain a batch → apply each → make KV/config
//! changes durable → publish one new `Snapshot` if anything visible changed → send the replies and wake each
//! reactor once. So a reply never overtakes its publish (invariant 1), and a heartbeat or an unchanged
//! re-registration publishes nothing.
//!
//! Must never: block on a reactor (inboxes are unbounded, wakes are coalesced), or read a socket.

mod bootstrap;
mod changes;
mod publish;
mod signers;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use crossbeam_channel::{select, Receiver, Sender};
use tracing::{debug, warn};

use crate::clock::Clock;
use crate::config::Config;
use crate::feed::{Change, Feed};
use crate::metrics::WriterMetrics;
use crate::model::TopicConfig;
use crate::persist;
use crate::state::routes::{EvictionCause, RegisterBroker, RegisterOutcome, RouteSettings};
use crate::state::{KvTable, RouteTables, Snapshot};
use crate::write_command::{
    Completion, ConnEvent, LiveAnswer, LiveQuery, LiveRow, Origin, Outcome, ReactorLink, RegisterBody, Removal,
    WriteCommand, WriteOp,
};
use std::sync::atomic::Ordering::{Relaxed, Release};

/// Most commands applied before one publish; bounds the reply latency of the first command in a batch.
const MAX_BATCH: usize = 1024;

/// Channels the writer listens on.
pub(crate) struct WriterInputs {
    pub commands: Receiver<Box<WriteCommand>>,
    pub events: Receiver<ConnEvent>,
    pub stop: Receiver<()>,
    /// The HTTP endpoint's questions about the live table (never closed while the writer runs).
    pub live_queries: Receiver<LiveQuery>,
    /// A peer's route table for an empty server (`fleet::bootstrap`); closed once the bootstrap is over.
    pub imports: Receiver<crate::fleet::bootstrap::Import>,
}

/// The writer's state; `run` consumes it on its own thread.
pub(crate) struct Writer {
    tables: RouteTables,
    kv: KvTable,
    config: Arc<Config>,
    cell: Arc<ArcSwap<Snapshot>>,
    generation: u64,
    published_routes: u64,
    reactors: Vec<ReactorLink>,
    clock: Arc<dyn Clock>,
    metrics: Arc<WriterMetrics>,
    /// Brokers restored by a warm restart that have not re-registered yet: (cluster, address).
    provisional: std::collections::HashSet<(String, String)>,
    /// Registrations of the current batch applied without decoding their body; counted after the publish, as
    /// `WriterMetrics::registrations` is.
    same_bodies: u64,
    last_route_save: Instant,
    /// `writerQueueBytes`: given back as each command is taken from the queue.
    queue_bytes: Arc<crate::limit::ByteBudget>,
    /// The periodic route save still running, if any.
    route_save: Option<std::thread::JoinHandle<()>>,
    /// Per reactor: completions of the current batch.
    outbox: Vec<Vec<Completion>>,
    /// The change feed, and the current batch's changes (appended after the publish).
    feed: Arc<Feed>,
    changes: Vec<Change>,
    /// To the decoder thread: applied bodies' topics, for it to drop (`give_back`).
    spent: Option<Sender<Vec<TopicConfig>>>,
    /// The last `REMOVALS_KEPT` brokers that left the tables, oldest first: the health verdicts' "lost lately".
    removals: std::collections::VecDeque<Removal>,
    /// ACL 2.0: the brokers registered signed with the inner credential, published in the snapshot.
    signers: signers::Signers,
}

/// How many removed brokers the writer remembers for the health verdicts: enough for a whole cluster going at once
/// in any real deployment, and a fixed few KiB whatever happens.
const REMOVALS_KEPT: usize = 256;

/// Changes made by one batch that need durability or a publish.
#[derive(Default)]
struct Dirty {
    kv: bool,
    config: bool,
    signers: bool,
}

impl Writer {
    pub(crate) fn new(
        kv: KvTable,
        config: Arc<Config>,
        cell: Arc<ArcSwap<Snapshot>>,
        reactors: Vec<ReactorLink>,
        clock: Arc<dyn Clock>,
        metrics: Arc<WriterMetrics>,
    ) -> Writer {
        let tables = RouteTables::new();
        let published_routes = tables.generation();
        let generation = cell.load().generation;
        let (outbox, signers) = (reactors.iter().map(|_| Vec::new()).collect(), signers::Signers::new(&config));
        // Temp files that an earlier process's unfinished saves left next to the files this writer replaces go
        // before its first save (the KV file's go when it is loaded: `persist::load_kv`).
        persist::remove_stale_temps(std::path::Path::new(&config.config_store_path));
        if let Some(routes) = Some(config.route_snapshot_path.trim()).filter(|p| !p.is_empty()) {
            persist::remove_stale_temps(std::path::Path::new(routes));
        }
        Writer {
            tables,
            kv,
            config,
            cell,
            generation,
            published_routes,
            reactors,
            clock,
            metrics,
            provisional: Default::default(),
            removals: Default::default(),
            same_bodies: 0,
            last_route_save: Instant::now(),
            route_save: None,
            queue_bytes: Default::default(),
            outbox,
            feed: Arc::new(Feed::new(0, 0)),
            changes: Vec::new(),
            spent: None,
            signers,
        }
    }

    /// Where applied bodies decoded by the decoder thread go back to it (`give_back`).
    pub(crate) fn with_spent(mut self, to_decoder: Sender<Vec<TopicConfig>>) -> Writer {
        self.spent = Some(to_decoder);
        self
    }

    /// The byte budget of the queue this writer drains (the reactors take from it).
    pub(crate) fn with_queue_bytes(mut self, budget: Arc<crate::limit::ByteBudget>) -> Writer {
        self.queue_bytes = budget;
        self
    }

    /// The first snapshot, before any thread runs.
    pub(crate) fn initial_snapshot(kv: KvTable, config: Arc<Config>) -> Snapshot {
        Snapshot::new(0, RouteTables::new().view(), Arc::new(kv), config)
    }

    fn settings(&self) -> RouteSettings {
        RouteSettings {
            delete_topic_with_broker_registration: self.config.delete_topic_with_broker_registration,
            notify_min_broker_id_changed: self.config.notify_min_broker_id_changed,
        }
    }

    pub(crate) fn run(mut self, inputs: WriterInputs) {
        let interval = Duration::from_millis(self.config.scan_not_active_broker_interval.max(1) as u64);
        let mut next_scan = Instant::now() + interval;
        let mut batch: Vec<WriteCommand> = Vec::with_capacity(64);
        let mut events: Vec<ConnEvent> = Vec::new();
        let mut events_waited = 0;
        let mut live_queries = inputs.live_queries.clone();
        let mut imports = inputs.imports.clone();
        loop {
            self.maybe_save_routes(false);
            let timeout = next_scan.saturating_duration_since(Instant::now());
            let mut open = true;
            select! {
                recv(inputs.commands) -> m => match m {
                    Ok(c) => batch.push(*c),
                    Err(_) => open = false,
                },
                recv(inputs.events) -> m => match m {
                    Ok(e) => events.push(e),
                    Err(_) => open = false,
                },
                recv(inputs.stop) -> _ => open = false,
                recv(live_queries) -> m => {
                    match m {
                        // The asker waits with a timeout and may be gone: nothing to do then.
                        Ok(q) => drop(q.reply.send(self.live_answer())),
                        // Nobody can ask any more (no HTTP endpoint): a closed channel would be ready forever.
                        Err(_) => live_queries = crossbeam_channel::never(),
                    }
                    continue;
                },
                recv(imports) -> m => {
                    match m {
                        Ok(import) => self.import(import),
                        Err(_) => imports = crossbeam_channel::never(),
                    }
                    continue;
                },
                default(timeout) => {}
            }
            if !open {
                break;
            }
            // Events first, then commands: every command a reactor sent before a close is then in this batch
            // (unless the batch is full), and commands are applied before events, so a registration is never
            // applied after the close of its own connection.
            events.extend(inputs.events.try_iter());
            while batch.len() < MAX_BATCH {
                match inputs.commands.try_recv() {
                    Ok(c) => batch.push(*c),
                    Err(_) => break,
                }
            }
            let expire = Instant::now() >= next_scan;
            if expire {
                next_scan = Instant::now() + interval;
            }
            // A full batch may have left older commands queued: hold events back a few rounds at most.
            let defer = !inputs.commands.is_empty() && events_waited < 8;
            events_waited = if defer && !events.is_empty() { events_waited + 1 } else { 0 };
            let mut ready = if defer { Vec::new() } else { std::mem::take(&mut events) };
            self.apply_batch(&mut batch, &mut ready, expire);
        }
        self.maybe_save_routes(true);
    }

    /// Saves the route tables for a warm restart every `routeSnapshotIntervalSeconds`, and at `last`. The writer
    /// only takes a cut of the tables (O(live brokers)); building and writing the registrations happens on a
    /// short-lived thread, one at a time: a save still running when the next is due makes that one wait for the
    /// next interval. The last save waits for a running one, then runs here, so the newest tables are written last.
    fn maybe_save_routes(&mut self, last: bool) {
        let path = self.config.route_snapshot_path.trim();
        if path.is_empty() {
            return;
        }
        let every = Duration::from_secs(self.config.route_snapshot_interval_seconds.max(1) as u64);
        if !last
            && (self.last_route_save.elapsed() < every || self.route_save.as_ref().is_some_and(|t| !t.is_finished()))
        {
            return;
        }
        self.last_route_save = Instant::now();
        let cut = self.tables.export_cut();
        let path = PathBuf::from(path);
        let save = move || {
            if let Err(e) = persist::save_atomic(&path, &crate::warm::encode(&cut.export())) {
                warn!(path = %path.display(), error = %e, "cannot save route tables for warm restart");
            }
        };
        if last {
            if let Some(running) = self.route_save.take() {
                let _ = running.join();
            }
            save();
        } else {
            self.route_save = std::thread::Builder::new().name("namesrv-route-save".into()).spawn(save).ok();
        }
    }

    /// Applies one batch: commands in arrival order, then connection events, then the expiry scan; then
    /// durability, publish, replies — in that order.
    fn apply_batch(&mut self, batch: &mut Vec<WriteCommand>, events: &mut Vec<ConnEvent>, expire: bool) {
        let mut dirty = Dirty::default();
        // Cheap clones (shared maps): restored if the batch's KV/config changes cannot be made durable.
        let (kv_before, config_before) = (self.kv.clone(), self.config.clone());
        let mut pending: Vec<(Origin, Outcome, Option<Audit>)> = Vec::with_capacity(batch.len());
        let audit = crate::audit::enabled();
        let registrations = batch.iter().filter(|c| matches!(c.op, WriteOp::RegisterBroker(..))).count();
        let closes = events.len();
        for WriteCommand { origin, op, bytes, decoded_with } in batch.drain(..) {
            self.queue_bytes.release(bytes);
            // Facts are taken before `apply` consumes the op; "routine" is liveness that changed no route.
            let facts = audit.then(|| (op.facts(), op.is_liveness(), self.tables.generation()));
            if let WriteOp::RegisterBroker(reg, _) = &op {
                dirty.signers |= self.signers.registered(&reg.broker_addr, &origin);
            }
            let outcome = self.apply(op, decoded_with.is_some(), &mut dirty);
            // Let go here, not on the decoder: what this snapshot still holds was replaced by this thread's publishes
            // and allocated here, and memory freed on the thread that allocated it goes back to that thread's
            // allocator cache instead of through the arena's locked bins
            // (see docs/decisions/0026-memory-freed-where-allocated.md).
            drop(decoded_with);
            let audit = facts.map(|(facts, liveness, before)| Audit {
                facts,
                routine: liveness
                    || (origin.request.code == crate::protocol::RequestCode::REGISTER_BROKER
                        && self.tables.generation() == before),
            });
            pending.push((origin, outcome, audit));
        }
        for ev in events.drain(..) {
            let ConnEvent::Closed(conn) = ev;
            let (gone, notices) = self.tables.connection_closed(conn, self.settings());
            self.log_evictions(&gone, EvictionCause::ConnectionClosed);
            self.note_topics_created_or_deleted();
            self.send_notices(notices);
        }
        // Deliberately broken build (docs/reliability.md, "Broken builds the checker caught"): a silent broker is
        // never expired; only a closed connection removes it.
        #[cfg(feature = "fault-never-expire")]
        let expire = {
            let _ = expire;
            false
        };
        if expire {
            let expired = self.tables.expire(self.clock.now_ms(), self.settings());
            self.log_evictions(&expired.evicted, EvictionCause::Expired);
            self.note_topics_created_or_deleted();
            for conn in expired.close {
                self.push(conn.reactor, Completion::Close { conn });
            }
            self.send_notices(expired.notices);
        }
        let durable = self.make_durable(&dirty, &kv_before);
        self.metrics.batches.fetch_add(1, Relaxed);
        self.metrics.commands.fetch_add(pending.len() as u64, Relaxed);
        self.metrics.live_brokers.store(self.tables.live_broker_count() as u64, Relaxed);
        self.metrics.provisional_brokers.store(self.provisional.len() as u64, Relaxed);
        if dirty.kv {
            let counter = if durable.is_ok() { &self.metrics.kv_writes } else { &self.metrics.kv_write_failures };
            counter.fetch_add(1, Relaxed);
        }
        if durable.is_err() {
            self.kv = kv_before;
            self.config = config_before;
            dirty = Dirty { signers: dirty.signers, ..Dirty::default() };
            self.drop_rolled_back_changes();
        }
        self.publish(&dirty);
        // After the publish: an event never names a route readers cannot see yet.
        self.append_changes();
        // After the publish (Release: a reader that acquires a count sees that snapshot), before the replies. See
        // `WriterMetrics::registrations`.
        self.metrics.registrations.fetch_add(registrations as u64, Release);
        self.metrics.same_body_registrations.fetch_add(std::mem::take(&mut self.same_bodies), Release);
        self.metrics.connection_closes.fetch_add(closes as u64, Release);
        self.metrics.expiry_scans.fetch_add(u64::from(expire), Release);
        for (origin, mut outcome, audit) in pending {
            if let Err(e) = &durable {
                if is_durable(origin.request.code) {
                    // The remark travels as text: the reply carries only a string.
                    outcome = Outcome::NotDurable(e.to_string());
                }
            }
            if let Some(a) = audit {
                let remark = match &outcome {
                    Outcome::NotDurable(e) => e.as_str(),
                    Outcome::Registered(None) => crate::state::routes::REGISTER_FAILED,
                    _ => "",
                };
                let (peer, account) = (origin.peer, origin.account.as_deref());
                crate::audit::applied(peer, account, origin.request.code, &a.facts, outcome.code(), remark, a.routine);
            }
            if origin.request.is_oneway() {
                continue;
            }
            let Origin { conn, request, received, .. } = origin;
            self.push(conn.reactor, Completion::Done { conn, request, outcome, received });
        }
        self.flush();
    }

    /// A registration: a recognised body goes the cheap way when the tables' record allows it; otherwise (rare:
    /// the routes under the broker's name changed since, or its role) the writer decodes the kept body here.
    fn register(
        &mut self,
        req: &mut RegisterBroker,
        body: RegisterBody,
        now: i64,
        s: RouteSettings,
    ) -> RegisterOutcome {
        let same = match body {
            RegisterBody::Decoded { mark, version } => return self.tables.register_marked(req, mark, version, now, s),
            RegisterBody::Same(same) => same,
        };
        match self.tables.register_same(req, &same.mark, same.version, now, s) {
            Some(outcome) => {
                self.same_bodies += 1;
                outcome
            }
            None => {
                let max = self.config.max_inflated_body;
                match crate::protocol::body::decode_register_broker_body_marked(
                    &same.raw,
                    same.compressed,
                    same.version,
                    max,
                    &|| {},
                ) {
                    Ok((decoded, mark)) => {
                        req.body = decoded;
                        self.tables.register_marked(req, mark, same.version, now, s)
                    }
                    // These bytes decoded before (that is how they got their mark): only a digest collision gets here.
                    Err(e) => {
                        tracing::warn!(broker = %req.broker_addr, error = %e, "recognised registration body no longer decodes");
                        None
                    }
                }
            }
        }
    }

    /// Takes the op by value: a registration's body (thousands of topics) is never copied. `from_decoder`: the
    /// decoder thread decoded it (`WriteCommand::decoded_with`).
    fn apply(&mut self, op: WriteOp, from_decoder: bool, dirty: &mut Dirty) -> Outcome {
        let now = self.clock.now_ms();
        let s = self.settings();
        match op {
            WriteOp::RegisterBroker(mut req, body) => {
                if !self.provisional.is_empty() {
                    self.provisional.remove(&(req.cluster_name.clone(), req.broker_addr.clone()));
                }
                // Only the decoder's own topics go back; a body the writer decodes here (`register`) is its own.
                let give_back = from_decoder && matches!(body, RegisterBody::Decoded { .. });
                let first = self.first_registration(&req);
                let outcome = self.register(&mut req, body, now, s);
                if let Some(r) = &outcome {
                    self.send_notices(r.notices.clone());
                }
                self.note_registered(&req, first, outcome.is_some());
                if give_back {
                    self.give_back(std::mem::take(&mut req.body.topic_configs));
                }
                Outcome::Registered(outcome)
            }
            WriteOp::UnregisterBroker(u) => {
                let notices = self.tables.unregister_brokers(std::slice::from_ref(&u), s);
                self.log_evictions(std::slice::from_ref(&u), EvictionCause::Unregistered);
                self.note_topics_created_or_deleted();
                self.send_notices(notices);
                Outcome::Done
            }
            WriteOp::BrokerHeartbeat { cluster, addr } => {
                self.tables.heartbeat(&cluster, &addr, now);
                Outcome::Done
            }
            WriteOp::QueryDataVersion { cluster, addr, data_version } => {
                let (changed, stored) = match data_version {
                    Some(dv) => self.tables.query_data_version(&cluster, &addr, &dv, now),
                    // Without a DataVersion Java reports "changed" (nothing equals null), and still refreshes.
                    None => (true, self.tables.query_data_version(&cluster, &addr, &Default::default(), now).1),
                };
                Outcome::DataVersion { changed, stored }
            }
            WriteOp::WipeWritePerm { broker_name } => {
                let count = self.tables.wipe_write_perm(&broker_name);
                self.note_perm_changed(Change::WritePermWiped { broker_name, count });
                Outcome::PermChanged(count)
            }
            WriteOp::AddWritePerm { broker_name } => {
                let count = self.tables.add_write_perm(&broker_name);
                self.note_perm_changed(Change::WritePermAdded { broker_name, count });
                Outcome::PermChanged(count)
            }
            WriteOp::DeleteTopic { topic, cluster } => {
                self.tables.delete_topic(&topic, cluster.as_deref());
                self.note_topics_created_or_deleted();
                Outcome::Done
            }
            WriteOp::RegisterTopic { topic, queue_datas } => {
                self.tables.register_topic(&topic, queue_datas);
                self.note_topics_created_or_deleted();
                Outcome::Done
            }
            WriteOp::PutKv { namespace, key, value } => {
                if self.kv.put(&namespace, &key, value.as_deref()) {
                    self.changes.push(Change::KvPut { namespace, key });
                }
                dirty.kv = true;
                Outcome::Done
            }
            WriteOp::DeleteKv { namespace, key } => {
                if self.kv.delete(&namespace, &key) {
                    self.changes.push(Change::KvDeleted { namespace, key });
                }
                dirty.kv = true;
                Outcome::Done
            }
            WriteOp::ExportRoutes { kv } => {
                Outcome::Exported { cut: Box::new(self.tables.export_cut()), now_ms: now, kv }
            }
            WriteOp::UpdateConfig { pairs } => {
                let updated = self.config.with_update(pairs);
                for key in &updated.ignored {
                    debug!(key = %key, "UPDATE_NAMESRV_CONFIG ignores unknown key");
                }
                self.changes.push(Change::ConfigUpdated { keys: updated.keys });
                self.config = Arc::new(updated.config);
                dirty.config = true;
                Outcome::Done
            }
        }
    }

    /// Writes KV and config files before anyone is told the change happened. On failure the batch's KV/config
    /// changes are rolled back and its KV/config requests get SYSTEM_ERROR: nothing is half-applied.
    /// If the KV file was written and the config file then fails, the KV file is written back as it was
    /// (`kv_before`): a KV change answered as failed must not be on disk.
    fn make_durable(&self, dirty: &Dirty, kv_before: &KvTable) -> Result<(), DurableError> {
        if dirty.kv {
            let path = PathBuf::from(&self.config.kv_config_path);
            if let Err(source) = persist::save_kv(&path, &self.kv) {
                warn!(path = %path.display(), error = %source, "cannot persist KV config");
                return Err(DurableError::Kv { path, source });
            }
        }
        if dirty.config {
            let path = PathBuf::from(&self.config.config_store_path);
            // Escaped: a value is one value of one line, whatever it holds (a raw line break would be a new key).
            if let Err(source) = persist::save_atomic(&path, self.config.file_text().as_bytes()) {
                warn!(path = %path.display(), error = %source, "cannot persist config");
                if dirty.kv {
                    let kv_path = PathBuf::from(&self.config.kv_config_path);
                    if let Err(e) = persist::save_kv(&kv_path, kv_before) {
                        tracing::error!(path = %kv_path.display(), error = %e, "cannot restore the KV file after a failed config save; it holds changes that were answered as failed");
                    }
                }
                return Err(DurableError::Config { path, source });
            }
        }
        Ok(())
    }
}

impl Writer {
    /// O(live brokers): the live table as the console shows it, and the brokers that left lately.
    fn live_answer(&self) -> LiveAnswer {
        let rows = self
            .tables
            .live_entries()
            .map(|(cluster, addr, l)| LiveRow {
                cluster: cluster.clone(),
                addr: addr.clone(),
                last_update_ms: l.last_update_ms,
                timeout_ms: l.timeout_ms,
                data_version: l.data_version,
                ha_server_addr: l.ha_server_addr.clone(),
            })
            .collect();
        LiveAnswer { rows, removed: self.removals.iter().cloned().collect() }
    }

    /// Remembers a removed broker for the health verdicts, forgetting the oldest beyond `REMOVALS_KEPT`.
    pub(super) fn remember_removal(&mut self, removal: Removal) {
        if self.removals.len() == REMOVALS_KEPT {
            self.removals.pop_front();
        }
        self.removals.push_back(removal);
    }
}

/// Why a batch's KV or config change could not be made durable. The message is the remark of the SYSTEM_ERROR the
/// batch's KV/config requests get, and names the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DurableError {
    #[error("persist KV config to {} failed: {source}", .path.display())]
    Kv { path: PathBuf, source: std::io::Error },
    #[error("persist config to {} failed: {source}", .path.display())]
    Config { path: PathBuf, source: std::io::Error },
}

/// What the audit trail will say about one applied write.
struct Audit {
    facts: String,
    routine: bool,
}

/// Requests whose change must be on disk before it is acknowledged; a failed write answers SYSTEM_ERROR.
fn is_durable(code: i32) -> bool {
    use crate::protocol::RequestCode as C;
    matches!(code, C::PUT_KV_CONFIG | C::DELETE_KV_CONFIG | C::UPDATE_NAMESRV_CONFIG)
}
