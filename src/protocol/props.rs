//! Java properties text (`java.util.Properties` load rules and `MixAll.properties2String` output).

/// Parses properties text into (key, value) pairs in file order (later duplicates win when looked up).
pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let ascii = escape_non_ascii(text);
    let mut pairs = Vec::new();
    java_properties::PropertiesIter::new(ascii.as_bytes())
        .read_into(|k, v| pairs.push((k, v)))
        .map_err(|e| e.to_string())?;
    Ok(pairs)
}

/// The crate reads ISO-8859-1; our text is UTF-8, so non-ASCII characters are handed over as `\uXXXX` escapes,
/// which the Properties grammar turns back into the same characters. Characters outside the BMP become U+FFFD
/// (the crate rejects surrogate escapes).
fn escape_non_ascii(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut backslashes = 0usize;
    for ch in text.chars() {
        if ch.is_ascii() {
            backslashes = if ch == '\\' { backslashes + 1 } else { 0 };
            out.push(ch);
            continue;
        }
        // `\X` is X in Properties syntax, so an escaping backslash before the character is dropped.
        if backslashes % 2 == 1 {
            out.pop();
        }
        backslashes = 0;
        let unit = if u32::from(ch) > 0xFFFF { 0xFFFD } else { u32::from(ch) };
        out.push_str(&format!("\\u{unit:04X}"));
    }
    std::borrow::Cow::Owned(out)
}

/// `key=value\n` lines in the given order (callers sort), raw as Java's `MixAll.properties2String` writes them.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn java_properties_syntax() {
        let text = "# comment\n! other\n  listenPort = 9876\nkvConfigPath:/tmp/kv.json\nname value with spaces\n\
                    multi=a\\\n    b\\\n  c\nesc=tab\\there\\u0041\\\\\nempty=\n\nkey\\ with\\=sep=v\r\nzone=\u{4e2d}\\\u{6587}\n";
        assert_eq!(
            parse(text).unwrap(),
            pairs(&[
                ("listenPort", "9876"),
                ("kvConfigPath", "/tmp/kv.json"),
                ("name", "value with spaces"),
                ("multi", "abc"),
                ("esc", "tab\thereA\\"),
                ("empty", ""),
                ("key with=sep", "v"),
                ("zone", "\u{4e2d}\u{6587}"),
            ])
        );
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn write_is_raw_lines_in_order() {
        let p = pairs(&[("b", "2"), ("a", "x=y"), ("listenPort", "9876")]);
        assert_eq!(write(&p), "b=2\na=x=y\nlistenPort=9876\n");
        assert_eq!(parse(&write(&p)).unwrap(), p);
        assert_eq!(write(&[]), "");
    }
}
