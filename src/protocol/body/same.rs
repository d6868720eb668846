//! Recognising a re-registration whose body is the one the broker sent last time, at a new DataVersion, without
//! decoding it (issue: an unchanged 10k-topic re-registration cost as much CPU as Java's full decode).
//!
//! When the fast decoder takes a JSON body it knows where the wrapper's `dataVersion` value starts; the mark is that
//! offset plus a digest of the offset and every byte but the value. The next body of the same broker is the
//! same topic table if the bytes before the offset hash the same, one JSON value starts there (the new DataVersion)
//! and the bytes after it hash the same too. A JSON parser's state at an offset depends only on the bytes before
//! it, so with an equal prefix the value at that offset is the wrapper's `dataVersion` again, and with an equal rest
//! every decoder would read everything else exactly as before. The writer re-checks that nothing else changed the
//! broker's routes since (`RouteTables::register_same`).
//!
//! The digest is XXH3-128 with a per-process random seed, not a cryptographic hash: it runs over every byte of
//! every recognised registration (a 10k-topic body is 1.7 MB), and BLAKE3 took over a third of what such a
//! registration cost (perf/results/2026-12-06-numbers-from-comments.md). Collision resistance against a crafted body buys nothing here: a mark is only ever compared
//! with the next body registered for the same broker address, so a sender who could make two bodies collide could
//! only get its own earlier topic table kept — and whoever may register that broker can register any table for it
//! anyway. Accidental collisions are 2⁻¹²⁸ per comparison.

use serde::de::IgnoredAny;

use super::{beans, parse_json};
use crate::model::{BodyMark, DataVersion};

/// The digest of `body` without `body[start..end]`.
pub(super) fn digest_around(body: &[u8], start: usize, end: usize) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(crate::model::digest_seed());
    h.update(&(start as u64).to_le_bytes());
    h.update(&body[..start]);
    h.update(&body[end..]);
    h.digest128()
}

/// The mark of a JSON body whose DataVersion value spans `start..end`.
pub(super) fn mark(body: &[u8], start: usize, end: usize) -> Option<BodyMark> {
    Some(BodyMark { dv_start: u32::try_from(start).ok()?, digest: digest_around(body, start, end) })
}

/// The DataVersion of JSON `body` if it is the body `mark` was taken from with only its DataVersion changed.
pub(super) fn same_json(body: &[u8], mark: &BodyMark) -> Option<DataVersion> {
    let start = mark.dv_start as usize;
    let rest = body.get(start..)?;
    let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
    values.next()?.ok()?;
    let end = start + values.byte_offset();
    if digest_around(body, start, end) != mark.digest {
        return None;
    }
    // Read as the lenient decoder reads a DataVersion (numbers as strings and all), so the result is what a full
    // decode would give.
    beans::read_opt_data_version(Some(&parse_json(&body[start..end]).ok()?)).ok()
}
