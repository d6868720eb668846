//! A one-pass scanner for strict JSON of a narrow shape, quicker than serde or the lenient reader's `Value` tree,
//! shared by the fast paths of the two hottest parses: the usual request header (`frame::json_fast`, decision 0009) and
//! the usual registration body (`body::scan`, decision 0019). It reads integers without fraction or exponent and
//! strings without escapes or control characters; whatever a caller does not expect makes it return `None`, and that
//! caller's input goes to the lenient reader (`read`), so no answer ever depends on which path read it.

/// Over UTF-8 text: strings are cut at ASCII quotes, so every slice it hands out is UTF-8 without another check.
pub(crate) struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner { text, at: 0 }
    }

    /// The text's bytes, for scanning (slices handed out come from `text`).
    #[inline]
    fn b(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The offset of the next byte.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// Bytes not read yet.
    pub(crate) fn left(&self) -> usize {
        self.b().len() - self.at
    }

    /// Only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.at == self.b().len()
    }

    /// JSON whitespace.
    #[inline]
    pub(crate) fn ws(&mut self) {
        while matches!(self.b().get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    #[inline]
    pub(crate) fn eat(&mut self, c: u8) -> Option<()> {
        self.eat_if(c).then_some(())
    }

    #[inline]
    pub(crate) fn eat_if(&mut self, c: u8) -> bool {
        let hit = self.b().get(self.at) == Some(&c);
        self.at += usize::from(hit);
        hit
    }

    /// `word` (a literal such as `null` or `true`), consumed; false (nothing consumed) for anything else.
    #[inline]
    pub(crate) fn word(&mut self, word: &str) -> bool {
        let hit = self.b()[self.at..].starts_with(word.as_bytes());
        self.at += if hit { word.len() } else { 0 };
        hit
    }

    /// `word`, consumed, or `None` (nothing consumed): for a literal that must come next.
    #[inline]
    pub(crate) fn expect_word(&mut self, word: &str) -> Option<()> {
        self.word(word).then_some(())
    }

    /// Runs `f`; when it gives `None`, puts the scanner back where it was, so another reading can start there.
    #[inline]
    pub(crate) fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let at = self.at;
        let out = f(self);
        if out.is_none() {
            self.at = at;
        }
        out
    }

    #[inline]
    pub(crate) fn null(&mut self) -> bool {
        self.word("null")
    }

    /// A string without escapes or control characters.
    #[inline]
    pub(crate) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let len = string_len(&self.b()[start..])?;
        self.at = start + len;
        self.eat(b'"')?;
        // Both ends sit next to ASCII quotes, so they are char boundaries.
        Some(&self.text[start..start + len])
    }

    /// A string or `null`.
    pub(crate) fn opt_string(&mut self) -> Option<Option<&'a str>> {
        if self.null() {
            return Some(None);
        }
        self.string().map(Some)
    }

    #[inline]
    pub(crate) fn boolean(&mut self) -> Option<bool> {
        if self.word("true") {
            Some(true)
        } else if self.word("false") {
            Some(false)
        } else {
            None
        }
    }

    /// `{`, members, `}`: `member` is called with each key, the scanner at its value, and must consume the value.
    #[inline]
    pub(crate) fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.delimited(b'{', b'}', |s| {
            let key = s.string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            member(s, key)
        })
    }

    /// `{}`.
    #[inline]
    pub(crate) fn empty_object(&mut self) -> Option<()> {
        self.object(|_, _| None)
    }

    /// `[`, items, `]`: `item` must consume each item.
    #[inline]
    pub(crate) fn array(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.delimited(b'[', b']', item)
    }

    /// `open`, items separated by commas, `close`: what an object and an array have in common.
    #[inline]
    fn delimited(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(open)?;
        self.ws();
        if self.eat_if(close) {
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            if self.eat_if(close) {
                return Some(());
            }
            self.eat(b',')?;
            self.ws();
        }
    }

    /// A JSON integer (`-?(0|[1-9][0-9]*)`, no fraction or exponent) that fits in an `i64`.
    #[inline]
    pub(crate) fn int(&mut self) -> Option<i64> {
        let start = self.at;
        self.eat_if(b'-');
        let digits = self.at;
        while self.b().get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let n = self.at - digits;
        if n == 0 || n > 19 || (n > 1 && self.b()[digits] == b'0') {
            return None;
        }
        if matches!(self.b().get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // Summed as a negative number, which has room for i64::MIN; `str::parse` took twice as long.
        let mut v: i64 = 0;
        for &c in &self.b()[digits..self.at] {
            v = v.checked_mul(10)?.checked_sub(i64::from(c - b'0'))?;
        }
        if digits > start {
            Some(v)
        } else {
            v.checked_neg()
        }
    }

    #[inline]
    pub(crate) fn int32(&mut self) -> Option<i32> {
        i32::try_from(self.int()?).ok()
    }
}

/// Bytes before the first `"`, `\\` or control character, eight at a time (strings are most of a header's and a
/// body's bytes, and a byte loop with three compares was the header scanner's hottest line). `None`: there is none.
#[inline]
fn string_len(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero, or below `n`: the lowest flagged byte is exact (higher ones may be false positives).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let mut at = 0;
    while let Some(chunk) = b.get(at..at + 8) {
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let hits = zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) | below(w, 0x20);
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b[at..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Scanner;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// The word-at-a-time search finds what a byte loop finds, wherever the stop byte sits in a word.
        #[test]
        fn string_len_is_the_byte_loop(bytes in proptest::collection::vec(
            prop_oneof![8 => 0x20u8..0x7f, 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20, 1 => 0x80u8..=0xff],
            0..40,
        )) {
            let want = bytes.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            prop_assert_eq!(super::string_len(&bytes), want);
        }

        /// Integers are read exactly where serde_json reads an `i64`, with its value — but for `-0`, which serde
        /// reads as a float and the scanner as 0, as fastjson and the lenient reader do.
        #[test]
        fn int_reads_what_serde_reads(text in "-?[0-9]{0,21}(\\.[0-9]|[eE][0-9])?") {
            let mut s = Scanner::new(&text);
            let ours = s.int().filter(|_| s.at_end());
            let serde = if text == "-0" { Some(0) } else { serde_json::from_str::<i64>(&text).ok() };
            prop_assert_eq!(ours, serde, "{}", text);
        }
    }
}
