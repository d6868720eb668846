//! The fastjson 1.2.83 output dialects, byte for byte (checked against the jar: see the tests).

use bytes::BufMut;

use super::Dialect;

/// Longs beyond this magnitude are quoted by `BrowserCompatible` (JavaScript's safe-integer range).
const MAX_SAFE_LONG: i64 = 9_007_199_254_740_991;

/// fastjson2 (what the 5.5.0 namesrv serializes with) writes lowercase hex.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// A streaming JSON writer that emits fastjson's bytes. Commas are inserted automatically.
pub(crate) struct JsonWriter<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) dialect: Dialect,
    /// One entry per open container: true once it has a member (so the next needs a comma).
    pub(crate) stack: smallvec::SmallVec<[bool; 8]>,
    /// A key was just written, so the next value needs no comma.
    after_key: bool,
}

impl<'a> JsonWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>, dialect: Dialect) -> Self {
        JsonWriter { out, dialect, stack: smallvec::SmallVec::new(), after_key: false }
    }

    /// Comma bookkeeping shared by keys and values.
    fn separate(&mut self) {
        if self.after_key {
            self.after_key = false;
            return;
        }
        if let Some(has_member) = self.stack.last_mut() {
            if *has_member {
                self.out.push(b',');
            }
            *has_member = true;
        }
    }

    pub(crate) fn begin_object(&mut self) {
        self.separate();
        self.out.push(b'{');
        self.stack.push(false);
    }

    pub(crate) fn end_object(&mut self) {
        self.stack.pop();
        self.out.push(b'}');
    }

    pub(crate) fn begin_array(&mut self) {
        self.separate();
        self.out.push(b'[');
        self.stack.push(false);
    }

    pub(crate) fn end_array(&mut self) {
        self.stack.pop();
        self.out.push(b']');
    }

    /// An object key that is a string from data (`Map<String,_>` key): escaped as needed.
    pub(crate) fn key(&mut self, k: &str) {
        self.separate();
        self.quoted(k);
        self.out.push(b':');
        self.after_key = true;
    }

    /// A bean property's name: a literal that needs no escaping, so it is copied without the scan `key` makes
    /// (most keys of a route are these, and the scan was a third of a big route's encode).
    #[inline]
    pub(crate) fn field(&mut self, name: &'static str) {
        debug_assert!(!needs_escape(name), "a property name with a character to escape: {name:?}");
        self.separate();
        self.out.reserve(name.len() + 3);
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.after_key = true;
    }

    /// An object key of a `Map<Long,_>`/`Map<Integer,_>`: bare in the default dialect, quoted in the standard one.
    pub(crate) fn int_key(&mut self, k: i64) {
        self.separate();
        match self.dialect {
            Dialect::Default => self.out.extend_from_slice(itoa::Buffer::new().format(k).as_bytes()),
            Dialect::Standard => {
                self.out.push(b'"');
                self.out.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
                self.out.push(b'"');
            }
        }
        self.out.push(b':');
        self.after_key = true;
    }

    pub(crate) fn string(&mut self, v: &str) {
        self.separate();
        self.quoted(v);
    }

    /// A Java `int`.
    pub(crate) fn int(&mut self, v: i32) {
        self.separate();
        self.out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }

    /// A Java `long` (quoted beyond ±9007199254740991 in the standard dialect).
    pub(crate) fn long(&mut self, v: i64) {
        self.separate();
        let mut buf = itoa::Buffer::new();
        let text = buf.format(v);
        if self.dialect == Dialect::Standard && !(-MAX_SAFE_LONG..=MAX_SAFE_LONG).contains(&v) {
            self.out.push(b'"');
            self.out.extend_from_slice(text.as_bytes());
            self.out.push(b'"');
        } else {
            self.out.extend_from_slice(text.as_bytes());
        }
    }

    pub(crate) fn bool(&mut self, v: bool) {
        self.separate();
        self.out.extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
    }

    /// A JSON `null` (only for echoing parsed values; beans omit nulls).
    pub(crate) fn null(&mut self) {
        self.separate();
        self.out.extend_from_slice(b"null");
    }

    /// Already-valid JSON number text, written as is.
    pub(crate) fn raw_number(&mut self, text: &str) {
        self.separate();
        self.out.extend_from_slice(text.as_bytes());
    }

    fn quoted(&mut self, s: &str) {
        write_quoted(self.out, s);
    }
}

