//! The topic map's key: the name, with its first 16 bytes kept inline as two integers.
//!
//! A descent of the topic map compares the wanted name with ~6 keys per node. With the key a bare `Arc<str>`, each
//! compare follows a pointer to a string stored elsewhere and calls `memcmp`: half the writer's time in a cold load
//! (decision 0020). Ordered by the inline head first, most compares are two integer compares on the node's own
//! cache lines; only names that share their first 16 bytes compare the strings. The order is still the names' own,
//! so lookups by `&str` work too, and the read path keeps using them: a hash order would scatter a broker's topics
//! over every leaf, and each registration would copy nearly all of them (decision 0018).
//!
//! A decoded `TopicConfig` carries its topic's key, built on the decoder thread while the name is in its cache: the
//! writer then finds a known topic without reading the name or touching its count (decision 0022).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A topic name ordered as the name (byte-wise), compared by its inline head first.
#[derive(Clone, Debug)]
pub struct TopicKey {
    /// The first 16 bytes, zero-padded, big-endian: ordering heads orders names, because padding with the smallest
    /// byte keeps a prefix before its extensions. Equal heads say nothing, then the names decide.
    head: [u64; 2],
    name: Arc<str>,
}

impl TopicKey {
    pub(crate) fn new(name: Arc<str>) -> TopicKey {
        TopicKey { head: head(&name), name }
    }

    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }
}

fn head(name: &str) -> [u64; 2] {
    let mut bytes = [0u8; HEAD];
    let n = name.len().min(HEAD);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    let (a, b) = bytes.split_at(8);
    [u64::from_be_bytes(a.try_into().expect("8")), u64::from_be_bytes(b.try_into().expect("8"))]
}

impl Ord for TopicKey {
    fn cmp(&self, other: &TopicKey) -> Ordering {
        self.head.cmp(&other.head).then_with(|| self.rest_cmp(other))
    }
}

impl TopicKey {
    /// The order of two names with equal heads, without comparing their first 16 bytes again. If either name is at
    /// most 16 bytes long, it is a prefix of the other (the padding it shows in the head is the other's bytes), so
    /// the shorter comes first: a lookup that ends on its own key makes no string compare at all.
    #[inline]
    fn rest_cmp(&self, other: &TopicKey) -> Ordering {
        let (a, b) = (self.name.as_bytes(), other.name.as_bytes());
        if a.len().min(b.len()) <= HEAD {
            a.len().cmp(&b.len())
        } else {
            a[HEAD..].cmp(&b[HEAD..])
        }
    }
}

/// How many leading bytes the head holds.
const HEAD: usize = 16;

impl PartialOrd for TopicKey {
    fn partial_cmp(&self, other: &TopicKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TopicKey {
    fn eq(&self, other: &TopicKey) -> bool {
        self.head == other.head && self.rest_cmp(other) == Ordering::Equal
    }
}

impl Eq for TopicKey {}

/// Lookups by name: consistent with `Ord`, since the head's order is the name's.
impl Borrow<str> for TopicKey {
    fn borrow(&self) -> &str {
        &self.name
    }
}

/// Hashes as the name, as `Borrow<str>` requires.
impl Hash for TopicKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.name).hash(state);
    }
}

/// The name, wherever a `&str` will do.
impl Deref for TopicKey {
    type Target = str;
    fn deref(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for TopicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl From<Arc<str>> for TopicKey {
    fn from(name: Arc<str>) -> TopicKey {
        TopicKey::new(name)
    }
}

impl From<&str> for TopicKey {
    fn from(name: &str) -> TopicKey {
        TopicKey::new(Arc::from(name))
    }
}

impl From<String> for TopicKey {
    fn from(name: String) -> TopicKey {
        TopicKey::new(Arc::from(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(s: &str) -> TopicKey {
        TopicKey::new(Arc::from(s))
    }

    #[test]
    fn prefixes_and_zero_bytes_order_as_the_names() {
        let names = [
            "",
            "\0",
            "a",
            "a\0",
            "a\0\0",
            "ab",
            "perf-topic-00001",
            "perf-topic-000010",
            "perf-topic-00001\0",
            "perf-topic-00001\0\0",
            "perf-topic-00001\0a",
            "perf-topic-000011",
            "perf-topic-00002",
        ];
        for a in names {
            for b in names {
                assert_eq!(key(a).cmp(&key(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(key(a) == key(b), a == b);
            }
        }
    }

    proptest! {
        #[test]
        fn orders_as_the_names(a in "[a-c\\x00]{0,20}", b in "[a-c\\x00]{0,20}") {
            prop_assert_eq!(key(&a).cmp(&key(&b)), a.cmp(&b));
            prop_assert_eq!(key(&a) == key(&b), a == b);
        }

        #[test]
        fn orders_any_text_as_the_names(a in ".{0,24}", b in ".{0,24}") {
            prop_assert_eq!(key(&a).cmp(&key(&b)), a.cmp(&b));
        }

        /// Names sharing their first 16 bytes, the case the head cannot decide.
        #[test]
        fn orders_names_with_one_head_as_the_names(a in "[a\\x00]{0,4}", b in "[a\\x00]{0,4}") {
            let (a, b) = (format!("perf-topic-00001{a}"), format!("perf-topic-00001{b}"));
            prop_assert_eq!(key(&a).cmp(&key(&b)), a.cmp(&b));
            prop_assert_eq!(key(&a) == key(&b), a == b);
        }
    }
}
