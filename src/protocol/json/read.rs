//! A tolerant JSON reader with fastjson's parser leniency (§4.3): bare keys (including bare integers and `$ref`),
//! single-quoted strings, extra and trailing commas, comments, and `\x`/`\'` escapes. Never panics; nesting is
//! bounded so hostile input cannot overflow the stack.

use std::borrow::Cow;

use super::{Dialect, JsonWriter};

/// Deepest container nesting accepted; deeper input is an error rather than a stack overflow.
pub(crate) const MAX_DEPTH: usize = 512;

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
pub fn parse(input: &[u8]) -> Result<Value, JsonError> {
    let mut p = Parser { s: input, pos: 0, depth: 0 };
    // A UTF-8 byte-order mark is skipped, as Java's readers do.
    if input.starts_with(&[0xEF, 0xBB, 0xBF]) {
        p.pos = 3;
    }
    p.skip_ws()?;
    let v = p.value()?;
    p.skip_ws()?;
    if p.pos != input.len() {
        return Err(p.err("unexpected data after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, reason: &str) -> JsonError {
        JsonError { offset: self.pos, reason: reason.to_string() }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) -> Result<(), JsonError> {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0C | 0x08 => self.pos += 1,
                b'/' => self.skip_comment()?,
                _ => break,
            }
        }
        Ok(())
    }

    fn skip_comment(&mut self) -> Result<(), JsonError> {
        match self.s.get(self.pos + 1) {
            Some(b'/') => {
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    if b == b'\n' {
                        break;
                    }
                }
                Ok(())
            }
            Some(b'*') => {
                let rest = self.s.get(self.pos + 2..).unwrap_or_default();
                match rest.windows(2).position(|w| w == b"*/") {
                    Some(end) => {
                        self.pos += 2 + end + 2;
                        Ok(())
                    }
                    None => Err(self.err("unterminated comment")),
                }
            }
            _ => Err(self.err("unexpected '/'")),
        }
    }

    fn value(&mut self) -> Result<Value, JsonError> {
        match self.peek() {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(q @ (b'"' | b'\'')) => self.string(q).map(Value::String),
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            Some(_) => match self.word() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                "null" | "undefined" => Ok(Value::Null),
                _ => Err(self.err("unexpected character")),
            },
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Value, JsonError>) -> Result<Value, JsonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    /// Identifier-like run: letters, digits, `_`, `$`, and any non-ASCII (fastjson accepts Java identifier parts).
    fn word(&mut self) -> &str {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-' | b'.' | b'+') || b >= 0x80 {
                self.pos += 1;
            } else {
                break;
            }
        }
        std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("")
    }

    fn object(&mut self) -> Result<Value, JsonError> {
        self.pos += 1; // '{'
        let mut members = Vec::new();
        loop {
            self.skip_ws()?;
            let key = match self.peek() {
                None => return Err(self.err("unterminated object")),
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(q @ (b'"' | b'\'')) => self.string(q)?,
                Some(_) => {
                    let start = self.pos;
                    let w = self.word().to_string();
                    if w.is_empty() || self.pos == start {
                        return Err(self.err("expected an object key"));
                    }
                    w
                }
            };
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws()?;
            let v = self.value()?;
            members.push((key, v));
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self) -> Result<Value, JsonError> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => return Err(self.err("unterminated array")),
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            items.push(self.value()?);
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Sign, digits, fraction, exponent, kept as text; fastjson's type suffixes (`L`, `F`, …) are dropped.
    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let mut n = self.digits();
        if self.peek() == Some(b'.') {
            self.pos += 1;
            n += self.digits();
        }
        if n == 0 {
            return Err(self.err("invalid number"));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'-' | b'+')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("invalid exponent"));
            }
        }
        let text = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        if matches!(self.peek(), Some(b'L' | b'S' | b'B' | b'F' | b'D')) {
            self.pos += 1;
        }
        Ok(Value::Number(text))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let h = self
            .s
            .get(self.pos..self.pos + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("bad \\u escape"))?;
        self.pos += 4;
        Ok(h)
    }

    fn string(&mut self, quote: u8) -> Result<String, JsonError> {
        self.pos += 1;
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let run = self.pos;
            while let Some(b) = self.peek() {
                if b == quote || b == b'\\' {
                    break;
                }
                self.pos += 1;
            }
            buf.extend_from_slice(&self.s[run..self.pos]);
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b) if b == quote => {
                    self.pos += 1;
                    return Ok(match String::from_utf8(buf) {
                        Ok(s) => s,
                        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    });
                }
                Some(_) => self.escape(&mut buf)?,
            }
        }
    }

    fn escape(&mut self, buf: &mut Vec<u8>) -> Result<(), JsonError> {
        self.pos += 1; // '\\'
        let Some(c) = self.peek() else {
            return Err(self.err("unterminated escape"));
        };
        self.pos += 1;
        let ch: char = match c {
            b'"' | b'\\' | b'/' | b'\'' => char::from(c),
            b'b' => '\u{8}',
            b'f' | b'F' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'v' => '\u{b}',
            b'0'..=b'7' => char::from(c - b'0'),
            b'x' => {
                let h = self
                    .s
                    .get(self.pos..self.pos + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| self.err("bad \\x escape"))?;
                self.pos += 2;
                char::from(h)
            }
            b'u' => {
                let hi = self.hex4()?;
                if (0xD800..0xDC00).contains(&hi) && self.s.get(self.pos..self.pos + 2) == Some(b"\\u") {
                    let save = self.pos;
                    self.pos += 2;
                    let lo = self.hex4()?;
                    if (0xDC00..0xE000).contains(&lo) {
                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)
                    } else {
                        self.pos = save;
                        char::REPLACEMENT_CHARACTER
                    }
                } else {
                    // A lone surrogate cannot live in a Rust string.
                    char::from_u32(hi).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            _ => return Err(self.err("unknown escape")),
        };
        let mut tmp = [0u8; 4];
        buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
        Ok(())
    }
}

