//! Bytes ↔ frames and bodies. Pure: no I/O, no clock, no shared state. Everything here is a function of its input,
//! so it is unit-, property- and fuzz-testable.
//!
//! - `code`: request and response code constants, `LanguageCode`, `SerializeType`.
//! - `command`: `RemotingCommand`, ext-field access with Java's parsing rules, response builders.
//! - `frame`: the length-prefixed frame codec and both header encodings (JSON, ROCKETMQ binary).
//! - `json`: the fastjson output dialects (default and standard) and a tolerant input reader.
//! - `body`: request/response bodies (RegisterBrokerBody incl. zlib, TopicRouteData, ClusterInfo, …).
//! - `props`: Java properties text (config file, UPDATE/GET_NAMESRV_CONFIG bodies).

pub mod body;
pub(crate) mod code;
pub(crate) mod command;
pub mod frame;
pub mod json;
pub mod props;

pub use code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
pub use command::{ExtFields, RemotingCommand};
pub use frame::{FrameError, DEFAULT_MAX_FRAME};
