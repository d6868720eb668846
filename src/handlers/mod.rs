//! Request handlers. This file holds THE one match on the request code. Handlers run on a reactor thread against
//! one loaded `Snapshot`: reads are answered at once (`Action::Reply`); state changes are decoded and validated here,
//! then handed to the writer (`Action::Write`), which replies after publishing. Handlers never block and never
//! mutate shared state.

pub mod admin;
pub mod broker;
pub mod cluster;
pub mod kv;
pub mod route;
pub mod route_cache;
pub mod topic;

use crate::protocol::{RemotingCommand, RequestCode as C, ResponseCode};
use crate::state::{ConnId, Snapshot};
use crate::writer::command::WriteOp;

/// What the reactor knows when it runs a handler.
pub struct Ctx<'a> {
    pub conn: ConnId,
    pub snapshot: &'a Snapshot,
    /// Wall clock in ms (Java `System.currentTimeMillis`), from the server's clock.
    pub now_ms: i64,
    /// When the server started, for `needWaitForService`.
    pub started_ms: i64,
    /// The reactor's encoded routes (its own; never shared between threads).
    pub route_cache: &'a std::cell::RefCell<route_cache::RouteCache>,
}

/// A handler's verdict.
#[derive(Debug)]
pub enum Action {
    /// Answer now (dropped for one-way requests).
    Reply(RemotingCommand),
    /// Let the writer apply this and answer.
    Write(WriteOp),
}

/// Routes one request to its handler.
pub fn dispatch(ctx: &Ctx, req: &RemotingCommand) -> Action {
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
        code => Action::Reply(reply(
            req,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(format!(" request type {code} not supported")),
        )),
    }
}

/// A response with a code and optional remark.
pub fn reply(req: &RemotingCommand, code: i32, remark: Option<String>) -> RemotingCommand {
    RemotingCommand::response_to(req, code, remark)
}

/// SUCCESS with no remark.
pub fn success(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SUCCESS, None)
}

/// SYSTEM_ERROR with a remark.
pub fn system_error(req: &RemotingCommand, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR, Some(remark.into()))
}

/// Encodes a body with one of `protocol::body`'s writers.
pub fn body_of(f: impl FnOnce(&mut Vec<u8>)) -> bytes::Bytes {
    let mut out = Vec::with_capacity(256);
    f(&mut out);
    bytes::Bytes::from(out)
}
