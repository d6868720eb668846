//! Unchanged re-registrations: a broker sends its whole topic table every 30 s, almost always the one it sent last
//! time. The decoder recognises such a body by its mark ([`crate::protocol::body::same_register_body`]) without
//! decoding it; here the writer checks that applying the table again could not change anything, and if so applies only
//! the rest of §5.3 (broker group, live entry with the new DataVersion, filter servers, the answer).
//!
//! "Could not change anything" is decided from a record the writer keeps per broker address after every full
//! application: the mark of the body applied, what it held besides topics, how it was applied (master or prime
//! slave, write bit cleared or not, `deleteTopicWithBrokerRegistration`), and the epoch of the broker name — a
//! counter bumped whenever any queue filed under that name is put or removed, by anyone. With the same epoch,
//! every topic of the body still has the queue that application left: Java would re-put equal queues (DataVersion
//! changed) or only add missing ones (none are missing). Anything else — another role, other settings, a wiped
//! perm, a deleted topic, another group member filing under the name, a body with static-topic mappings — and the
//! writer decodes the body after all and applies it in full (`None` from `register_same`).

use std::sync::Arc;

use crate::model::{BodyMark, BrokerId};

use super::register::{Application, Step};
use super::{RegisterBroker, RegisterOutcome, RouteSettings, RouteTables};

/// What the decoder needs to recognise the next body of a broker: published in the view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MarkInfo {
    pub cluster: Arc<str>,
    pub mark: BodyMark,
    /// The request version the body was decoded at (it decides how the body is read).
    pub version: i32,
    /// Topics in the body, for `maxTopicsPerRegistration`.
    pub topic_count: usize,
}

/// Writer-private: how the body marked `info.mark` was applied.
#[derive(Clone, Debug)]
pub(super) struct Record {
    info: Arc<MarkInfo>,
    filters: Option<Vec<String>>,
    name: Arc<str>,
    broker_id: BrokerId,
    delete_flag: bool,
    /// `None`: its topics were not applied (neither master nor prime slave).
    applied: Option<Applied>,
    /// The digests of its runs of topics, when applied exactly and in name order (`chunks`).
    runs: Option<Vec<u128>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Applied {
    read_only: bool,
    /// The name's epoch right after the application.
    epoch: u64,
    /// Every topic was put (first registration or a changed DataVersion), so every queue equals the body's; after
    /// an application that only added missing topics, some may not, and a changed DataVersion needs the body.
    exact: bool,
}

impl RouteTables {
    /// The name's epoch (see the module doc).
    pub(super) fn epoch(&self, name: &str) -> u64 {
        self.epochs.get(name).copied().unwrap_or(0)
    }

    pub(super) fn bump_epoch(&mut self, name: &str) {
        match self.epochs.get_mut(name) {
            Some(e) => *e += 1,
            None => {
                self.epochs.insert(Arc::from(name), 1);
            }
        }
    }

    /// The mark under which the record of `req`'s body is kept, if it is: a body without a mark cannot be
    /// recognised, and static-topic mappings are re-put on a changed DataVersion and can be overwritten by other
    /// groups, so such bodies always take the full path.
    pub(super) fn kept_mark(req: &RegisterBroker, mark: Option<BodyMark>) -> Option<BodyMark> {
        mark.filter(|_| req.body.mapping_infos.is_empty())
    }

    /// After a full registration of `req` that reached step 10: keeps (or drops) the record of its body.
    pub(super) fn remember(&mut self, req: &RegisterBroker, name: &Arc<str>, app: Application, s: RouteSettings) {
        let addr = req.broker_addr.as_str();
        let Some(mark) = Self::kept_mark(req, app.mark) else {
            self.forget_body(addr);
            return;
        };
        let info = Arc::new(MarkInfo {
            cluster: Arc::from(req.cluster_name.as_str()),
            mark,
            version: app.version,
            topic_count: req.body.topic_configs.len(),
        });
        let applied = app.applied.map(|(read_only, exact)| Applied { read_only, epoch: self.epoch(name), exact });
        let record = Record {
            info: info.clone(),
            filters: req.body.filter_server_list.clone(),
            name: name.clone(),
            broker_id: req.broker_id,
            delete_flag: s.delete_topic_with_broker_registration,
            applied,
            runs: app.runs,
        };
        let key: Arc<str> = Arc::from(addr);
        self.records.insert(key.clone(), record);
        if self.view.marks.get(addr) != Some(&info) {
            self.view.marks.insert(key, info);
            self.bump();
        }
    }

    /// The digests of the runs of `addr`'s last body applied (`chunks`), for a body of `addr` applied under `name`
    /// at a changed DataVersion: `None` unless that body was applied exactly, under the same name and the same way,
    /// with nothing filed under the name changed since.
    pub(super) fn runs_on_record(&self, addr: &str, name: &str, read_only: bool) -> Option<&[u128]> {
        let rec = self.records.get(addr)?;
        let same_filing = *rec.name == *name
            && rec.applied.is_some_and(|a| a.exact && a.read_only == read_only && a.epoch == self.epoch(name));
        rec.runs.as_deref().filter(|_| same_filing)
    }

    /// The broker left, or its last body cannot be recognised any more.
    pub(super) fn forget_body(&mut self, addr: &str) {
        self.records.remove(addr);
        if self.view.marks.remove(addr).is_some() {
            self.bump();
        }
    }

    /// A REGISTER_BROKER whose body was recognised as the one marked `mark` at request version `version`, with
    /// `req.body` holding only its DataVersion. `None` (nothing applied) when the record does not show that
    /// applying its topics again would change nothing: decode the body and call `register_marked`.
    pub fn register_same(
        &mut self,
        req: &mut RegisterBroker,
        mark: &BodyMark,
        version: i32,
        now_ms: i64,
        s: RouteSettings,
    ) -> Option<RegisterOutcome> {
        let rec = self.records.get(req.broker_addr.as_str())?;
        let same_source = rec.info.mark == *mark
            && rec.info.version == version
            && *rec.info.cluster == *req.cluster_name
            && *rec.name == *req.broker_name
            && rec.broker_id == req.broker_id
            && rec.delete_flag == s.delete_topic_with_broker_registration;
        if !same_source {
            return None;
        }
        let plan = self.plan(req, rec.info.topic_count);
        if let Step::Proceed { applies, read_only } = plan.step {
            let usable = match (applies, rec.applied) {
                (false, None) => true,
                (true, Some(a)) => {
                    let version_changed = self
                        .live
                        .get(&plan.cluster, &plan.addr)
                        .is_none_or(|l| l.data_version != req.body.data_version);
                    a.read_only == read_only
                        && a.epoch == self.epoch(&plan.name)
                        && (a.exact || !(version_changed || plan.register_first))
                }
                _ => false,
            };
            if !usable {
                return None;
            }
        }
        req.body.filter_server_list = rec.filters.clone();
        let outcome = self.run_plan(req, plan, now_ms, s, |_, _, _, _| {});
        self.merge_broker_topics();
        Some(outcome)
    }
}
