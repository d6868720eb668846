//! Writes that add or change routes: REGISTER_BROKER (§5.3), keep-alive (§5.4), perms (§5.9), topic admin (§5.10).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::model::{perm, BodyMark, BrokerData, DataVersion, QueueData};

use super::super::liveness::BrokerLive;
use super::{
    chunks, MinBrokerIdNotice, Put, Queue, RegisterBroker, RegisterOutcome, RegisterResult, RouteSettings, RouteTables,
    TopicKey,
};

const MASTER_ID: i64 = 0;

/// Steps 2–9 of §5.3 worked out without changing anything (`RouteTables::plan`), so a re-registration recognised
/// by its body's mark can be checked against the record of the last one before anything is applied.
pub(super) struct Plan {
    pub cluster: Arc<str>,
    pub addr: Arc<str>,
    pub name: Arc<str>,
    /// The group as the registration leaves it.
    bd: BrokerData,
    pub register_first: bool,
    min_changed: bool,
    pub step: Step,
}

/// Where §5.3 goes after step 9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// 6: a stale registrant for an id a newer broker holds; answered SUCCESS, nothing filed.
    Stale,
    /// 7: refused.
    Refused,
    /// On to step 10: `applies` for a master or prime slave, whose topics are filed (write bit cleared when
    /// `read_only`).
    Proceed { applies: bool, read_only: bool },
}

/// How a full registration's topic table was applied, for its record.
pub(super) struct Application {
    pub mark: Option<BodyMark>,
    pub version: i32,
    /// `Some((read_only, exact))` when the topics were applied.
    pub applied: Option<(bool, bool)>,
    /// The digests of the body's runs of topics, when it was applied exactly (`chunks`).
    pub runs: Option<Vec<u128>>,
}

impl RouteTables {
    /// §5.3. `now_ms` stamps the live entry.
    pub fn register_broker(&mut self, req: RegisterBroker, now_ms: i64, s: RouteSettings) -> RegisterOutcome {
        self.register_marked(&req, None, 0, now_ms, s)
    }

    /// §5.3 for a decoded body, with the body's mark (if it has one) and the request version it was decoded at,
    /// kept so the broker's next registration of the same body can skip the decode (`register_same`).
    pub fn register_marked(
        &mut self,
        req: &RegisterBroker,
        mark: Option<BodyMark>,
        version: i32,
        now_ms: i64,
        s: RouteSettings,
    ) -> RegisterOutcome {
        let plan = self.plan(req, req.body.topic_configs.len());
        let (name, step) = (plan.name.clone(), plan.step);
        let (mut applied, mut runs) = (None, None);
        let kept = Self::kept_mark(req, mark).is_some();
        let outcome = self.run_plan(req, plan, now_ms, s, |t, name, read_only, first| {
            let (exact, digests) = t.apply_topic_table(req, name, first, read_only, kept, s);
            applied = Some((read_only, exact));
            runs = digests;
        });
        match step {
            Step::Proceed { .. } => self.remember(req, &name, Application { mark, version, applied, runs }, s),
            Step::Stale | Step::Refused => self.forget_body(&req.broker_addr),
        }
        self.merge_broker_topics();
        outcome
    }

