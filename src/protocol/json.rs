//! fastjson on the wire. Output: a small streaming writer for fastjson's two dialects (§4.1 of the reference):
//! alphabetical bean keys are the caller's job, nulls are omitted by the caller, the writer handles commas,
//! escaping, integer map keys (bare vs quoted) and big longs. Input: a tolerant reader (bare and single-quoted keys,
//! trailing commas, numbers as strings are the accessor's job) into a small `Value` tree.

/// Which fastjson output dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `JSON.toJSONString(obj)`: bare integer map keys, raw UTF-8, `/` unescaped.
    Default,
    /// `BrowserCompatible | MapSortField`: quoted keys, `\uXXXX` for non-ASCII, `\/`, longs beyond 2^53 quoted.
    Standard,
}

/// A streaming JSON writer that emits fastjson's bytes. Commas are inserted automatically.
pub struct JsonWriter<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) dialect: Dialect,
    /// One entry per open container: true once it has a member (so the next needs a comma).
    pub(crate) stack: smallvec::SmallVec<[bool; 8]>,
}

impl<'a> JsonWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>, dialect: Dialect) -> Self {
        JsonWriter {
            out,
            dialect,
            stack: smallvec::SmallVec::new(),
        }
    }
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
    pub fn begin_object(&mut self) {
        unimplemented!()
    }
    pub fn end_object(&mut self) {
        unimplemented!()
    }
    pub fn begin_array(&mut self) {
        unimplemented!()
    }
    pub fn end_array(&mut self) {
        unimplemented!()
    }
    /// An object key that is a string (bean property or `Map<String,_>` key).
    pub fn key(&mut self, _k: &str) {
        unimplemented!()
    }
    /// An object key of a `Map<Long,_>`/`Map<Integer,_>`: bare in the default dialect, quoted in the standard one.
    pub fn int_key(&mut self, _k: i64) {
        unimplemented!()
    }
    pub fn string(&mut self, _v: &str) {
        unimplemented!()
    }
    /// A Java `int`.
    pub fn int(&mut self, _v: i32) {
        unimplemented!()
    }
    /// A Java `long` (quoted beyond ±9007199254740991 in the standard dialect).
    pub fn long(&mut self, _v: i64) {
        unimplemented!()
    }
    pub fn bool(&mut self, _v: bool) {
        unimplemented!()
    }
}

/// A parsed JSON value. Numbers keep their text so callers can apply Java's coercions.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    /// Members in input order; keys as written (bare keys become their text).
    Object(Vec<(String, Value)>),
}

/// Why lenient parsing failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid JSON at byte {offset}: {reason}")]
pub struct JsonError {
    pub offset: usize,
    pub reason: String,
}

/// fastjson-lenient parsing of one value (trailing whitespace allowed, anything else after it is an error).
pub fn parse(_input: &[u8]) -> Result<Value, JsonError> {
    unimplemented!()
}

impl Value {
    /// Member of an object by key, `None` for other kinds or a missing key.
    pub fn get(&self, _key: &str) -> Option<&Value> {
        unimplemented!()
    }
    /// fastjson coercion to long: numbers, numeric strings; `None` for null/other.
    pub fn as_i64(&self) -> Option<i64> {
        unimplemented!()
    }
    /// fastjson coercion to int.
    pub fn as_i32(&self) -> Option<i32> {
        unimplemented!()
    }
    /// fastjson coercion to boolean: true/false, "true"/"false", 1/0.
    pub fn as_bool(&self) -> Option<bool> {
        unimplemented!()
    }
    /// Strings as is; numbers and booleans as their text (fastjson's String coercion); `None` for null/containers.
    pub fn as_str(&self) -> Option<std::borrow::Cow<'_, str>> {
        unimplemented!()
    }
}
