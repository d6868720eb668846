//! namesrv — a drop-in replacement for the Apache RocketMQ NameServer.

pub mod config;
pub mod model;
pub mod protocol;
pub mod state;