    /// Steps 2–9, read-only. `topic_count` is the body's number of topics (step 7).
    pub(super) fn plan(&self, req: &RegisterBroker, topic_count: usize) -> Plan {
        let cluster: Arc<str> = Arc::from(req.cluster_name.as_str());
        let addr: Arc<str> = Arc::from(req.broker_addr.as_str());
        let id = req.broker_id;

        let existing = self.view.brokers.get(req.broker_name.as_str()).cloned();
        let name: Arc<str> =
            existing.as_ref().map(|b| b.broker_name.clone()).unwrap_or_else(|| Arc::from(req.broker_name.as_str()));

        // 2–3. Work on a copy; it is stored (if it differs) at every exit.
        let register_first = existing.is_none();
        let mut bd = match existing {
            Some(b) => BrokerData::clone(&b),
            None => BrokerData {
                cluster: cluster.clone(),
                broker_name: name.clone(),
                broker_addrs: BTreeMap::new(),
                zone_name: None,
                enable_acting_master: false,
            },
        };
        let old_version_broker = req.enable_acting_master.is_none();
        bd.enable_acting_master = req.enable_acting_master.unwrap_or(false);
        bd.zone_name = req.zone_name.clone();

        // 4.
        let prev_min = bd.min_broker().map_or(0, |(i, _)| i);
        let min_changed = id < prev_min;

        // 5. One entry per address: a host switching role keeps only its new id.
        bd.broker_addrs.retain(|i, a| *i == id || a.as_str() != &*addr);

        let mut plan = Plan { cluster, addr, name, bd, register_first, min_changed, step: Step::Stale };

        // 6. A stale registrant for an id held by a newer (higher stateVersion) broker is ignored.
        if let Some(old_addr) = plan.bd.broker_addrs.get(&id) {
            if old_addr.as_str() != &*plan.addr {
                let newer = self
                    .live
                    .get(&plan.cluster, old_addr)
                    .is_some_and(|l| l.data_version.state_version > req.body.data_version.state_version);
                if newer {
                    return plan;
                }
            }
        }

        // 7. A single-topic registration cannot introduce a new member.
        if !plan.bd.broker_addrs.contains_key(&id) && topic_count == 1 {
            plan.step = Step::Refused;
            return plan;
        }

        // 8.
        let old = plan.bd.broker_addrs.insert(id, req.broker_addr.clone());
        plan.register_first |= old.is_none_or(|a| a.is_empty());

        // 9. A prime slave (the smallest id of a master-less group) files its topics too; Java clears their write
        // bit only when the group enables acting master (`isPrimeSlave && brokerData.isEnableActingMaster()`).
        let is_master = id == MASTER_ID;
        let is_prime_slave = !old_version_broker && !is_master && plan.bd.min_broker().is_some_and(|(m, _)| m == id);
        plan.step = Step::Proceed {
            applies: is_master || is_prime_slave,
            read_only: is_prime_slave && plan.bd.enable_acting_master,
        };
        plan
    }

    /// Steps 1–14 of a planned registration; `apply_topics(tables, name, read_only, register_first)` is step 10,
    /// called for a master or a prime slave. `req.body` supplies the DataVersion and the filter servers.
    pub(super) fn run_plan(
        &mut self,
        req: &RegisterBroker,
        plan: Plan,
        now_ms: i64,
        s: RouteSettings,
        apply_topics: impl FnOnce(&mut Self, &Arc<str>, bool, bool),
    ) -> RegisterOutcome {
        let Plan { cluster, addr, name, bd, register_first, min_changed, step } = plan;
        let id = req.broker_id;

        // 1. The cluster lists the name even if the registration is refused below.
        self.add_to_cluster(&cluster, &name);
        match step {
            Step::Stale => {
                self.live.remove(&cluster, &addr);
                self.put_broker(bd);
                return Some(RegisterResult::default());
            }
            Step::Refused => {
                self.put_broker(bd);
                return None;
            }
            Step::Proceed { applies, read_only } => {
                self.put_broker(bd);
                // 10.
                if applies {
                    apply_topics(self, &name, read_only, register_first);
                }
            }
        }

        // 11. Replaces the whole entry, connection included.
        self.live.insert(
            &cluster,
            &addr,
            BrokerLive {
                last_update_ms: now_ms,
                timeout_ms: req.timeout_ms(),
                data_version: req.body.data_version,
                conn: req.conn,
                ha_server_addr: req.ha_server_addr.clone(),
            },
        );

        // 12.
        match &req.body.filter_server_list {
            Some(l) if l.is_empty() => self.remove_filter_servers(&cluster, &addr),
            Some(l) => self.set_filter_servers(&cluster, &addr, l.clone()),
            None => {}
        }

        // 13.
        let mut result = RegisterResult::default();
        let bd = self.view.brokers.get(&*name).cloned().expect("just stored");
        if id != MASTER_ID {
            if let Some(master_addr) = bd.broker_addrs.get(&MASTER_ID) {
                if let Some(master) = self.live.get(&cluster, master_addr) {
                    result.ha_server_addr = Some(master.ha_server_addr.clone());
                    result.master_addr = Some(master_addr.clone());
                }
            }
        }

        // 14.
        if min_changed && s.notify_min_broker_id_changed {
            result.notices = min_id_notices(&bd.broker_addrs, None, Some(req.ha_server_addr.clone()));
        }
        Some(result)
    }

