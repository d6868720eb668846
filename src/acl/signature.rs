//! The request signature of RocketMQ's `AclClientRPCHook`, as the server recomputes it: every ext field except
//! `Signature`, sorted by key the way Java's `TreeMap<String, _>` sorts (UTF-16 code units), the values alone
//! concatenated as UTF-8, then the body; HMAC-SHA1 with the secret key; standard Base64. The comparison is in
//! constant time. The HMAC, SHA-1 and Base64 come from the RustCrypto and base64 crates.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

use crate::protocol::ExtFields;

/// The ext field carrying the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// The ext field carrying the signature.
pub const SIGNATURE: &str = "Signature";

/// An HMAC-SHA1 keyed with one account's secret. Keying hashes the padded key twice; an account keeps its keyed
/// state and each request clones it, which saves more than a quarter of a signature (`cargo bench --bench codec --
/// acl`; the numbers: perf/results/2026-12-01-acl.md).
#[derive(Clone)]
pub struct Key(Hmac<Sha1>);

impl Key {
    pub fn new(secret: &[u8]) -> Key {
        Key(<Hmac<Sha1> as Mac>::new_from_slice(secret).expect("HMAC takes a key of any length"))
    }

    /// The Base64 HMAC-SHA1 of a request's ext fields and body, as `AclClientRPCHook` puts it in `Signature`.
    pub fn sign(&self, ext: &ExtFields, body: &[u8]) -> String {
        let mut mac = self.0.clone();
        feed(&mut mac, ext, body);
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }

    /// Does `signature` (as received) sign `ext` and `body`? Constant time in the signature's bytes.
    pub fn verify(&self, ext: &ExtFields, body: &[u8], signature: &str) -> bool {
        let expected = self.sign(ext, body);
        expected.len() == signature.len() && bool::from(expected.as_bytes().ct_eq(signature.as_bytes()))
    }
}

/// The signature of `ext` and `body` with `secret` (clients, tests and the perf harness sign with this).
pub fn sign(ext: &ExtFields, body: &[u8], secret: &[u8]) -> String {
    Key::new(secret).sign(ext, body)
}

/// Does `signature` sign `ext` and `body` with `secret`?
pub fn verify(ext: &ExtFields, body: &[u8], secret: &[u8], signature: &str) -> bool {
    Key::new(secret).verify(ext, body, signature)
}

/// Feeds the signed content: Java's `AclUtils.combineRequestContent` over the map the server builds from the ext
/// fields (a repeated key counts once, the last one: Java decodes ext fields into a `HashMap`). Decoded ext fields
/// hold no repeats any more; fields built by hand (a client, a test) may.
/// Sorted first, then of each run of one key the last is kept: O(n log n) in the fields, which a peer chooses and
/// which are checked before anything else of its request.
fn feed(mac: &mut Hmac<Sha1>, ext: &ExtFields, body: &[u8]) {
    let mut fields: Vec<(&str, &str)> =
        ext.0.iter().filter(|(k, _)| k != SIGNATURE).map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // Stable: a repeated key's occurrences stay in arrival order, so the last of a run is the last one sent.
    fields.sort_by(|(a, _), (b, _)| java_order(a, b));
    for (i, (k, v)) in fields.iter().enumerate() {
        if fields.get(i + 1).is_none_or(|(next, _)| next != k) {
            mac.update(v.as_bytes());
        }
    }
    mac.update(body);
}

/// `String.compareTo`: by UTF-16 code units. Differs from byte order only where a key mixes characters above
/// U+FFFF with ones in U+E000..U+FFFF; ASCII keys compare the same either way, so the fast path is bytes.
fn java_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        ExtFields(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    /// Computed independently with Python's hmac/hashlib/base64 over the same concatenation
    /// ("rocketmq2" + "TopicTest" + body; keys sorted AccessKey < topic).
    #[test]
    fn known_answer() {
        let e = ext(&[("topic", "TopicTest"), ("AccessKey", "rocketmq2")]);
        assert_eq!(sign(&e, b"body", b"12345678"), "nkCYtxv6V9aq6Z98xdLAuokushs=");
    }

    #[test]
    fn order_signature_field_and_repeats() {
        let a = ext(&[("b", "2"), ("a", "1"), (SIGNATURE, "ignored"), ("AccessKey", "k")]);
        let b = ext(&[("AccessKey", "k"), ("a", "1"), ("b", "2")]);
        assert_eq!(sign(&a, b"", b"s"), sign(&b, b"", b"s"));
        // A repeated key: the last value is the one signed.
        let repeated = ext(&[("a", "0"), ("AccessKey", "k"), ("a", "1"), ("b", "2")]);
        assert_eq!(sign(&repeated, b"", b"s"), sign(&b, b"", b"s"));
        let sig = sign(&b, b"x", b"s");
        assert!(verify(&b, b"x", b"s", &sig));
        assert!(!verify(&b, b"y", b"s", &sig), "the body is signed");
        assert!(!verify(&b, b"x", b"t", &sig), "another secret");
        assert!(!verify(&b, b"x", b"s", &sig[1..]), "a shorter signature");
    }

    /// Thousands of fields, many repeated: signed as their last values, and in O(n log n) (a pairwise search for
    /// repeats took seconds here).
    #[test]
    fn many_fields_sign_as_their_deduplicated_map() {
        let unique: Vec<(String, String)> = (0..20_000).map(|i| (format!("k{i:05}"), i.to_string())).collect();
        let mut repeated: Vec<(String, String)> = unique.iter().map(|(k, _)| (k.clone(), "old".into())).collect();
        repeated.extend(unique.iter().cloned());
        let started = std::time::Instant::now();
        let sig = sign(&ExtFields(repeated), b"", b"s");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        assert_eq!(sig, sign(&ExtFields(unique), b"", b"s"));
    }

    #[test]
    fn utf16_order_differs_from_utf8_order_where_java_says() {
        // U+FF5E (one UTF-16 unit, 0xFF5E) sorts after U+1F600 (surrogates 0xD83D…) in Java, before it in UTF-8.
        assert_eq!(java_order("\u{FF5E}", "\u{1F600}"), std::cmp::Ordering::Greater);
        assert_eq!("\u{FF5E}".cmp("\u{1F600}"), std::cmp::Ordering::Less);
    }
}
