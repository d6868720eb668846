//! Request handlers. This file holds THE one match on the request code. Handlers run on a reactor thread against
//! one loaded `Snapshot`: reads are answered at once (`Action::Reply`); state changes are decoded and validated here,
//! then handed to the writer (`Action::Write`), which replies after publishing. Handlers never block and never
//! mutate shared state.

pub(crate) mod admin;
pub mod broker;
pub(crate) mod cluster;
pub(crate) mod fleet;
pub(crate) mod kv;
pub(crate) mod route;
pub mod route_cache;
pub(crate) mod topic;

use std::net::IpAddr;

use crate::acl::Caller;
use crate::audit::RefusedWrite;
use crate::limit::Limit;
#[cfg(test)]
pub(crate) use crate::protocol::command::OVERLOAD_REMARK;
pub(crate) use crate::protocol::command::{reply, success, system_busy, system_error};
use crate::protocol::{RemotingCommand, RequestCode as C, ResponseCode};
use crate::state::{ConnId, Snapshot};
use crate::write_command::{Outcome, WriteOp};

/// What the reactor knows when it runs a handler.
pub(crate) struct Ctx<'a> {
    pub conn: ConnId,
    /// The peer's address, for `adminAllowList`.
    pub peer: IpAddr,
    pub snapshot: &'a Snapshot,
    /// Wall clock in ms (Java `System.currentTimeMillis`), from the server's clock.
    pub now_ms: i64,
    /// When the server started, for `needWaitForService`.
    pub started_ms: i64,
    /// The reactor's encoded routes (its own; never shared between threads).
    pub route_cache: &'a std::cell::RefCell<route_cache::RouteCache>,
    /// The accounts, when `aclEnable` or `authenticationEnabled` is on.
    pub acl: Option<&'a crate::acl::Acl>,
    /// Where refusals are counted by reason (`namesrv_acl_refusals_total`).
    pub acl_metrics: Option<&'a crate::metrics::AclMetrics>,
    /// Called between pieces of a long registration decode: the decoder thread gives way to the reactors there, so a
    /// query that arrives meanwhile need not wait for the rest of its slice (decision 0025); a reactor, which only
    /// decodes small bodies itself, does nothing.
    pub give_way: fn(),
}

/// A handler's verdict.
#[derive(Debug)]
pub(crate) enum Action {
    /// Answer now (dropped for one-way requests).
    Reply(RemotingCommand),
    /// Let the writer apply this and answer.
    Write(WriteOp),
    /// Answer now: the peer went over `Limit`. The reactor logs the first of a peer's refusals in full and sums up
    /// the ones that follow (`reactor/refusals.rs`).
    Refused(RemotingCommand, Limit),
}

/// Requests that change state: with `adminAllowList` set, only listed peers may send them. Heartbeats (904) and
/// QUERY_DATA_VERSION (322) count: they keep a broker alive, so a peer that may not register a broker may not keep
/// one alive either. Unknown codes are not writes (they are answered "not supported" whoever sends them).
pub(crate) fn is_write(code: i32) -> bool {
    matches!(
        code,
        C::PUT_KV_CONFIG
            | C::DELETE_KV_CONFIG
            | C::REGISTER_BROKER
            | C::UNREGISTER_BROKER
            | C::BROKER_HEARTBEAT
            | C::QUERY_DATA_VERSION
            | C::WIPE_WRITE_PERM_OF_BROKER
            | C::ADD_WRITE_PERM_OF_BROKER
            | C::DELETE_TOPIC_IN_NAMESRV
            | C::REGISTER_TOPIC_IN_NAMESRV
            | C::UPDATE_NAMESRV_CONFIG
    )
}

