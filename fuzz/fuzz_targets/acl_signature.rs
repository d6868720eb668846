#![no_main]
//! Fuzz target `acl_signature`: see fuzz/checks.rs for the properties and docs/fuzzing.md for how to run it.

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::acl_signature(data));