    /// §5.3 step 10, for a master or a prime slave; `read_only` clears the write bit of every queue it files.
    /// Returns whether every topic was put (a first registration or a changed DataVersion: `Applied::exact`), and
    /// the digests of the body's runs when `kept` (its record will be kept) and it was.
    fn apply_topic_table(
        &mut self,
        req: &RegisterBroker,
        name: &Arc<str>,
        register_first: bool,
        read_only: bool,
        kept: bool,
        s: RouteSettings,
    ) -> (bool, Option<Vec<u128>>) {
        let (cluster, addr) = (req.cluster_name.as_str(), req.broker_addr.as_str());
        let body = &req.body;
        // Read before step 11 replaces the live entry.
        let version_changed = self.live.get(cluster, addr).is_none_or(|l| l.data_version != body.data_version);
        let exact = version_changed || register_first;
        // Runs are hashed only when of use: to compare with the last body's now (a changed DataVersion, with that
        // body's runs on record and still comparable: `runs_on_record`), or to keep for the next body (a body
        // applied exactly, every topic put, whose record is kept).
        // Read before anything below can move the name's epoch.
        let on_record =
            if version_changed && !register_first { self.runs_on_record(addr, name, read_only) } else { None };
        let runs = if exact && (kept || on_record.is_some()) { chunks::Runs::of(&body.topic_configs) } else { None };
        let skip = match (&runs, on_record) {
            (Some(runs), Some(on_record)) => runs.unchanged(on_record),
            _ => Vec::new(),
        };
        if s.delete_topic_with_broker_registration && body.mapping_infos.is_empty() {
            let keep: HashSet<&str> = body.topic_configs.iter().map(|t| &*t.topic_name).collect();
            for t in self.topics_of_broker(name).iter() {
                if !keep.contains(&**t) {
                    self.remove_queue(&TopicKey::new(t.clone()), name);
                }
            }
        }

        let id = self.interner.intern(&mut self.view.names, name);
        let (mut put_any, mut added) = (false, Vec::new());
        // Under an unchanged DataVersion only a topic without the name is put below, and that put always changes
        // it: one descent then, instead of a lookup and an insert after the check.
        let likely_change = register_first || !version_changed;
        for (i, tc) in body.topic_configs.iter().enumerate() {
            if skip.get(i) == Some(&true) {
                continue;
            }
            let changed = register_first
                || version_changed
                || self.view.topics.get(&tc.topic_name).is_none_or(|e| !e.contains(name, &self.view.names));
            if !changed {
                continue;
            }
            let mut p = tc.perm;
            if read_only {
                p &= !perm::WRITE;
            }
            let queue = Queue {
                read_queue_nums: tc.read_queue_nums,
                write_queue_nums: tc.write_queue_nums,
                perm: p,
                topic_sys_flag: tc.topic_sys_flag,
            };
            match self.put_queue_as(&tc.topic_name, id, queue, likely_change) {
                Put::Unchanged => continue,
                Put::Updated => {}
                Put::Added(key) => added.push((key, true)),
            }
            put_any = true;
        }
        if put_any {
            self.bump_epoch(name);
        }
        if !added.is_empty() {
            self.move_topics(name, added);
        }

        if version_changed || register_first {
            for (topic, info) in &body.mapping_infos {
                // Java keys by the info's own bname; one without it is filed under the registering group.
                let bname = info.bname.clone().unwrap_or_else(|| name.to_string());
                self.put_mapping(topic, bname, info.clone());
            }
        }
        (exact, runs.filter(|_| kept).map(|r| r.digests()))
    }