/// The one allow-list check, before dispatch: a write from a peer outside `adminAllowList` is NO_PERMISSION.
fn refuse_unlisted_writer(ctx: &Ctx, req: &RemotingCommand) -> Option<RemotingCommand> {
    let list = &ctx.snapshot.config.admin_allow_list;
    if !is_write(req.code) || list.allows(ctx.peer) {
        return None;
    }
    let name = crate::protocol::code::request_name(req.code);
    let remark = format!("[ADMIN_ALLOW_LIST] {} may not send {name} ({}); allowed: {list}", ctx.peer, req.code);
    Some(reply(req, ResponseCode::NO_PERMISSION, Some(remark)))
}

/// Routes one request to its handler, after the two checks that may refuse it whatever it is: the allow-list,
/// then the account (`aclEnable`).
pub(crate) fn dispatch(ctx: &Ctx, req: &RemotingCommand) -> Dispatched {
    let refused = |response: RemotingCommand, limit: Limit| {
        // Refused reads are not audited (a misconfigured client would flood the trail): they are counted and
        // logged like every limit.
        let audit = is_write(req.code).then(|| RefusedWrite::new(ctx.peer, None, req)).flatten();
        Dispatched { action: Action::Refused(response, limit), account: None, audit }
    };
    if let Some(response) = refuse_unlisted_writer(ctx, req) {
        return refused(response, Limit::AdminAllowList);
    }
    let caller = match ctx.acl.map(|acl| acl.check(ctx.peer, req, is_write(req.code)).map_err(|r| (r, acl.wording))) {
        None => Caller::Anyone,
        Some(Ok(caller)) => caller,
        Some(Err((refusal, wording))) => {
            if let Some(m) = ctx.acl_metrics {
                m.refused(&refusal);
            }
            return refused(reply(req, ResponseCode::NO_PERMISSION, Some(refusal.remark(wording))), Limit::Acl);
        }
    };
    let action = handle(ctx, req);
    let account = match (&action, caller.account()) {
        (Action::Write(_), Some(account)) => Some(account.to_string()),
        _ => None,
    };
    let mut audit = None;
    if is_write(req.code) {
        match &action {
            Action::Reply(response) => crate::audit::answered(ctx.peer, caller.account(), req, response),
            Action::Refused(..) => audit = RefusedWrite::new(ctx.peer, caller.account(), req),
            Action::Write(_) => {}
        }
    }
    Dispatched { action, account, audit }
}

/// A handler's verdict and, for a write, who signed it (the writer's audit line names the account).
#[derive(Debug)]
pub(crate) struct Dispatched {
    pub action: Action,
    pub account: Option<String>,
    /// A write refused for a limit: its audit line, for the reactor to write or sum up (`reactor/refusals.rs`).
    pub audit: Option<Box<RefusedWrite>>,
}

/// THE match on the request code.
fn handle(ctx: &Ctx, req: &RemotingCommand) -> Action {
    match req.code {
        C::PUT_KV_CONFIG => kv::put(req),
        C::GET_KV_CONFIG => kv::get(ctx, req),
        C::DELETE_KV_CONFIG => kv::delete(req),
        C::GET_KVLIST_BY_NAMESPACE => kv::list(ctx, req),
        C::REGISTER_BROKER => broker::register(ctx, req),
        C::UNREGISTER_BROKER => broker::unregister(req),
        C::BROKER_HEARTBEAT => broker::heartbeat(req),
        C::QUERY_DATA_VERSION => broker::query_data_version(req),
        C::GET_ROUTEINFO_BY_TOPIC => route::get_route_info(ctx, req),
        C::GET_BROKER_CLUSTER_INFO => cluster::cluster_info(ctx, req),
        C::GET_BROKER_MEMBER_GROUP => cluster::member_group(ctx, req),
        C::WIPE_WRITE_PERM_OF_BROKER => topic::wipe_write_perm(req),
        C::ADD_WRITE_PERM_OF_BROKER => topic::add_write_perm(req),
        C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => topic::all_topics(ctx, req),
        C::DELETE_TOPIC_IN_NAMESRV => topic::delete_topic(req),
        C::REGISTER_TOPIC_IN_NAMESRV => topic::register_topic(req),
        C::GET_TOPICS_BY_CLUSTER => topic::topics_by_cluster(ctx, req),
        C::GET_SYSTEM_TOPIC_LIST_FROM_NS => topic::system_topics(ctx, req),
        C::GET_UNIT_TOPIC_LIST | C::GET_HAS_UNIT_SUB_TOPIC_LIST | C::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => {
            topic::unit_topics(ctx, req)
        }
        C::UPDATE_NAMESRV_CONFIG => admin::update_config(ctx, req),
        C::GET_NAMESRV_CONFIG => admin::get_config(ctx, req),
        crate::fleet_facts::wire::FLEET_FACTS => fleet::facts(ctx, req),
        crate::fleet_facts::wire::FLEET_ROUTES => fleet::routes(ctx, req),
        code => Action::Reply(reply(
            req,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(format!(" request type {code} not supported")),
        )),
    }
}

