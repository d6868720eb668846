#![no_main]
//! Fuzz target `header_rocketmq`: see fuzz/checks.rs for the properties and docs/fuzzing.md for how to run it.

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;
use namesrv::protocol::SerializeType;

fuzz_target!(|data: &[u8]| checks::header(SerializeType::RocketMq, data));