/// A quoted string with fastjson2's escaping (the same in both dialects: only control characters, `"` and `\\`;
/// non-ASCII and `/` go out raw). Unescaped runs are copied in one go.
pub(crate) fn write_quoted<B: BufMut>(out: &mut B, s: &str) {
    out.put_u8(b'"');
    if !needs_escape(s) {
        out.put_slice(s.as_bytes());
        out.put_u8(b'"');
        return;
    }
    let mut run_start = 0;
    for (i, ch) in s.char_indices() {
        let short = match ch {
            '"' => Some(b'"'),
            '\\' => Some(b'\\'),
            '\u{8}' => Some(b'b'),
            '\t' => Some(b't'),
            '\n' => Some(b'n'),
            '\u{c}' => Some(b'f'),
            '\r' => Some(b'r'),
            _ => None,
        };
        let unicode = short.is_none() && (ch as u32) < 0x20;
        if short.is_none() && !unicode {
            continue;
        }
        out.put_slice(&s.as_bytes()[run_start..i]);
        run_start = i + ch.len_utf8();
        if let Some(c) = short {
            out.put_u8(b'\\');
            out.put_u8(c);
        } else {
            // Control characters are below U+0020: one UTF-16 unit.
            out.put_slice(b"\\u00");
            out.put_u8(HEX[usize::from((ch as u8) >> 4)]);
            out.put_u8(HEX[usize::from(ch as u8 & 0xF)]);
        }
    }
    out.put_slice(&s.as_bytes()[run_start..]);
    out.put_u8(b'"');
}

/// True if `s` has a character fastjson2 escapes. Without an early exit, so that the loop runs over whole
/// vectors: names and addresses are short, and nearly always clean.
#[inline]
fn needs_escape(s: &str) -> bool {
    s.bytes().fold(false, |found, b| found | (b < 0x20) | (b == b'"') | (b == b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(dialect: Dialect, f: impl FnOnce(&mut JsonWriter)) -> String {
        let mut out = Vec::new();
        f(&mut JsonWriter::new(&mut out, dialect));
        String::from_utf8(out).unwrap()
    }

    fn write_sample(w: &mut JsonWriter) {
        w.begin_object();
        w.key("i");
        w.int(i32::MIN);
        w.key("k/\u{4e2d}");
        w.int(1);
        w.key("l");
        w.begin_object();
        w.int_key(-1);
        w.long(9_007_199_254_740_991);
        w.int_key(5);
        w.long(-9_007_199_254_740_992);
        w.int_key(9_007_199_254_740_993);
        w.long(9_007_199_254_740_993);
        w.end_object();
        w.key("s");
        w.string("a/\u{4e2d}\u{1}\u{1f}\u{7f}\u{85}\u{a0}\u{e9}\"\\\u{8}\u{c}\n\r\t\u{2028}\u{1F600}'<>&");
        w.end_object();
    }

    // Expected strings checked against fastjson2 2.0.59 (the 5.5.0 namesrv's serializer): `JSON.toJSONString(map)`
    // and with BrowserCompatible + MapSortField. Only control characters are escaped, with lowercase hex.
    const SAMPLE_S: &str = r#""s":"a/中\u0001\u001f"#;
    const SAMPLE_TAIL: &str = "\u{7f}\u{85}\u{a0}\u{e9}\\\"\\\\\\b\\f\\n\\r\\t\u{2028}\u{1F600}'<>&\"}";

    #[test]
    fn default_dialect_matches_fastjson2() {
        let head = r#"{"i":-2147483648,"k/中":1,"l":{-1:9007199254740991,5:-9007199254740992,9007199254740993:9007199254740993},"#;
        assert_eq!(text(Dialect::Default, write_sample), format!("{head}{SAMPLE_S}{SAMPLE_TAIL}"));
    }

    #[test]
    fn standard_dialect_matches_fastjson2() {
        let head = r#"{"i":-2147483648,"k/中":1,"l":{"-1":9007199254740991,"5":"-9007199254740992","9007199254740993":"9007199254740993"},"#;
        assert_eq!(text(Dialect::Standard, write_sample), format!("{head}{SAMPLE_S}{SAMPLE_TAIL}"));
    }

    #[test]
    fn commas_in_arrays_and_nested_containers() {
        let s = text(Dialect::Default, |w| {
            w.begin_array();
            w.begin_object();
            w.end_object();
            w.begin_array();
            w.end_array();
            w.bool(true);
            w.string("");
            w.null();
            w.end_array();
        });
        assert_eq!(s, r#"[{},[],true,"",null]"#);
    }

    #[test]
    fn only_control_characters_are_escaped() {
        let s = text(Dialect::Standard, |w| w.string("~\u{7f}\u{80}\u{9f}\u{a0}\u{2028}/\u{0}\u{1b}"));
        assert_eq!(s, "\"~\u{7f}\u{80}\u{9f}\u{a0}\u{2028}/\\u0000\\u001b\"");
    }
}
