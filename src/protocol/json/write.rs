//! The fastjson 1.2.83 output dialects, byte for byte (checked against the jar: see the tests).

use super::Dialect;

/// Longs beyond this magnitude are quoted by `BrowserCompatible` (JavaScript's safe-integer range).
const MAX_SAFE_LONG: i64 = 9_007_199_254_740_991;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// A streaming JSON writer that emits fastjson's bytes. Commas are inserted automatically.
pub struct JsonWriter<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) dialect: Dialect,
    /// One entry per open container: true once it has a member (so the next needs a comma).
    pub(crate) stack: smallvec::SmallVec<[bool; 8]>,
    /// A key was just written, so the next value needs no comma.
    after_key: bool,
}

impl<'a> JsonWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>, dialect: Dialect) -> Self {
        JsonWriter { out, dialect, stack: smallvec::SmallVec::new(), after_key: false }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
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

    pub fn begin_object(&mut self) {
        self.separate();
        self.out.push(b'{');
        self.stack.push(false);
    }

    pub fn end_object(&mut self) {
        self.stack.pop();
        self.out.push(b'}');
    }

    pub fn begin_array(&mut self) {
        self.separate();
        self.out.push(b'[');
        self.stack.push(false);
    }

    pub fn end_array(&mut self) {
        self.stack.pop();
        self.out.push(b']');
    }

    /// An object key that is a string (bean property or `Map<String,_>` key).
    pub fn key(&mut self, k: &str) {
        self.separate();
        self.quoted(k);
        self.out.push(b':');
        self.after_key = true;
    }

    /// An object key of a `Map<Long,_>`/`Map<Integer,_>`: bare in the default dialect, quoted in the standard one.
    pub fn int_key(&mut self, k: i64) {
        self.separate();
        match self.dialect {
            Dialect::Default => self.out.extend_from_slice(k.to_string().as_bytes()),
            Dialect::Standard => {
                self.out.push(b'"');
                self.out.extend_from_slice(k.to_string().as_bytes());
                self.out.push(b'"');
            }
        }
        self.out.push(b':');
        self.after_key = true;
    }

    pub fn string(&mut self, v: &str) {
        self.separate();
        self.quoted(v);
    }

    /// A Java `int`.
    pub fn int(&mut self, v: i32) {
        self.separate();
        self.out.extend_from_slice(v.to_string().as_bytes());
    }

    /// A Java `long` (quoted beyond ±9007199254740991 in the standard dialect).
    pub fn long(&mut self, v: i64) {
        self.separate();
        let text = v.to_string();
        if self.dialect == Dialect::Standard && !(-MAX_SAFE_LONG..=MAX_SAFE_LONG).contains(&v) {
            self.out.push(b'"');
            self.out.extend_from_slice(text.as_bytes());
            self.out.push(b'"');
        } else {
            self.out.extend_from_slice(text.as_bytes());
        }
    }

    pub fn bool(&mut self, v: bool) {
        self.separate();
        self.out.extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
    }

    /// A JSON `null` (only for echoing parsed values; beans omit nulls).
    pub fn null(&mut self) {
        self.separate();
        self.out.extend_from_slice(b"null");
    }

    /// Already-valid JSON number text, written as is.
    pub fn raw_number(&mut self, text: &str) {
        self.separate();
        self.out.extend_from_slice(text.as_bytes());
    }

    /// A quoted string with the dialect's escaping; unescaped runs are copied in one go.
    fn quoted(&mut self, s: &str) {
        self.out.push(b'"');
        let standard = self.dialect == Dialect::Standard;
        let mut run_start = 0;
        for (i, ch) in s.char_indices() {
            let short = match ch {
                '"' => Some(b'"'),
                '\\' => Some(b'\\'),
                '/' if standard => Some(b'/'),
                '\u{8}' => Some(b'b'),
                '\t' => Some(b't'),
                '\n' => Some(b'n'),
                '\u{c}' => Some(b'f'),
                '\r' => Some(b'r'),
                _ => None,
            };
            let unicode = short.is_none()
                && match ch as u32 {
                    0..=0x1F => true,
                    0x7F..=0x9F | 0x2028 | 0x2029 => true,
                    c => standard && c >= 0x7F,
                };
            if short.is_none() && !unicode {
                continue;
            }
            self.out.extend_from_slice(&s.as_bytes()[run_start..i]);
            run_start = i + ch.len_utf8();
            if let Some(c) = short {
                self.out.push(b'\\');
                self.out.push(c);
            } else {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    self.unicode_escape(*unit);
                }
            }
        }
        self.out.extend_from_slice(&s.as_bytes()[run_start..]);
        self.out.push(b'"');
    }

    fn unicode_escape(&mut self, unit: u16) {
        self.out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            self.out.push(HEX[usize::from((unit >> shift) & 0xF)]);
        }
    }
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

    // Expected strings produced by fastjson-1.2.83.jar (`JSON.toJSONString(map)` and with
    // BrowserCompatible, QuoteFieldNames, SkipTransientField, MapSortField).
    #[test]
    fn default_dialect_matches_fastjson() {
        assert_eq!(
            text(Dialect::Default, write_sample),
            "{\"i\":-2147483648,\"k/\u{4e2d}\":1,\"l\":{-1:9007199254740991,5:-9007199254740992,\
             9007199254740993:9007199254740993},\"s\":\"a/\u{4e2d}\\u0001\\u001F\\u007F\\u0085\u{a0}\u{e9}\
             \\\"\\\\\\b\\f\\n\\r\\t\\u2028\u{1F600}'<>&\"}"
        );
    }

    #[test]
    fn standard_dialect_matches_fastjson() {
        assert_eq!(
            text(Dialect::Standard, write_sample),
            r#"{"i":-2147483648,"k\/\u4E2D":1,"l":{"-1":9007199254740991,"5":"-9007199254740992","9007199254740993":"9007199254740993"},"s":"a\/\u4E2D\u0001\u001F\u007F\u0085\u00A0\u00E9\"\\\b\f\n\r\t\u2028\uD83D\uDE00'<>&"}"#
        );
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
    fn default_dialect_escapes_c1_and_line_separators_only() {
        let s = text(Dialect::Default, |w| w.string("~\u{7f}\u{80}\u{9f}\u{a0}\u{2027}\u{2028}\u{2029}\u{202a}\u{0}"));
        // fastjson 1.2.83: "~\u007F\u0080\u009F \u2028\u2029\u0000" with U+00A0, U+2027, U+202A raw.
        assert_eq!(s, "\"~\\u007F\\u0080\\u009F\u{a0}\u{2027}\\u2028\\u2029\u{202a}\\u0000\"");
    }
}