/// The reply to a write the writer applied, built on the reactor that decoded `req` (a header-only copy) from the
/// writer's outcome and the snapshot it loads now (published before the outcome was sent, invariant 1).
pub(crate) fn complete(req: &RemotingCommand, outcome: Outcome, snap: &Snapshot) -> RemotingCommand {
    match outcome {
        Outcome::Done => success(req),
        Outcome::Registered(result) => broker::register_reply(req, result, snap),
        Outcome::PermChanged(n) => topic::perm_reply(req, n),
        Outcome::DataVersion { changed, stored } => broker::query_data_version_reply(req, changed, stored),
        Outcome::NotDurable(e) => system_error(req, e),
        Outcome::Exported { cut, now_ms, kv } => fleet::routes_reply(req, &cut, now_ms, kv, snap),
    }
}

/// `dispatch`, with a panic turned into SYSTEM_ERROR: a bug in one handler must not take down the thread (a
/// reactor and all its connections, or the decoder) it runs on.
pub(crate) fn dispatch_guarded(ctx: &Ctx, req: &RemotingCommand) -> Dispatched {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(ctx, req))).unwrap_or_else(|_| {
        tracing::error!(code = req.code, "handler panicked");
        let response = system_error(req, format!("internal error handling request code {}", req.code));
        Dispatched { action: Action::Reply(response), account: None, audit: None }
    })
}

