//! fastjson on the wire. Output: a small streaming writer for fastjson's two dialects (§4.1 of the reference):
//! alphabetical bean keys are the caller's job, nulls are omitted by the caller, the writer handles commas,
//! escaping, integer map keys (bare vs quoted) and big longs. Input: a tolerant reader (bare and single-quoted keys,
//! trailing commas, numbers as strings are the accessor's job) into a small `Value` tree, and a strict one-pass
//! `scan`ner for the fast paths that try the usual shapes first.

mod read;
pub(crate) mod scan;
mod write;

pub use read::{parse, JsonError, Value};
pub(crate) use write::{write_quoted, JsonWriter};

/// Which fastjson output dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `JSON.toJSONString(obj)`: bare integer map keys, raw UTF-8, `/` unescaped.
    Default,
    /// `BrowserCompatible | MapSortField`: quoted integer keys, sorted maps, longs beyond 2^53 quoted. Escaping as
    /// fastjson2 (the 5.5.0 namesrv): control characters only, in both dialects (see docs/decisions).
    Standard,
}