    /// BROKER_HEARTBEAT: refresh the live entry if it exists; `false` when unknown.
    pub fn heartbeat(&mut self, cluster: &str, addr: &str, now_ms: i64) -> bool {
        self.live.touch(cluster, addr, now_ms)
    }

    /// QUERY_DATA_VERSION: (`changed`, the stored DataVersion if a live entry exists); refreshes the entry.
    pub fn query_data_version(
        &mut self,
        cluster: &str,
        addr: &str,
        dv: &DataVersion,
        now_ms: i64,
    ) -> (bool, Option<DataVersion>) {
        let stored = self.live.get(cluster, addr).map(|l| l.data_version);
        self.live.touch(cluster, addr, now_ms);
        (stored.as_ref() != Some(dv), stored)
    }

    /// 205: clear the write bit; returns the number of topics touched.
    pub fn wipe_write_perm(&mut self, broker_name: &str) -> i32 {
        self.map_perm_of_broker(broker_name, |p| p & !perm::WRITE)
    }

    /// 327: perm = 6; returns the number of topics touched.
    pub fn add_write_perm(&mut self, broker_name: &str) -> i32 {
        self.map_perm_of_broker(broker_name, |_| perm::READ_WRITE)
    }

    /// 216, with or without a cluster name. Static-topic mappings stay, as in Java.
    pub fn delete_topic(&mut self, topic: &str, cluster_name: Option<&str>) {
        let topic = &TopicKey::from(topic);
        match cluster_name {
            Some(c) if !c.is_empty() => {
                let names: Vec<Arc<str>> =
                    self.view.clusters.get(c).map(|s| s.iter().cloned().collect()).unwrap_or_default();
                for n in names {
                    self.remove_queue(topic, &n);
                }
            }
            _ => {
                let names: Vec<Arc<str>> = self
                    .view
                    .topics
                    .get(topic)
                    .map(|e| e.names(&self.view.names).cloned().collect())
                    .unwrap_or_default();
                for n in names {
                    self.remove_queue(topic, &n);
                }
            }
        }
        self.merge_broker_topics();
    }

    /// 217 (`RouteInfoManager.registerTopic`): an existing topic takes queue datas in order up to the first whose
    /// broker name is unknown or missing (`None`); a new topic takes them only if every one has a known name. Java
    /// stops at a missing name because `brokerAddrTable.containsKey(null)` throws; registerTopic catches it.
    pub fn register_topic(&mut self, topic: &str, queue_datas: Vec<Option<QueueData>>) {
        let known = |t: &Self, qd: &Option<QueueData>| {
            qd.as_ref().is_some_and(|qd| t.view.brokers.contains_key(&*qd.broker_name))
        };
        if !self.view.topics.contains_key(topic) && !queue_datas.iter().all(|qd| known(self, qd)) {
            return;
        }
        let topic: Arc<str> = Arc::from(topic);
        for qd in queue_datas {
            let Some(qd) = qd.filter(|qd| self.view.brokers.contains_key(&*qd.broker_name)) else {
                break;
            };
            // Share the registered name's allocation.
            let name = self.view.brokers.get_key_value(&*qd.broker_name).map(|(k, _)| k.clone()).expect("known");
            self.put_queue(&topic, &name, Queue::of(&qd));
        }
        self.merge_broker_topics();
    }
}

/// §5.11: the 905 messages for a group whose minimum id changed. `addrs` is the group after the change.
pub(super) fn min_id_notices(
    addrs: &BTreeMap<i64, String>,
    offline: Option<String>,
    ha: Option<String>,
) -> Vec<MinBrokerIdNotice> {
    let Some((&min_id, min_addr)) = addrs.iter().next() else {
        return Vec::new();
    };
    // A registration tells the others about the new minimum; an unregistration tells everyone left.
    let tell_all = offline.is_some() || addrs.len() == 1;
    addrs
        .iter()
        .filter(|(i, _)| tell_all || **i != min_id)
        .map(|(_, target)| MinBrokerIdNotice {
            target: target.clone(),
            min_broker_id: min_id,
            min_broker_addr: min_addr.clone(),
            offline_broker_addr: offline.clone(),
            ha_broker_addr: ha.clone(),
        })
        .collect()
}