/// Encodes a body with one of [`crate::protocol::body`]'s writers.
pub(crate) fn body_of(f: impl FnOnce(&mut Vec<u8>)) -> bytes::Bytes {
    let mut out = Vec::with_capacity(256);
    f(&mut out);
    // A `Bytes` keeps its vector's spare capacity, up to as much again as the body after doubling: the route cache
    // bounds the bytes of the bodies it keeps (`routeCacheBytes`), and would hold up to twice that.
    out.shrink_to_fit();
    bytes::Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allow_list::AllowList;
    use crate::config::Config;
    use crate::writer::Writer;

    #[test]
    fn a_body_holds_no_spare_capacity() {
        for n in [10, 256, 300, 7000] {
            let body = body_of(|out| out.extend(std::iter::repeat_n(b'x', n)));
            let whole = body.try_into_mut().expect("the only handle");
            assert_eq!((whole.len(), whole.capacity()), (n, n));
        }
    }

    /// What a `Ctx` borrows, owned: a handler test runs its handler as a reactor (or the decoder thread) would.
    pub(super) struct TestCtx {
        snapshot: Snapshot,
        route_cache: std::cell::RefCell<route_cache::RouteCache>,
    }

    impl TestCtx {
        pub(super) fn new(config: Config) -> TestCtx {
            TestCtx {
                snapshot: Writer::initial_snapshot(Default::default(), std::sync::Arc::new(config)),
                route_cache: std::cell::RefCell::new(route_cache::RouteCache::new(0)),
            }
        }

        /// A `Ctx` for a request from `peer`, decoded by a thread whose `give_way` is `give_way`.
        pub(super) fn ctx(&self, peer: IpAddr, give_way: fn()) -> Ctx<'_> {
            Ctx {
                conn: ConnId { reactor: 0, token: 0, gen: 1 },
                peer,
                snapshot: &self.snapshot,
                now_ms: 0,
                started_ms: 0,
                route_cache: &self.route_cache,
                acl: None,
                acl_metrics: None,
                give_way,
            }
        }
    }

    fn dispatch_from(peer: &str, list: &str, req: &RemotingCommand) -> Action {
        let test = TestCtx::new(Config { admin_allow_list: AllowList::parse(list).unwrap(), ..Config::default() });
        dispatch(&test.ctx(peer.parse().unwrap(), || {}), req).action
    }

    #[test]
    fn writes_and_reads_are_told_apart() {
        let writes = [100, 102, 103, 104, 205, 216, 217, 318, 322, 327, 904];
        let reads = [101, 105, 106, 206, 219, 224, 304, 311, 312, 313, 319, 901, 905, 9999];
        assert!(writes.iter().all(|c| is_write(*c)));
        assert!(reads.iter().all(|c| !is_write(*c)));
    }

    #[test]
    fn unlisted_writer_is_refused_before_its_handler_runs() {
        let put = RemotingCommand::request(C::PUT_KV_CONFIG, 7);
        match dispatch_from("127.0.0.1", "10.0.0.0/8", &put) {
            Action::Refused(r, Limit::AdminAllowList) => {
                assert_eq!((r.code, r.opaque), (ResponseCode::NO_PERMISSION, 7));
                let remark = "[ADMIN_ALLOW_LIST] 127.0.0.1 may not send PUT_KV_CONFIG (100); allowed: 10.0.0.0/8";
                assert_eq!(r.remark.as_deref(), Some(remark));
            }
            other => panic!("{other:?}"),
        }
        // Listed peers and reads get their handler (the empty PUT is the handler's own refusal, not ours).
        assert!(!matches!(dispatch_from("10.9.9.9", "10.0.0.0/8", &put), Action::Refused(..)));
        let get = RemotingCommand::request(C::GET_NAMESRV_CONFIG, 8);
        assert!(matches!(dispatch_from("127.0.0.1", "10.0.0.0/8", &get), Action::Reply(r) if r.code == 0));
        assert!(!matches!(dispatch_from("203.0.113.1", "", &put), Action::Refused(..)), "empty list is off");
    }

    /// The handler hands the writer a body's topics in name order, so the writer's descents of the topic map walk
    /// neighbouring leaves (decision 0022); of a name sent more than once, the copies keep the order they came in, so
    /// the writer still files the last one last. 60 topics: a sort that is not stable reorders equal names at this
    /// size.
    #[test]
    fn a_registration_reaches_the_writer_with_its_topics_in_name_order() {
        use crate::model::{DataVersion, TopicConfig};
        use crate::state::routes::RegisterBroker;
        use crate::write_command::WriteOp;
        let names = ["delta", "alpha", "perf-topic-000002", "perf-topic-000001", "charlie", "bravo"];
        let sent: Vec<TopicConfig> =
            (0..60).map(|i| TopicConfig { perm: i, ..TopicConfig::with_defaults(names[i as usize % 6]) }).collect();
        let reg = RegisterBroker::new("c", "b", 0, "10.0.0.1:10911", sent.clone(), DataVersion::default());
        let Action::Write(WriteOp::RegisterBroker(got, _)) =
            dispatch_from("127.0.0.1", "", &crate::registration::encode_register(&reg, 1))
        else {
            panic!("not a write");
        };
        let mut want = sent;
        want.sort_by(|a, b| a.topic_name.as_bytes().cmp(b.topic_name.as_bytes()));
        let order = |t: &[TopicConfig]| t.iter().map(|t| (t.topic_name.to_string(), t.perm)).collect::<Vec<_>>();
        assert_eq!(order(&got.body.topic_configs), order(&want));
    }
}
