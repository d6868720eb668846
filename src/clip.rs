//! Peer-chosen text cut to a bound before it is echoed in a remark, a log line or an audit line. An access key,
//! a topic or a broker name can be as long as a frame (`maxFrameLength`): copied whole, every refusal would write
//! what the peer sent twice over (remark and audit line), and a flood of junk requests would fill the disk faster
//! than it arrives. A cut string says how much was cut, so the line still shows that the text was long.
//!
//! Depends on nothing in the crate, so that any module (acl, audit, handlers, reactor) can use it without an
//! import circle.

use std::borrow::Cow;

/// An `AccessKey` shown in a remark or an audit line. Real keys are short (RocketMQ's are under 32 characters).
pub(crate) const ACCESS_KEY_CHARS: usize = 64;

/// Any other name a peer chose, shown as a fact of an audit line or in a remark: topic (Java allows up to 127
/// characters), broker, cluster, namespace, KV key, config keys.
pub(crate) const NAME_CHARS: usize = 128;

/// A whole remark in a log or audit line (it may quote one or more of the names above).
pub(crate) const REMARK_CHARS: usize = 512;

/// `text` if it has at most `max_chars` characters; otherwise its first `max_chars` characters (cut on a character
/// boundary) followed by `…(+N chars)`, N being the characters left out.
pub(crate) fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => {
            let left_out = text[end..].chars().count();
            Cow::Owned(format!("{}…(+{left_out} chars)", &text[..end]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn short_text_is_kept_as_is_and_long_text_says_how_much_was_cut() {
        assert!(matches!(clip("reader01", 64), std::borrow::Cow::Borrowed("reader01")));
        assert_eq!(clip("", 0), "");
        assert_eq!(clip("abcd", 4), "abcd", "exactly the bound is kept whole");
        assert_eq!(clip("abcdef", 4), "abcd…(+2 chars)");
        let long = "k".repeat(1024);
        assert_eq!(clip(&long, 64), format!("{}…(+960 chars)", "k".repeat(64)));
    }

    #[test]
    fn cuts_on_character_boundaries_and_counts_characters() {
        // Two-, three- and four-byte characters: a byte-based cut would split one (and panic on the slice).
        assert_eq!(clip("éééé", 2), "éé…(+2 chars)");
        assert_eq!(clip("日本語テキスト", 3), "日本語…(+4 chars)");
        assert_eq!(clip("🦀🦀🦀", 1), "🦀…(+2 chars)");
    }
}
