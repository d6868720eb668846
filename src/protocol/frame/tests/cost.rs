//! What a header costs to decode: linear in its bytes whatever its fields (a peer chooses them, and a reactor
//! decodes them before any ACL check), and what a repeated key resolves to in each encoding.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use proptest::prelude::*;

use super::*;
use crate::protocol::command::ExtFields;

/// `n` distinct keys of `key_len` bytes (`key_len` ≥ 2 keeps 4,096+ of them distinct), each with a 1-byte value.
fn unique_fields(n: usize, key_len: usize) -> ExtFields {
    let key = |mut i: usize| {
        let mut k = String::with_capacity(key_len);
        for _ in 0..key_len {
            k.push(char::from(b'a' + (i % 26) as u8));
            i /= 26;
        }
        k
    };
    ExtFields((0..n).map(|i| (key(i), "v".to_string())).collect())
}

/// A whole frame whose header carries `ext` as written, repeats included.
fn frame_of(ext: ExtFields, serialize_type: SerializeType) -> BytesMut {
    let mut cmd = RemotingCommand::request(105, 1);
    cmd.ext_fields = Some(ext);
    cmd.serialize_type = serialize_type;
    let mut out = BytesMut::new();
    encode(&cmd, &mut out);
    out
}

/// The fastest of a few decodes of `frame`: the minimum resists a loaded machine (noise only ever adds time).
fn fastest_decode(frame: &BytesMut) -> Duration {
    (0..7)
        .map(|_| {
            let mut buf = frame.clone();
            let at = Instant::now();
            let cmd = decode(&mut buf, DEFAULT_MAX_FRAME).expect("decodes").expect("whole");
            let took = at.elapsed();
            assert!(!cmd.ext_fields.expect("ext fields").is_empty());
            took
        })
        .min()
        .expect("some runs")
}

proptest! {
    // Each case decodes a few thousand fields 14 times: a handful of cases is enough to vary the shape.
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Sixteen times the fields costs about sixteen times the time, in either encoding: a quadratic duplicate
    /// search would cost about 256 times. The bound leaves room for caches and a busy machine.
    #[test]
    fn decode_time_per_field_stays_flat_as_fields_grow(
        n in 300usize..600,
        key_len in 2usize..6,
        binary in any::<bool>(),
    ) {
        let st = if binary { SerializeType::RocketMq } else { SerializeType::Json };
        let small = fastest_decode(&frame_of(unique_fields(n, key_len), st));
        let large = fastest_decode(&frame_of(unique_fields(16 * n, key_len), st));
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
        prop_assert!(ratio < 40.0, "{st:?}: {n} fields {small:?}, {} fields {large:?}: ×{ratio:.0}", 16 * n);
    }
}

/// The largest header accepted, of the smallest distinct fields (4-byte keys, 1-byte values: about 23,800), in
/// each encoding, decodes in well under the time a quadratic search took (1.6 s and more, optimised).
#[test]
fn a_header_of_the_most_fields_decodes_fast() {
    for st in [SerializeType::RocketMq, SerializeType::Json] {
        let mut n = MAX_HEADER as usize / 11;
        let mut frame = frame_of(unique_fields(n, 4), st);
        while frame.len() - 8 > MAX_HEADER as usize {
            n -= 100;
            frame = frame_of(unique_fields(n, 4), st);
        }
        assert!(n > 20_000, "{n}");
        let took = fastest_decode(&frame);
        // Unoptimised test builds are ~10× slower than release; a quadratic search takes tens of seconds here.
        assert!(took < Duration::from_millis(500), "{st:?}: {n} fields took {took:?}");
    }
}

/// Java's `RocketMQSerializable.mapDeserialize` `put`s each pair into a `HashMap`: the last value of a key wins,
/// and a zero-length value (Java null) erases the key.
#[test]
fn binary_repeated_keys_resolve_as_java_puts_them() {
    let pairs = [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4"), ("c", ""), ("d", "5")];
    let ext = ExtFields(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let cmd = decode(&mut frame_of(ext, SerializeType::RocketMq), DEFAULT_MAX_FRAME).unwrap().unwrap();
    let got = cmd.ext_fields.unwrap();
    let got: Vec<(&str, &str)> = got.0.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(got, [("b", "2"), ("a", "3"), ("d", "5")]);
}

/// The same with many fields (found by a set, not pairwise) and many repeats of one key.
#[test]
fn many_repeats_keep_the_last_value_once() {
    for st in [SerializeType::RocketMq, SerializeType::Json] {
        let mut ext = unique_fields(100, 3);
        ext.0.extend((0..15_000).map(|i| ("dup".to_string(), i.to_string())));
        ext.0.push(("aaa".into(), "last".into()));
        let cmd = decode(&mut frame_of(ext, st), DEFAULT_MAX_FRAME).unwrap().unwrap();
        let got = cmd.ext_fields.unwrap();
        assert_eq!(got.len(), 101, "{st:?}");
        assert_eq!(got.get("dup"), Some("14999"), "{st:?}");
        assert_eq!(got.get("aaa"), Some("last"), "{st:?}");
        assert_eq!(got.0.last().map(|(k, _)| k.as_str()), Some("aaa"), "{st:?}: at its last place");
    }
}
