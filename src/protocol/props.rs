//! Java properties text (`java.util.Properties` load rules, `MixAll.properties2String` output, and
//! `Properties.store` escaping).

use std::borrow::Cow;

/// Text the properties grammar refuses (a lone surrogate escape, a malformed `\u` escape), with the reader's words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PropsError(#[source] java_properties::PropertiesError);

/// Parses properties text into (key, value) pairs in file order (later duplicates win when looked up).
pub fn parse(text: &str) -> Result<Vec<(String, String)>, PropsError> {
    let prepared = prepare(text);
    let mut pairs = Vec::new();
    // UTF-8: `prepare` leaves only ASCII and characters outside the BMP, and never a leading BOM (U+FEFF is escaped),
    // so the decoder's BOM sniffing cannot eat a character.
    java_properties::PropertiesIter::new_with_encoding(prepared.as_bytes(), encoding_rs::UTF_8)
        .read_into(|k, v| pairs.push((k, v)))
        .map_err(PropsError)?;
    Ok(pairs)
}

/// Makes the text readable by the `java-properties` crate with Java's result:
/// - BMP characters outside ASCII become `\uXXXX` escapes, which the Properties grammar turns back into the same
///   characters (a leading U+FEFF stays a character, as in Java, instead of being taken for a BOM);
/// - an escaped surrogate pair (`\uD83D\uDE00`, what `Properties.store` writes for a character outside the BMP)
///   becomes that character: the crate refuses surrogate escapes, Java joins the two halves.
///
/// Characters outside the BMP are left as they are: no `\u` escape can carry them. A lone surrogate escape stays an
/// error (Java keeps an unpaired half, which a Rust string cannot hold).
fn prepare(text: &str) -> Cow<'_, str> {
    if text.is_ascii() && !text.contains("\\u") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    // Backslashes just before the current position: an odd count means the current character is escaped.
    let mut backslashes = 0usize;
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if ch == '\\' && backslashes.is_multiple_of(2) {
            if let Some((pair, used)) = surrogate_pair_escape(rest) {
                out.push(pair);
                rest = &rest[used..];
                backslashes = 0;
                continue;
            }
        }
        rest = &rest[ch.len_utf8()..];
        if ch.is_ascii() {
            backslashes = if ch == '\\' { backslashes + 1 } else { 0 };
            out.push(ch);
            continue;
        }
        if u32::from(ch) > 0xFFFF {
            // `\X` is X for the crate as for Java: an escaping backslash in front may stay.
            backslashes = 0;
            out.push(ch);
            continue;
        }
        // `\X` is X in Properties syntax, so an escaping backslash before the character is dropped.
        if backslashes % 2 == 1 {
            out.pop();
        }
        backslashes = 0;
        push_unit_escape(&mut out, u32::from(ch) as u16);
    }
    Cow::Owned(out)
}

/// `\uHHHH\uLLLL` at the start of `s` with a high then a low surrogate: the character and the bytes it took.
fn surrogate_pair_escape(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let esc = b.get(at..at + 6)?;
        if esc[0] != b'\\' || esc[1] != b'u' || !esc[2..].iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        // Six ASCII bytes: the slice is on character boundaries.
        u16::from_str_radix(&s[at + 2..at + 6], 16).ok()
    };
    let high = unit(0).filter(|u| (0xD800..0xDC00).contains(u))?;
    let low = unit(6).filter(|u| (0xDC00..0xE000).contains(u))?;
    let ch = char::decode_utf16([high, low]).next()?.ok()?;
    Some((ch, 12))
}

fn push_unit_escape(out: &mut String, unit: u16) {
    out.push_str(&format!("\\u{unit:04X}"));
}

/// `key=value\n` lines in the given order (callers sort), raw as Java's `MixAll.properties2String` writes them.
/// What GET_NAMESRV_CONFIG answers (byte for byte Java's); never used for a file, where a raw line break in a value
/// would become a line of its own (`store` is for files).
pub fn write(pairs: &[(String, String)]) -> String {
    let mut out = String::with_capacity(pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum());
    for (k, v) in pairs {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    }
    out
}

/// `key=value\n` lines in the given order, escaped as `java.util.Properties.store(OutputStream, …)` escapes them
/// (`saveConvert` with `escUnicode`), without its date comment: `parse` (and Java's `Properties.load`) reads back
/// exactly these pairs, whatever characters they hold, and the text is ASCII. For files.
pub fn store(pairs: &[(String, String)]) -> String {
    let mut out = String::with_capacity(pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum());
    for (k, v) in pairs {
        save_convert(&mut out, k, true);
        out.push('=');
        save_convert(&mut out, v, false);
        out.push('\n');
    }
    out
}

/// Java's `Properties.saveConvert`: `\ = : # !` and backslash escaped; tab, LF, CR and FF as `\t \n \r \f`; spaces
/// escaped everywhere in a key, only in first place in a value (where `load` would skip them); every other UTF-16
/// unit below 0x20 or above 0x7E as `\uXXXX` (upper-case hex; a surrogate pair outside the BMP).
fn save_convert(out: &mut String, text: &str, escape_space: bool) {
    for (i, ch) in text.chars().enumerate() {
        match ch {
            ' ' => {
                if i == 0 || escape_space {
                    out.push('\\');
                }
                out.push(' ');
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0C' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            '\x20'..='\x7E' => out.push(ch),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    push_unit_escape(out, *unit);
                }
            }
        }
    }
}

/// A character that could end a line or steer a terminal in a properties file or a log: C0 and C1 controls
/// (U+0000–U+001F, U+007F–U+009F, which include NEL U+0085) and the Unicode line and paragraph separators.
pub(crate) fn is_control(ch: char) -> bool {
    ch.is_control() || ch == '\u{2028}' || ch == '\u{2029}'
}

#[cfg(test)]
mod tests;