impl Value {
    /// Member of an object by key (the last one wins, as in fastjson), `None` for other kinds or a missing key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Members of an object (empty for other kinds).
    pub(crate) fn members(&self) -> &[(String, Value)] {
        match self {
            Value::Object(m) => m,
            _ => &[],
        }
    }

    /// A fastjson reference object `{"$ref":"…"}` (a repeated instance in the sender's graph).
    pub(crate) fn is_ref(&self) -> bool {
        matches!(self, Value::Object(m) if m.iter().any(|(k, _)| k == "$ref"))
    }

    /// fastjson coercion to long: numbers, numeric strings; `None` for null/other.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(t) => number_to_i64(t),
            // fastjson's castToLong drops thousands separators and accepts decimal text.
            Value::String(s) => number_to_i64(&s.trim().replace(',', "")),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// fastjson coercion to int.
    pub fn as_i32(&self) -> Option<i32> {
        self.as_i64().and_then(|n| i32::try_from(n).ok())
    }

    /// fastjson coercion to boolean: true/false, "true"/"false", 1/0.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Number(t) => number_to_i64(t).map(|n| n == 1),
            Value::String(s) => {
                let s = s.trim();
                if s.eq_ignore_ascii_case("true") || s == "1" || s == "Y" || s == "T" {
                    Some(true)
                } else if s.eq_ignore_ascii_case("false") || s == "0" || s == "N" || s == "F" {
                    Some(false)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Strings as is; numbers and booleans as their text (fastjson's String coercion); `None` for null/containers.
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Number(t) => Some(Cow::Borrowed(t)),
            Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
            _ => None,
        }
    }

    /// Compact JSON text of this value (fastjson turns a container into its JSON text where a String is expected).
    pub fn to_json_text(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut JsonWriter::new(&mut out, Dialect::Default));
        String::from_utf8(out).unwrap_or_default()
    }

    fn write(&self, w: &mut JsonWriter) {
        match self {
            Value::Null => w.null(),
            Value::Bool(b) => w.bool(*b),
            Value::Number(t) => w.raw_number(t),
            Value::String(s) => w.string(s),
            Value::Array(items) => {
                w.begin_array();
                items.iter().for_each(|v| v.write(w));
                w.end_array();
            }
            Value::Object(members) => {
                w.begin_object();
                for (k, v) in members {
                    w.key(k);
                    v.write(w);
                }
                w.end_object();
            }
        }
    }
}

