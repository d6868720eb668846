#![no_main]
//! Fuzz target `config_roundtrip`: see fuzz/checks.rs for the properties and docs/fuzzing.md for how to run it.

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::config_roundtrip(data));
