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

/// What Java 17 `Properties.store(OutputStream, null)` wrote for these pairs (the date comment left out).
#[test]
fn store_escapes_as_java_properties_store() {
    let p = pairs(&[
        (" lead key=:#!\\\t\n\r\x0C", "  lead = : # ! \\ \t\n\r\x0C trail  "),
        ("u", "\u{e9}\u{4e2d}\u{7f}\u{85}\u{2028}\u{1F600}\u{0}\u{1f}~"),
        ("e", ""),
    ]);
    assert_eq!(
        store(&p),
        "\\ lead\\ key\\=\\:\\#\\!\\\\\\t\\n\\r\\f=\\  lead \\= \\: \\# \\! \\\\ \\t\\n\\r\\f trail  \n\
         u=\\u00E9\\u4E2D\\u007F\\u0085\\u2028\\uD83D\\uDE00\\u0000\\u001F~\n\
         e=\n"
    );
    assert!(store(&p).is_ascii());
    assert_eq!(parse(&store(&p)).unwrap(), p);
}

#[test]
fn parse_reads_characters_outside_the_bmp() {
    let smile = "\u{1F600}";
    // Escaped as `Properties.store` writes them, and raw UTF-8, escaped by a backslash or not.
    assert_eq!(parse("a=\\uD83D\\uDE00\n").unwrap(), pairs(&[("a", smile)]));
    assert_eq!(parse("a=\\ud83d\\ude00x\n").unwrap(), pairs(&[("a", "\u{1F600}x")]));
    assert_eq!(
        parse(&format!("a={smile}\n\\{smile}k=\\{smile}")).unwrap(),
        pairs(&[("a", smile), ("\u{1F600}k", smile)])
    );
    // An escaped backslash is no escape: the text `\uD83D` stays text.
    assert_eq!(parse("a=\\\\uD83D\n").unwrap(), pairs(&[("a", "\\uD83D")]));
    // A lone half cannot be held by a Rust string (Java keeps it).
    assert!(parse("a=\\uD83D\n").is_err());
    assert!(parse("a=\\uDE00\\uD83D\n").is_err());
    // A leading U+FEFF is a character of the first key, as in Java, not a byte-order mark.
    assert_eq!(parse("\u{feff}k=v").unwrap(), pairs(&[("\u{feff}k", "v")]));
}

#[test]
fn control_characters() {
    for ch in ['\0', '\t', '\n', '\r', '\x1f', '\x7f', '\u{85}', '\u{9b}', '\u{2028}', '\u{2029}'] {
        assert!(is_control(ch), "{ch:?}");
    }
    for ch in [' ', '~', '\u{a0}', '\u{e9}', '\u{4e2d}', '\u{1F600}', '\u{feff}'] {
        assert!(!is_control(ch), "{ch:?}");
    }
}

proptest::proptest! {
    /// Whatever the pairs hold, the stored text is ASCII and reads back to the same pairs.
    #[test]
    fn store_then_parse_is_the_identity(
        list in proptest::collection::vec((proptest::prelude::any::<String>(), proptest::prelude::any::<String>()), 0..6)
    ) {
        let text = store(&list);
        proptest::prop_assert!(text.is_ascii());
        proptest::prop_assert_eq!(parse(&text).ok(), Some(list));
    }
}