/// Integer text as is; decimal/exponent text truncated toward zero like Java's `Number.longValue()`.
fn number_to_i64(t: &str) -> Option<i64> {
    let t = t.strip_prefix('+').unwrap_or(t);
    if let Ok(n) = t.parse::<i64>() {
        return Some(n);
    }
    let f: f64 = t.parse().ok()?;
    if f.is_finite() && f.abs() < 9.3e18 {
        Some(f.trunc() as i64)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Value {
        parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn obj(members: &[(&str, Value)]) -> Value {
        Value::Object(members.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    #[test]
    fn bare_integer_keys_and_single_quotes() {
        assert_eq!(p("{0:\"a\",1:'b'}"), obj(&[("0", s("a")), ("1", s("b"))]));
        assert_eq!(p("{'k':'it\\'s'}"), obj(&[("k", s("it's"))]));
        assert_eq!(p("{-1:2}").get("-1"), Some(&Value::Number("2".into())));
        assert_eq!(p("{code:105}").get("code").unwrap().as_i32(), Some(105));
    }

    #[test]
    fn arbitrary_and_trailing_commas() {
        assert_eq!(p("{,,\"a\":1,,\"b\":2,}").members().len(), 2);
        assert_eq!(p("[1,,2,]"), Value::Array(vec![Value::Number("1".into()), Value::Number("2".into())]));
        assert!(parse(b"{\"a\":1 \"b\":2}").is_err());
        assert!(parse(b"[1 2]").is_err());
    }

    #[test]
    fn ref_objects_parse() {
        let v = p("{\"attributes\":{\"$ref\":\"$.a.b\"},$ref:'x'}");
        assert!(v.get("attributes").unwrap().is_ref());
        assert_eq!(v.get("$ref"), Some(&s("x")));
    }

    #[test]
    fn escapes_and_surrogate_pairs() {
        assert_eq!(p(r#""a\"\\\/\b\f\n\r\t\u4e2D\uD83D\uDE00\x41""#), s("a\"\\/\u{8}\u{c}\n\r\t\u{4e2d}\u{1F600}A"));
        assert_eq!(p(r#""\uD83D""#), s("\u{FFFD}"));
        assert_eq!(p(r#""\uD83Dx""#), s("\u{FFFD}x"));
        assert!(parse(br#""\u12""#).is_err());
        assert!(parse(br#""\q""#).is_err());
        assert_eq!(p("\"\u{4e2d}\""), s("\u{4e2d}"));
    }

    #[test]
    fn numbers_keep_their_text() {
        assert_eq!(p("-1.5e+3"), Value::Number("-1.5e+3".into()));
        assert_eq!(p("12L"), Value::Number("12".into()));
        assert_eq!(p("-1.5e+3").as_i64(), Some(-1500));
        assert_eq!(p("9007199254740993").as_i64(), Some(9_007_199_254_740_993));
        assert!(parse(b"-").is_err());
        assert!(parse(b"1e").is_err());
        assert_eq!(p("3000000000").as_i32(), None);
    }

    #[test]
    fn coercions() {
        assert_eq!(s("105").as_i64(), Some(105));
        assert_eq!(s(" 1,000 ").as_i32(), Some(1000));
        assert_eq!(s("x").as_i64(), None);
        assert_eq!(Value::Null.as_i64(), None);
        assert_eq!(s("TRUE").as_bool(), Some(true));
        assert_eq!(s("false").as_bool(), Some(false));
        assert_eq!(p("1").as_bool(), Some(true));
        assert_eq!(p("0").as_bool(), Some(false));
        assert_eq!(s("maybe").as_bool(), None);
        assert_eq!(p("12").as_str().as_deref(), Some("12"));
        assert_eq!(p("true").as_str().as_deref(), Some("true"));
        assert_eq!(p("[]").as_str(), None);
        assert_eq!(p("{a:[1,'x',null]}").to_json_text(), r#"{"a":[1,"x",null]}"#);
    }

    #[test]
    fn literals_comments_and_trailing_data() {
        assert_eq!(p(" /* c */ null // end\n"), Value::Null);
        assert_eq!(p("[true,false,undefined]").members().len(), 0);
        assert!(parse(b"nul").is_err());
        assert!(parse(b"{} x").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(b"{\"a\"").is_err());
        assert!(parse(b"{\"a\":").is_err());
        assert!(parse(b"/*").is_err());
        assert_eq!(p("\u{feff}{}"), Value::Object(vec![]));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().reason, "nesting too deep");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_ok());
        let too = format!("{}{}", "{a:".repeat(MAX_DEPTH + 1), "}".repeat(MAX_DEPTH + 1));
        assert!(parse(too.as_bytes()).is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn written_strings_read_back(text in "\\PC*", std in proptest::prelude::any::<bool>()) {
            let dialect = if std { Dialect::Standard } else { Dialect::Default };
            let mut out = Vec::new();
            JsonWriter::new(&mut out, dialect).string(&text);
            proptest::prop_assert_eq!(parse(&out).unwrap(), Value::String(text));
        }
    }
}
